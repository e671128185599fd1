"""A GPU cost table: median batch seconds over a (batch size x input length) grid.

Sim mode's calibrated cost model (``cost_model = "table"``). ``harness.live.profile``
measures a real torch model into one; this module only holds the table, its
interpolation and its file format, so a simulation that reads a table never imports torch.

``CostTable.seconds(batch, length)`` interpolates the grid linearly and extrapolates
linearly beyond it. Batch time is only piecewise affine in batch size (batch 1 sits below
the line; per-sample cost rises at large batches), which is why this is a table and not a
``t0 + k*b`` fit.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CostPoint", "CostTable"]

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
        rows: list[int | None] = [*lengths] or [None]  # one grid row per length; one row without
        for length in rows:
            missing = [b for b in batches if (b, length) not in keyed]
            if missing:
                raise ValueError(f"points are not a full grid: length {length} lacks "
                                 f"batch sizes {missing}")
        ordered = tuple(sorted(points, key=lambda p: (p.length or 0, p.batch)))
        object.__setattr__(self, "points", ordered)
        object.__setattr__(self, "_batches", tuple(float(b) for b in batches))
        object.__setattr__(self, "_lengths", tuple(float(n) for n in lengths) or None)
        object.__setattr__(self, "_grid", tuple(
            tuple(keyed[(b, length)] for b in batches) for length in rows))
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
