"""Profile a real torch model into a ``CostTable``: sim mode's calibrated GPU cost model.

``profile_model`` measures the median wall time of one batch (the executor's
``compute_s``: collate + forward + synchronise + copy back, see
``targets.gpu.executor.measure_batch``) over a grid of batch sizes and, for sequence
models, input lengths. The table itself, its interpolation and its JSON format live in
``targets.cost_table``, which imports no torch: a sim reads tables, only profiling needs
a model.

Noise: one point is measured in rounds of ``repeats`` batches until the median of all its
timings moves less than ``stable_within`` (5%) from one round to the next, or
``max_rounds`` have run (``settle``). Batch time should not fall as the batch grows;
where it does by more than the noise allowed, both points are measured again once with
more rounds, and what still falls is reported (``shape_warnings``): a table that says
batch 64 is faster than batch 32 makes a sim that prefers big batches for no reason.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from targets.cost_table import CostPoint, CostTable
from targets.gpu.executor import describe_device, measure_batch, resolve_device, torch_threads, torch_version
from targets.gpu.models import create_model

# CostPoint and CostTable are re-exported for callers that still import them from here.
__all__ = ["DEFAULT_BATCH_SIZES", "DEFAULT_LENGTHS", "CostPoint", "CostTable", "Profile", "Settled",
           "profile", "profile_model", "settle", "shape_warnings"]

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: Token lengths profiled for sequence models when none are given.
DEFAULT_LENGTHS: tuple[int, ...] = (16, 32, 64, 128)
MAX_ROUNDS = 5        # rounds of `repeats` batches at most per point
STABLE_WITHIN = 0.05  # a median that moves less than this (relative) between rounds is stable


@dataclass(frozen=True)
class Settled:
    """A point's median seconds, the rounds it took, and whether it settled."""

    seconds: float
    rounds: int
    stable: bool
    spread: float  # the median's last relative move


def settle(measure: Callable[[], float], repeats: int, max_rounds: int = MAX_ROUNDS,
           within: float = STABLE_WITHIN) -> Settled:
    """Call `measure` in rounds of `repeats` until the median of every timing so far moves
    less than `within` (relative) between rounds, or `max_rounds` rounds ran."""
    times: list[float] = []
    median = move = 0.0
    for rounds in range(1, max_rounds + 1):
        times += [measure() for _ in range(repeats)]
        new = statistics.median(times)
        if rounds > 1:
            move = abs(new - median) / new if new > 0 else 0.0
            if move < within:
                return Settled(new, rounds, True, move)
        median = new
    return Settled(median, max_rounds, max_rounds == 1, move)


def falls(points: Sequence[CostPoint], tolerance: float = STABLE_WITHIN) -> list[tuple[CostPoint, CostPoint]]:
    """(smaller, larger) pairs of neighbouring batch sizes at one length where the larger
    batch took less time than the smaller one by more than `tolerance` (relative)."""
    out = []
    by_length: dict[int | None, list[CostPoint]] = {}
    for p in points:
        by_length.setdefault(p.length, []).append(p)
    for row in by_length.values():
        row = sorted(row, key=lambda p: p.batch)
        out += [(a, b) for a, b in zip(row, row[1:]) if b.seconds < a.seconds * (1 - tolerance)]
    return out


def shape_warnings(points: Sequence[CostPoint], tolerance: float = STABLE_WITHIN) -> list[str]:
    """One line per neighbouring pair where batch time falls as the batch grows."""
    def at(p: CostPoint) -> str:
        return f"batch {p.batch}" + ("" if p.length is None else f" x {p.length} tokens")
    return [f"{at(b)} took {b.seconds * 1000:.3g} ms, less than {at(a)} ({a.seconds * 1000:.3g} ms): batch time "
            "should not fall as the batch grows (noise, or a kernel switch); check the machine is idle"
            for a, b in falls(points, tolerance)]


@dataclass(frozen=True)
class Profile:
    """A profile's table, and what a user should know about it."""

    table: CostTable
    rounds: dict[tuple[int, int | None], int]
    unstable: tuple[str, ...]   # points whose median never settled
    warnings: tuple[str, ...]   # batch time falling as the batch grows


def profile_model(model_name: str, device: str = "cpu",
                  batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                  lengths: Sequence[int] | None = None, repeats: int = 5, warmup: int = 2,
                  *, threads: int | None = None, seed: int = 0,
                  progress: Callable[[CostPoint], None] | None = None,
                  max_rounds: int = MAX_ROUNDS, stable_within: float = STABLE_WITHIN) -> CostTable:
    """The cost table of `profile(...)` (same arguments)."""
    return profile(model_name, device, batch_sizes, lengths, repeats, warmup, threads=threads, seed=seed,
                   progress=progress, max_rounds=max_rounds, stable_within=stable_within).table


def profile(model_name: str, device: str = "cpu",
            batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
            lengths: Sequence[int | None] | None = None, repeats: int = 5, warmup: int = 2,
            *, threads: int | None = None, seed: int = 0,
            progress: Callable[[CostPoint], None] | None = None,
            max_rounds: int = MAX_ROUNDS, stable_within: float = STABLE_WITHIN) -> Profile:
    """Measure median batch seconds of ``model_name`` on ``device`` over a grid.

    Each point runs ``warmup`` untimed batches, then rounds of ``repeats`` timed batches of
    identical synthetic inputs until its median settles (``settle``), all of exactly
    ``length`` tokens for sequence models (so padding is nil and length is the padded
    length). ``lengths`` defaults to ``DEFAULT_LENGTHS`` (capped at the model's
    max_length) for sequence models and must be None otherwise. ``threads`` sets torch's
    intra-op threads for the run (restored afterwards). ``progress`` is called with each
    point as it is first measured. Points where batch time falls as the batch grows are
    measured again with twice the rounds before they are reported in ``warnings``.
    """
    if repeats < 1 or warmup < 0 or max_rounds < 1 or not stable_within > 0:
        raise ValueError(f"need repeats >= 1, warmup >= 0, max_rounds >= 1 and stable_within > 0, got "
                         f"{repeats}, {warmup}, {max_rounds}, {stable_within}")
    if not batch_sizes or any(b < 1 for b in batch_sizes):
        raise ValueError(f"batch_sizes must be non-empty ints >= 1, got {batch_sizes}")
    dev = resolve_device(device)
    handle = create_model(model_name, seed=seed, device=dev)
    grid_lengths: Iterable[int | None]
    if handle.variable_length:
        cap = handle.max_length or 0
        grid_lengths = tuple(lengths) if lengths is not None else tuple(
            n for n in DEFAULT_LENGTHS if n <= cap)
        bad = [n for n in grid_lengths if n is None or not 1 <= n <= cap]
        if bad or not grid_lengths:
            raise ValueError(f"lengths must be non-empty, in 1..{cap}; got {lengths}")
    elif lengths is not None and tuple(lengths) != (None,):
        raise ValueError(f"model {model_name!r} has fixed-shape inputs; lengths must be None")
    else:
        grid_lengths = (None,)

    rng = random.Random(seed)
    previous_threads = torch_threads()
    used_threads = torch_threads(threads)
    try:
        inputs = {(b, n): [handle.synthetic_input(rng, n) for _ in range(b)]
                  for n in grid_lengths for b in batch_sizes}

        def measure(key: tuple[int, int | None], rounds: int) -> Settled:
            batch = inputs[key]
            for _ in range(warmup):
                measure_batch(handle, batch)
            return settle(lambda: measure_batch(handle, batch)[2], repeats, rounds, stable_within)

        settled: dict[tuple[int, int | None], Settled] = {}
        for key in inputs:
            settled[key] = measure(key, max_rounds)
            if progress is not None:
                progress(CostPoint(key[0], key[1], settled[key].seconds))
        points = [CostPoint(b, n, st.seconds) for (b, n), st in settled.items()]
        again = {(p.batch, p.length) for pair in falls(points, stable_within) for p in pair}
        for key in again:  # noise is the likely cause: measure both sides once more, longer
            settled[key] = measure(key, 2 * max_rounds)
        points = [CostPoint(b, n, st.seconds) for (b, n), st in settled.items()]
    finally:
        torch_threads(previous_threads)
    table = CostTable(model_name, describe_device(dev), torch_version(), used_threads, tuple(points))
    unstable = tuple(f"batch {b}{'' if n is None else f' x {n} tokens'}: the median still moved "
                     f"{st.spread:.0%} after {st.rounds} rounds of {repeats}"
                     for (b, n), st in settled.items() if not st.stable)
    return Profile(table, {k: st.rounds for k, st in settled.items()}, unstable,
                   tuple(shape_warnings(table.points, stable_within)))
