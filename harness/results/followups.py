"""The review's answers to two follow-ups: dashboards and alerts, and canary rollouts.

`AlertsAnswer`: the alert rules of `harness alerts` evaluated on the review's
own runs (the good design and the design under review on every scenario),
each bad day's detection time, and the three metrics chosen for the
dashboard's first row with the thresholds the generated rules hold them to.
`CanaryAnswer`: the built-in rollout plans on the canary bad days, each
plan's catch rate, false-rollback rate and blast radius, and the plan
recommended. Every verdict (bad or calm, missed, recommended) is decided in
the library (`harness.analysis.review.alerts`, `harness.analysis.review.canary`);
`reports/review_followups.py` words them.
"""

from __future__ import annotations

from pydantic import Field

from harness.results.base import Figures
from harness.results.canary import CanaryResult

__all__ = ["AlertsAnswer", "CanaryAnswer", "ChosenMetric", "DayDetection", "PlanFigures", "RuleThreshold"]


class RuleThreshold(Figures):
    """One generated rule's hold on a signal: above each threshold over its window (0 s: the
    gauge now), all at once, for `for_s`."""

    rule: str
    severity: str
    conditions: list[tuple[float, float]]  # (window_s, threshold)
    for_s: float
    expr: str                            # the rule's whole PromQL expression, as written to the rule file


class ChosenMetric(Figures):
    """A metric of the dashboard's first row and what the review measured of it."""

    signal: str                          # harness.ops.rules.Signal value
    why: str                             # "the SLO" or "leading signal"
    rules: list[RuleThreshold]
    detected: list[str]                  # "design/scenario" bad days one of its rules caught
    first_on: list[str]                  # bad "design/scenario" days where one of its rules fired first
    median_delay_s: float | None         # over `detected`: onset (or run start) to its first firing


class DayDetection(Figures):
    """One design on one scenario: bad (a disturbance, or goodput burning the budget at a page's rate) or calm,
    and which rule fired first, how long after the onset (the run's start when bad throughout)."""

    design: str
    scenario: str
    run_s: float
    bad: bool
    onset_s: float | None                # None: no disturbance (bad throughout, or calm)
    goodput: float | None
    first_rule: str | None
    delay_s: float | None
    fired: list[str] = Field(default_factory=list)


class AlertsAnswer(Figures):
    hour_s: float                        # seconds that play the SRE workbook's hour
    objective: float                     # goodput SLO: share of answers OK within the SLO
    within_s: float                      # the bar: a bad day is detected within this of its onset
    source: str                          # which runs were evaluated (the ablation's, or its own)
    metrics: list[ChosenMetric]
    days: list[DayDetection]
    missed: list[str]                    # bad "design/scenario" no rule caught within `within_s`
    false_alarms: list[str]              # calm "design/scenario" where a rule fired
    off_row: list[str] = Field(default_factory=list)  # "design/scenario: rules" caught only off the first row


class PlanFigures(Figures):
    """One plan over the days that judge a plan (the cache case is the target's flaw, not the plan's)."""

    plan: str
    description: str
    caught: float                        # share of bad-canary runs rolled back
    bad_runs: int
    false_rollback: float                # share of good-canary runs rolled back
    false_rollback_high: float           # its 95% upper bound (Clopper-Pearson)
    good_runs: int
    median_decision_s: float | None      # bad canaries: rollout start to rollback
    median_blast_radius: float | None    # bad canaries: attempts the canary served until then
    meets_bar: bool                      # caught >= 95% and false rollbacks <= 5%


class CanaryAnswer(Figures):
    OMIT_IF_NONE = frozenset({"recommended"})

    result: CanaryResult                 # every plan on every canary day, per seed
    source: str                          # "run here" or the file reused
    plans: list[PlanFigures]
    recommended: str | None = None       # the plan meeting the bar with the smallest blast radius
    min_caught: float = 0.95             # the bar that judged the plans: bad canaries rolled back, at least
    max_false_rollback: float = 0.05     # and good canaries rolled back, at most
