"""Figures measured over several seeds: a mean with its confidence interval, and a difference.

`harness.analysis.stats` computes them (Student t over seeds, scipy.stats); these are
the typed blocks results carry. One seed has no interval: `lo` and `hi` are None
then, never an invented width. A seed whose figure had no finite value (a tail
never answered) is counted in `missing`; the interval is then None too, since a
mean over the seeds that did answer would hide the ones that did not.
"""

from __future__ import annotations

from typing import Literal

from harness.results.base import Figures

__all__ = ["CONFIDENCE", "Difference", "Interval"]

CONFIDENCE = 0.95   # every interval in a result is a 95% one


class Interval(Figures):
    """A figure over `n` seeds: its mean and the 95% confidence interval of that mean.

    `mean` is None when no seed had a finite value; `lo`/`hi` are None when there is no
    interval (one seed, or `missing` > 0).
    """

    mean: float | None
    lo: float | None = None
    hi: float | None = None
    n: int
    missing: int = 0

    @property
    def has_interval(self) -> bool:
        return self.lo is not None and self.hi is not None

    @property
    def half_width(self) -> float | None:
        return None if self.lo is None or self.hi is None else (self.hi - self.lo) / 2

    def excludes(self, x: float = 0.0) -> bool:
        """The interval lies wholly on one side of `x` (False without an interval)."""
        return self.lo is not None and self.hi is not None and (self.lo > x or self.hi < x)


class Difference(Interval):
    """B minus A over the same seeds (paired), or new minus old (`test` says which test).

    `p_value`: of the test named in `test` against no difference (or against `margin`,
    in the figure's unit), `alternative` as scipy.stats spells it; None without a test.
    `effect`: the standardized size of the difference itself, whatever the margin (mean
    difference / its standard deviation: Cohen's d_z for a paired test, the pooled
    deviation for Welch); None without spread.
    """

    p_value: float | None = None
    test: Literal["paired t", "Welch t", "none"] = "none"
    alternative: Literal["two-sided", "greater", "less"] = "two-sided"
    margin: float = 0.0
    effect: float | None = None

    def significant(self, alpha: float = 1 - CONFIDENCE) -> bool:
        return self.p_value is not None and self.p_value < alpha
