"""HdrHistogram queries in bulk: the same answers as the `hdrh` package, from numpy.

`hdrh` answers each percentile (and the mean) by walking every one of the histogram's
~20,000 count slots in Python, so a run's summary spent longer in those walks than a
short simulation took. `HdrView` takes the counts once and answers with a cumulative
sum and a search; `tests/harness/test_recorder.py` checks it against `hdrh` itself.
"""

from __future__ import annotations

import numpy as np
from hdrh.histogram import HdrHistogram


def bit_length(values: np.ndarray) -> np.ndarray:
    """Bit length of each non-negative int64 below 2**53 (exact via frexp)."""
    return np.frexp(values.astype(np.float64))[1].astype(np.int64)


class HdrView:
    """A read-only snapshot of one histogram's counts, for queries."""

    def __init__(self, hist: HdrHistogram) -> None:
        self.total = int(hist.get_total_count())
        n = hist.counts_len
        self.counts = np.ctypeslib.as_array(hist.counts)[:n].astype(np.int64)
        self.cum = np.cumsum(self.counts)
        self._h = hist
        shcm, shc = hist.sub_bucket_half_count_magnitude, hist.sub_bucket_half_count
        index = np.arange(n, dtype=np.int64)
        bucket = (index >> shcm) - 1
        sub = (index & (shc - 1)) + shc
        low = bucket < 0
        sub[low] -= shc
        bucket[low] = 0
        self.value = sub << (bucket + hist.unit_magnitude)   # hdrh's get_value_from_index

    def _equivalents(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest equivalent, size of the equivalent range) of each value, as hdrh computes them."""
        h = self._h
        bucket = bit_length(value | h.sub_bucket_mask) - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
        sub = value >> (bucket + h.unit_magnitude)
        lowest = sub << (bucket + h.unit_magnitude)
        size = np.left_shift(1, h.unit_magnitude + bucket + (sub >= h.sub_bucket_count))
        return lowest, size

    def values_at_percentiles(self, percentiles: list[float]) -> dict[float, int]:
        """hdrh's `get_percentile_to_value_dict`: each percentile's value (percentiles
        over 100, and any beyond the recorded count, e.g. in an empty histogram, left out)."""
        ps = sorted({p for p in percentiles if p <= 100})
        if not ps:
            return {}
        target = np.maximum((np.array(ps) * self.total / 100 + 0.5).astype(np.int64), 1)
        at = np.searchsorted(self.cum, target, side="left")
        found = at < len(self.cum)
        value = self.value[np.minimum(at, len(self.cum) - 1)]
        lowest, size = self._equivalents(value)
        out = np.where(np.array(ps) > 0, lowest + size - 1, lowest)
        return {p: int(v) for p, v, ok in zip(ps, out.tolist(), found.tolist()) if ok}

    def value_at_percentile(self, percentile: float) -> int:
        """hdrh's `get_value_at_percentile` (0 when nothing was recorded)."""
        p = min(percentile, 100.0)
        return self.values_at_percentiles([p]).get(p, 0)

    def mean(self) -> float:
        """hdrh's `get_mean_value`: each slot's count at its median-equivalent value."""
        if not self.total:
            return 0.0
        nz = np.nonzero(self.counts)[0]
        lowest, size = self._equivalents(self.value[nz])
        return float(int(np.sum(self.counts[nz] * (lowest + (size >> 1))))) / self.total
