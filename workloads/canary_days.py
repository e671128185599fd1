"""The canary bad days: which canary version meets which traffic, on which target change.

A day is workload-like data, as a scenario is: a canary version (targets'
`ModelVersion`), the scenario whose traffic it meets and any target override.
A good canary (must promote), a slow one (+50% batch time), an erroring one (2%
5xx), a wrong one (30% of answers in another class, latency unchanged), the
wrong one behind the doc's exact-payload cache (Zipf payloads: canary-routed
requests get the baseline's cached answers), and a good one during a traffic
spike (the noisy case). They live here, beside the plans, so a suite file that
names a day is checked where it is read (`workloads.suite`);
`harness.analysis.canary.days` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from targets.versions import ModelVersion

__all__ = ["CANARY_DAYS", "CanaryDay"]


@dataclass(frozen=True)
class CanaryDay:
    version: ModelVersion
    scenario: str
    bad: bool
    overrides: dict[str, Any] = field(default_factory=dict)
    # The day's shape spans the plan's steps (held steps run past it): a spike lands mid-rollout.
    fit_to_steps: bool = False
    # False: what decides the day is the target's flaw (the exact-payload cache answers for the
    # canary), which no plan can fix; it is reported apart from the plans' catch rates.
    judges_plan: bool = True


CANARY_DAYS: dict[str, CanaryDay] = {
    "good": CanaryDay(ModelVersion(name="v2"), "steady", bad=False),
    "slow": CanaryDay(ModelVersion(name="v2", cost_factor=1.5), "steady", bad=True),
    "erroring": CanaryDay(ModelVersion(name="v2", error_rate=0.02), "steady", bad=True),
    "wrong": CanaryDay(ModelVersion(name="v2", output_shift=0.3), "steady", bad=True),
    "wrong-behind-exact-cache": CanaryDay(ModelVersion(name="v2", output_shift=0.3), "cacheable", bad=True,
                                          overrides={"cache": "exact"}, judges_plan=False),
    "good-during-spike": CanaryDay(ModelVersion(name="v2"), "spike", bad=False, fit_to_steps=True),
}
