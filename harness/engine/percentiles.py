"""A percentile of an array of latencies as the summaries quote it (HdrHistogram's rank)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["percentile_of"]


def percentile_of(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile (rank ceil(q n), as HdrHistogram's) or None: no values, or an infinite one.

    `np.percentile(values, q, method="higher")`, the same element by the same arithmetic (the
    index ceil((n - 1) * q / 100), a NaN anywhere making it NaN), read with one `np.partition`:
    a run's summary asks for hundreds of these (each window's p99), and np.percentile's own
    checks and dispatch cost five times the partition of a window's latencies."""
    values = np.asarray(values)
    n = len(values)
    if n == 0:
        return None
    k = math.ceil((n - 1) * (q / 100))
    if values.dtype.kind in "fc":  # (as numpy does: the largest partitioned too, NaN if any is)
        part = np.partition(values, (k, n - 1) if k < n - 1 else n - 1)
        if math.isnan(part[n - 1]):
            return None
    else:
        part = np.partition(values, k)
    return _finite(float(part[k]))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
