"""Confidence over seeds: a figure's mean with its 95% interval, and the test of a difference.

Pure functions of lists of numbers (numpy and scipy.stats only); the typed results
are `harness.results.stats.Interval` and `Difference`. scipy.stats is imported where a
test is made, not with this module: it costs about 1.4 s, and every command imports this
module (`harness compare` of one seed never tests anything).

Why Student t over seeds, not the bootstrap or Wilcoxon: a seeded sweep has few
seeds (3 to 10). A percentile bootstrap of 5 values has only 126 distinct
resamples and its intervals come out too narrow (it uses the sample's spread as
if it were known, with normal rather than t quantiles); Wilcoxon's signed-rank test
on 5 pairs cannot reach p < 0.0625 two-sided, so it could never call a winner at
95% with 5 seeds. A figure of one seed is an aggregate over thousands of requests
(a share, a percentile), close to normal across seeds, which is where the t
interval is exact. Comparisons use the SAME seeds on both sides (the same
arrivals), so the paired t test on per-seed differences cancels the noise both
sides share; different seed lists fall back to Welch's t test.

None or a non-finite value is "no value" (a tail never answered): it is counted
in `missing`, and then there is no interval, rather than an interval over the
seeds that happened to answer. Differences with no spread at all (every seed
differs by exactly the same amount: deterministic figures) are certain: the
interval is that one point and the p-value 0 or 1.
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import numpy as np

from harness.results.stats import CONFIDENCE, Difference, Interval

__all__ = ["ALPHA", "difference", "interval", "seeds_from"]

ALPHA = 1 - CONFIDENCE
Alternative = Literal["two-sided", "greater", "less"]


def seeds_from(seed: int, n: int) -> list[int]:
    """The seeds of an N-seed run: seed, seed+1, ..., seed+n-1 (so --seeds 1 is --seed alone)."""
    if n < 1:
        raise ValueError(f"--seeds must be at least 1, got {n}")
    return [seed + i for i in range(n)]


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def interval(values: Sequence[float | None], confidence: float = CONFIDENCE) -> Interval:
    """The mean of `values` (one per seed) and its Student-t confidence interval."""
    n = len(values)
    missing = sum(not _finite(v) for v in values)
    if n == 0 or missing:
        return Interval(mean=None, n=n, missing=missing)
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean=mean, n=n)
    sem = float(x.std(ddof=1)) / math.sqrt(n)
    if sem == 0:
        return Interval(mean=mean, lo=mean, hi=mean, n=n)
    from scipy import stats

    lo, hi = stats.t.interval(confidence, n - 1, loc=mean, scale=sem)
    return Interval(mean=mean, lo=float(lo), hi=float(hi), n=n)


def _certain(excess: float, alternative: Alternative) -> float:
    """The p-value of a difference with no spread: 0 where it lies on the tested side."""
    if alternative == "greater":
        return 0.0 if excess > 0 else 1.0
    if alternative == "less":
        return 0.0 if excess < 0 else 1.0
    return 0.0 if excess != 0 else 1.0


def difference(a: Sequence[float | None], b: Sequence[float | None], paired: bool = True,
               alternative: Alternative = "two-sided", margin: float = 0.0,
               confidence: float = CONFIDENCE) -> Difference:
    """B minus A: its mean, the two-sided confidence interval of that mean, and the p-value
    of the test that B - A differs from `margin` (`alternative`: 'greater' tests B - A > margin).

    `paired`: a[i] and b[i] come from the same seed (a paired t test; the lists must be
    equally long); else Welch's t test. One value per side, or a missing value, gives no
    interval and no test.
    """
    if paired and len(a) != len(b):
        raise ValueError(f"a paired difference needs as many values on each side, got {len(a)} and {len(b)}")
    n = len(b) if paired else min(len(a), len(b))
    missing = sum(not (_finite(x) and _finite(y)) for x, y in zip(a, b)) if paired else \
        sum(not _finite(v) for v in [*a, *b])
    base = dict(n=n, alternative=alternative, margin=margin)
    if n == 0 or missing:
        return Difference(mean=None, missing=missing, **base)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if paired:
        d = xb - xa
        mean, sd = float(d.mean()), (float(d.std(ddof=1)) if n > 1 else 0.0)
    else:
        mean = float(xb.mean() - xa.mean())
        sd = math.sqrt((float(xa.var(ddof=1)) + float(xb.var(ddof=1))) / 2) if min(len(a), len(b)) > 1 else 0.0
    if n < 2:
        return Difference(mean=mean, **base)
    test: Literal["paired t", "Welch t"] = "paired t" if paired else "Welch t"
    if sd == 0:
        return Difference(mean=mean, lo=mean, hi=mean, p_value=_certain(mean - margin, alternative), test=test,
                          **base)
    from scipy import stats

    two_sided = stats.ttest_1samp(d, 0.0) if paired else stats.ttest_ind(xb, xa, equal_var=False)
    tested = (stats.ttest_1samp(d, margin, alternative=alternative) if paired
              else stats.ttest_ind(xb - margin, xa, equal_var=False, alternative=alternative))
    ci = two_sided.confidence_interval(confidence)
    return Difference(mean=mean, lo=float(ci.low), hi=float(ci.high), p_value=float(tested.pvalue), test=test,
                      effect=mean / sd, **base)
