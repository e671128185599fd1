"""Profile a real torch model into a ``CostTable``: sim mode's calibrated GPU cost model.

``profile_model`` measures the median wall time of one batch (the executor's
``compute_s``: collate + forward + synchronise + copy back, see
``targets.torch_executor.measure_batch``) over a grid of batch sizes and, for sequence
models, input lengths. The table itself, its interpolation and its JSON format live in
``targets.cost_table``, which imports no torch: a sim reads tables, only profiling needs
a model.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Sequence

import torch

from targets.cost_table import CostPoint, CostTable
from targets.models import create_model
from targets.torch_executor import measure_batch, resolve_device

# CostPoint and CostTable are re-exported for callers that still import them from here.
__all__ = ["DEFAULT_BATCH_SIZES", "DEFAULT_LENGTHS", "CostPoint", "CostTable",
           "describe_device", "profile_model"]

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: Token lengths profiled for sequence models when none are given.
DEFAULT_LENGTHS: tuple[int, ...] = (16, 32, 64, 128)


def describe_device(device: torch.device) -> str:
    """``"cpu"``, or ``"cuda:0 (NVIDIA H200)"``: enough to tell tables' hardware apart."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return device.type


def profile_model(model_name: str, device: str = "cpu",
                  batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                  lengths: Sequence[int] | None = None, repeats: int = 5, warmup: int = 2,
                  *, threads: int | None = None, seed: int = 0,
                  progress: Callable[[CostPoint], None] | None = None) -> CostTable:
    """Measure median batch seconds of ``model_name`` on ``device`` over a grid.

    Each point runs ``warmup`` untimed then ``repeats`` timed batches of identical
    synthetic inputs, all of exactly ``length`` tokens for sequence models (so padding is
    nil and length is the padded length). ``lengths`` defaults to ``DEFAULT_LENGTHS``
    (capped at the model's max_length) for sequence models and must be None otherwise.
    ``threads`` sets torch's intra-op threads for the run (restored afterwards).
    ``progress`` is called with each point as it is measured.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    if not batch_sizes or any(b < 1 for b in batch_sizes):
        raise ValueError(f"batch_sizes must be non-empty ints >= 1, got {batch_sizes}")
    dev = resolve_device(device)
    handle = create_model(model_name, seed=seed, device=dev)
    grid_lengths: Iterable[int | None]
    if handle.variable_length:
        cap = handle.max_length or 0
        grid_lengths = tuple(lengths) if lengths is not None else tuple(
            n for n in DEFAULT_LENGTHS if n <= cap)
        bad = [n for n in grid_lengths if not 1 <= n <= cap]
        if bad or not grid_lengths:
            raise ValueError(f"lengths must be non-empty, in 1..{cap}; got {lengths}")
    elif lengths is not None and tuple(lengths) != (None,):
        raise ValueError(f"model {model_name!r} has fixed-shape inputs; lengths must be None")
    else:
        grid_lengths = (None,)

    rng = random.Random(seed)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        used_threads = torch.get_num_threads()
        points = []
        for length in grid_lengths:
            for batch in batch_sizes:
                inputs = [handle.synthetic_input(rng, length) for _ in range(batch)]
                for _ in range(warmup):
                    measure_batch(handle, inputs)
                times = [measure_batch(handle, inputs)[2] for _ in range(repeats)]
                point = CostPoint(batch, length, statistics.median(times))
                points.append(point)
                if progress is not None:
                    progress(point)
    finally:
        torch.set_num_threads(previous_threads)
    return CostTable(model_name, describe_device(dev), torch.__version__, used_threads,
                     tuple(points))
