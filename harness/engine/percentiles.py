"""A percentile of an array of latencies as the summaries quote it (HdrHistogram's rank)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["percentile_of"]


def percentile_of(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile (rank ceil(q n), as HdrHistogram's) or None: no values, or an infinite one."""
    if len(values) == 0:
        return None
    return _finite(float(np.percentile(values, q, method="higher")))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
