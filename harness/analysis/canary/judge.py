"""Automated canary analysis: one step's canary answers against the baseline's, as Kayenta judges them.

Pure: samples in, a verdict out. Three checks, each a significance test and an
effect size (a tiny but significant difference on 20,000 requests is no reason
to roll back):

- latency: Mann-Whitney U on the per-request latencies of OK answers (the rank
  test Kayenta uses), one-sided (canary slower), and the canary's median over
  the baseline's by more than `latency_ratio`;
- errors: a two-proportion test (Fisher's exact, one-sided) on 5xx shares, and
  the canary's share over the baseline's by more than `error_increase`;
- outputs: a chi-squared test on the label counts, and the Jensen-Shannon
  distance between the two label distributions over `output_distance`.

Any check failing rolls back; too few canary answers holds the step; else the
step passes.

scipy is imported where a check tests, not with the module (as `harness.analysis.stats` does):
`harness review` and `harness gate` import this module and paid ~1.1 s of scipy's import each,
and every test run's collection with them, whether a canary was judged or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

__all__ = ["Action", "Sample", "StepVerdict", "Thresholds", "judge"]


class Action(StrEnum):
    PROMOTE = "promote"    # the step passed: on to the next weight (or done)
    HOLD = "hold"          # too little evidence yet: stay at this weight longer
    ROLLBACK = "rollback"  # a check failed


@dataclass(frozen=True)
class Thresholds:
    alpha: float = 0.001
    min_samples: int = 50
    latency_ratio: float = 1.1
    error_increase: float = 0.005
    output_distance: float = 0.05


@dataclass
class Sample:
    """One version's answers in one step: OK latencies (s), 5xx count, label counts."""

    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def answers(self) -> int:
        return len(self.latencies_s) + self.errors


@dataclass(frozen=True)
class StepVerdict:
    action: Action
    failed: tuple[str, ...]  # the checks that failed: latency, errors, outputs
    p_latency: float | None
    p_errors: float | None
    p_outputs: float | None
    output_distance: float | None


def _latency(c: Sample, b: Sample, th: Thresholds) -> tuple[bool, float | None]:
    if len(c.latencies_s) < th.min_samples or len(b.latencies_s) < th.min_samples:
        return False, None
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(c.latencies_s, b.latencies_s, alternative="greater").pvalue)
    return bool(p < th.alpha and np.median(c.latencies_s) > th.latency_ratio * np.median(b.latencies_s)), p


def _errors(c: Sample, b: Sample, th: Thresholds) -> tuple[bool, float]:
    from scipy.stats import fisher_exact

    table = np.array([[c.errors, c.answers - c.errors], [b.errors, b.answers - b.errors]])
    p = float(fisher_exact(table, alternative="greater").pvalue)
    excess = c.errors / c.answers - (b.errors / b.answers if b.answers else 0.0)
    return p < th.alpha and excess > th.error_increase, p


def _outputs(c: Sample, b: Sample, th: Thresholds) -> tuple[bool, float | None, float | None]:
    if c.labels.sum() < th.min_samples or b.labels.sum() < th.min_samples:
        return False, None, None
    table = np.vstack([c.labels, b.labels])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return False, 1.0, 0.0
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import chi2_contingency

    p = float(chi2_contingency(table).pvalue)
    distance = float(jensenshannon(c.labels / c.labels.sum(), b.labels / b.labels.sum(), base=2))
    return p < th.alpha and distance > th.output_distance, p, distance


def judge(canary: Sample, baseline: Sample, th: Thresholds) -> StepVerdict:
    """The step's verdict: ROLLBACK if any check fails, HOLD on too few canary answers, else PROMOTE."""
    if canary.answers < th.min_samples or baseline.answers < th.min_samples:
        return StepVerdict(Action.HOLD, (), None, None, None, None)
    slow, p_lat = _latency(canary, baseline, th)
    erring, p_err = _errors(canary, baseline, th)
    shifted, p_out, distance = _outputs(canary, baseline, th)
    failed = tuple(name for name, bad in (("latency", slow), ("errors", erring), ("outputs", shifted)) if bad)
    return StepVerdict(Action.ROLLBACK if failed else Action.PROMOTE, failed, p_lat, p_err, p_out, distance)
