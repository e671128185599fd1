"""Profile a real torch model into a ``CostTable``: sim mode's calibrated GPU cost model.

``profile_model`` measures the median wall time of one batch (the executor's
``compute_s``: collate + forward + synchronise + copy back, see
``targets.torch_executor.measure_batch``) over a grid of batch sizes and, for sequence
models, input lengths. ``CostTable.seconds(batch, length)`` interpolates that grid
linearly and extrapolates linearly beyond it. Batch time is only piecewise affine in batch
size (batch 1 sits below the line; per-sample cost rises at large batches), which is why
this is a table and not an ``t0 + k*b`` fit.

JSON format (``to_json`` / ``from_json``)::

    {"model": "transformer", "device": "cpu", "torch": "2.13.0+cpu", "threads": 2,
     "points": [{"batch": 1, "length": 16, "seconds": 0.0021}, ...]}

``length`` is ``null`` for fixed-shape models. Points of a sequence model must form a full
grid (every batch size at every length).
"""

from __future__ import annotations

import bisect
import json
import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from targets.models import create_model
from targets.torch_executor import measure_batch, resolve_device

__all__ = ["DEFAULT_BATCH_SIZES", "DEFAULT_LENGTHS", "CostPoint", "CostTable",
           "describe_device", "profile_model"]

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: Token lengths profiled for sequence models when none are given.
DEFAULT_LENGTHS: tuple[int, ...] = (16, 32, 64, 128)

_CACHE_LIMIT = 4096  # distinct (batch, length) queries memoised; sims reuse a handful


@dataclass(frozen=True)
class CostPoint:
    """One measurement: a batch of ``batch`` requests padded to ``length`` tokens (None for
    fixed-shape models) took ``seconds`` (median wall time)."""

    batch: int
    length: int | None
    seconds: float


def _bracket(xs: Sequence[float], x: float) -> tuple[int, float]:
    """Segment index ``j`` and weight ``w`` with x = xs[j] + w*(xs[j+1]-xs[j]); ``w`` falls
    outside [0, 1] beyond the ends, which is what makes the interpolation extrapolate."""
    j = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)
    return j, (x - xs[j]) / (xs[j + 1] - xs[j])


def _interp(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    if len(xs) == 1:
        return ys[0]  # one point gives no slope: constant
    j, w = _bracket(xs, x)
    return ys[j] + (ys[j + 1] - ys[j]) * w


@dataclass(frozen=True)
class CostTable:
    """Median batch seconds over a (batch size x length) grid, with fast lookups.

    Construction validates and sorts ``points``; ``seconds`` is bilinear inside the grid,
    linear beyond it, and never negative.
    """

    model: str
    device: str
    torch: str
    threads: int
    points: tuple[CostPoint, ...]
    # Precomputed in __post_init__ for speed: sorted axes and grid[length_index][batch_index].
    _batches: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _lengths: tuple[float, ...] | None = field(init=False, repr=False, compare=False)
    _grid: tuple[tuple[float, ...], ...] = field(init=False, repr=False, compare=False)
    _cache: dict[tuple[int, int | None], float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points = tuple(self.points)
        if not points:
            raise ValueError("a CostTable needs at least one point")
        for p in points:
            if not isinstance(p.batch, int) or isinstance(p.batch, bool) or p.batch < 1:
                raise ValueError(f"batch must be an int >= 1, got {p.batch!r}")
            if p.length is not None and (not isinstance(p.length, int) or p.length < 1):
                raise ValueError(f"length must be an int >= 1 or None, got {p.length!r}")
            if not (isinstance(p.seconds, (int, float)) and math.isfinite(p.seconds)
                    and p.seconds >= 0):
                raise ValueError(f"seconds must be finite and >= 0, got {p.seconds!r}")
        has_length = {p.length is not None for p in points}
        if len(has_length) > 1:
            raise ValueError("points mix length=None with integer lengths")
        keyed = {(p.batch, p.length): float(p.seconds) for p in points}
        if len(keyed) != len(points):
            raise ValueError("duplicate (batch, length) points")
        batches = sorted({p.batch for p in points})
        lengths = sorted({p.length for p in points if p.length is not None})
        for length in lengths or [None]:
            missing = [b for b in batches if (b, length) not in keyed]
            if missing:
                raise ValueError(f"points are not a full grid: length {length} lacks "
                                 f"batch sizes {missing}")
        ordered = tuple(sorted(points, key=lambda p: (p.length or 0, p.batch)))
        object.__setattr__(self, "points", ordered)
        object.__setattr__(self, "_batches", tuple(float(b) for b in batches))
        object.__setattr__(self, "_lengths", tuple(float(n) for n in lengths) or None)
        object.__setattr__(self, "_grid", tuple(
            tuple(keyed[(b, length)] for b in batches) for length in (lengths or [None])))
        object.__setattr__(self, "_cache", {})

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return tuple(int(b) for b in self._batches)

    @property
    def lengths(self) -> tuple[int, ...] | None:
        """Profiled token lengths; None for a table without a length axis."""
        return None if self._lengths is None else tuple(int(n) for n in self._lengths)

    def seconds(self, batch: int, length: int | None = None) -> float:
        """Predicted wall seconds for a batch of ``batch`` requests padded to ``length``.

        Linear in batch size (and length) between profiled points, linear extrapolation
        beyond them, clamped at 0. ``length`` is ignored by tables without a length axis
        and required by tables with one. Memoised: a simulation asks the same few keys.
        """
        key = (batch, length)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if self._lengths is None:
            value = _interp(self._batches, self._grid[0], batch)
        elif length is None:
            raise ValueError(f"cost table for {self.model!r} has a length axis; pass length")
        elif len(self._lengths) == 1:
            value = _interp(self._batches, self._grid[0], batch)
        else:
            i, w = _bracket(self._lengths, length)
            lo = _interp(self._batches, self._grid[i], batch)
            hi = _interp(self._batches, self._grid[i + 1], batch)
            value = lo + (hi - lo) * w
        value = max(0.0, value)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = value
        return value

    # -- serialisation -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "device": self.device, "torch": self.torch,
            "threads": self.threads,
            "points": [{"batch": p.batch, "length": p.length, "seconds": p.seconds}
                       for p in self.points],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostTable:
        """Build from the JSON format above; ``ValueError`` names a missing or bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"cost table must be a JSON object, got {type(data).__name__}")
        for key, kind in (("model", str), ("device", str), ("torch", str), ("threads", int),
                          ("points", list)):
            if key not in data:
                raise ValueError(f"cost table lacks field {key!r}")
            if not isinstance(data[key], kind):
                raise ValueError(f"cost table field {key!r} must be {kind.__name__}")
        points = []
        for i, raw in enumerate(data["points"]):
            if not isinstance(raw, dict) or not {"batch", "seconds"} <= raw.keys():
                raise ValueError(f"point {i} must be an object with batch, length, seconds")
            points.append(CostPoint(raw["batch"], raw.get("length"), raw["seconds"]))
        return cls(data["model"], data["device"], data["torch"], data["threads"],
                   tuple(points))

    def to_json(self, path: str | Path | None = None) -> str:
        """The table as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_json(cls, path: str | Path) -> CostTable:
        """Load a table written by ``to_json``."""
        return cls.from_dict(json.loads(Path(path).read_text()))


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
