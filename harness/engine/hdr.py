"""HdrHistogram: the run's latency histograms, built and queried in bulk: the same answers as the `hdrh` package, from numpy.

`hdrh` answers each percentile (and the mean) by walking every one of the histogram's
~20,000 count slots in Python, so a run's summary spent longer in those walks than a
short simulation took. `HdrView` takes the counts once and answers with a cumulative
sum and a search; `tests/harness/test_recorder.py` checks it against `hdrh` itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

US = 1_000_000          # histograms count microseconds
_MAX_US = 3_600 * US    # up to an hour


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


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, _MAX_US, 3)


def percentiles(hist: HdrHistogram, failures: int = 0) -> dict[str, float | None]:
    """mean, p50, p90, p99, p999, max in seconds over hist's values plus
    `failures` infinite ones."""
    ok = hist.get_total_count()
    total = ok + failures
    out: dict[str, float | None] = {}
    if total == 0:
        return {k: None for k in ("mean", "p50", "p90", "p99", "p999", "max")}
    view = HdrView(hist)
    out["mean"] = view.mean() / US if failures == 0 and ok else None
    wanted = {}
    for key, q in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)):
        rank = math.ceil(q / 100 * total)
        wanted[key] = None if rank > ok or ok == 0 else min(100.0, 100.0 * rank / ok)
    values = view.values_at_percentiles([p for p in wanted.values() if p is not None])
    for key, p in wanted.items():
        out[key] = None if p is None else values[p] / US
    out["max"] = hist.get_max_value() / US if failures == 0 and ok else None
    return out


def latency_cdf(hist: HdrHistogram, n: int) -> dict[str, Any]:
    """The latency distribution of `n` requests whose OK answers `hist` holds, compact (for
    reports' CDF charts; about 200 points whatever the run's size).

    `fraction[i]` of all `n` requests were answered successfully within `latency_s[i]` seconds
    (HdrHistogram precision, 3 significant digits, the same ranks as `percentiles`). Requests
    not answered OK have no latency, so the curve stops at `answered_fraction` (the OK share;
    a run's `outcomes` say how the rest ended); the levels are dense in the tail (0.9 ...
    0.99999 of the answered share), where p99s live.
    """
    ok = hist.get_total_count()
    out: dict[str, Any] = {"fraction": [], "latency_s": [], "requests": int(n),
                           "answered_fraction": ok / n if n else None}
    if ok == 0:
        return out
    # Scaled by the answered share, so a run that never answers 20% still
    # gets its points where its curve is, up to where it stops.
    answered = ok / n
    grid = np.concatenate([np.arange(0, 90) / 100, 1.0 - 10.0 ** -np.linspace(1.0, 5.0, 100), [1.0]])
    exact = [q for q in (0.5, 0.9, 0.99, 0.999) if q <= answered]  # the summary's own percentiles
    levels = sorted({float(q) for q in np.round(grid * answered, 9)} | set(exact))
    # Percentile within the answered requests that the all-requests rank lands on.
    pct = {q: min(100.0, 100.0 * max(1, math.ceil(q * n - 1e-9)) / ok) for q in levels}
    values = HdrView(hist).values_at_percentiles(list(pct.values()))
    out["fraction"] = [round(q, 7) for q in levels]
    out["latency_s"] = [values[pct[q]] / US for q in levels]
    return out


def histogram_of(latency_s: np.ndarray) -> HdrHistogram:
    """An HdrHistogram of `latency_s` (seconds), recorded in bulk: values are grouped by
    the histogram's own bucket (its index computed as hdrh's `_counts_index_for` does,
    vectorised), and one value per bucket is recorded with the bucket's count. Every
    query then answers exactly as if each value had been recorded on its own (a bucket's
    values are equivalent; min and max are tracked as their buckets' equivalents)."""
    hist = new_histogram()
    us = np.maximum(1, (np.asarray(latency_s, dtype=np.float64) * US).astype(np.int64))
    if len(us) == 0:
        return hist
    index = _counts_index(hist, us)
    # Each bucket's count and the first value in it (what np.unique's counts and return_index
    # gave, without its sort of every value), written into the histogram's own counters as
    # `record_value(first, count)` for each bucket in turn would: a value past the histogram's
    # range is dropped, and min and max are the first values of the lowest and highest buckets
    # (a bucket's values are all below the next bucket's). hdrh's record_value, called per
    # bucket, was a third of a short run's summary.
    counts = np.bincount(index)
    buckets = np.flatnonzero(counts[:hist.counts_len])
    if len(buckets) == 0:
        return hist
    first = np.full(len(counts), len(index), dtype=np.int64)
    np.minimum.at(first, index, np.arange(len(index), dtype=np.int64))
    slots = np.ctypeslib.as_array(hist.counts)
    slots[buckets] += counts[buckets].astype(slots.dtype)
    hist.total_count += int(counts[buckets].sum())
    ends = us[first[buckets[[0, -1]]]].tolist()
    hist.min_value = min(hist.min_value, ends[0])
    hist.max_value = max(hist.max_value, ends[1])
    return hist


def _counts_index(hist: HdrHistogram, us: np.ndarray) -> np.ndarray:
    """hdrh's `_counts_index_for` of each value (non-negative int64 below 2**53), vectorised."""
    bucket = bit_length(us | hist.sub_bucket_mask) - hist.unit_magnitude - (hist.sub_bucket_half_count_magnitude + 1)
    sub = us >> (bucket + hist.unit_magnitude)
    return ((bucket + 1) << hist.sub_bucket_half_count_magnitude) + sub - hist.sub_bucket_half_count


def record_counts(hist: HdrHistogram, values: list[int], counts: list[int]) -> None:
    """`hist.record_value(v, c)` for each value and its count, in one pass: the same counts,
    total, minimum and maximum (a negative value or one past the histogram's range is dropped,
    as record_value drops it). record_value is pure Python: one call per distinct value was a
    fifth of an LLM run."""
    if not values:
        return
    v = np.asarray(values, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    if int(v.max()) >= 1 << 53:  # beyond frexp's exact bit lengths: hdrh's own loop
        for value, count in zip(values, counts):
            hist.record_value(value, count)
        return
    index = _counts_index(hist, np.maximum(v, 0))
    keep = (v >= 0) & (index >= 0) & (index < hist.counts_len)
    if not keep.any():
        return
    v, c, index = v[keep], c[keep], index[keep]
    slots = np.ctypeslib.as_array(hist.counts)
    np.add.at(slots, index, c.astype(slots.dtype))
    hist.total_count += int(c.sum())
    hist.min_value = min(hist.min_value, int(v.min()))
    hist.max_value = max(hist.max_value, int(v.max()))
