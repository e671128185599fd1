"""The canary bad days, and a plan run over them across seeds.

Each day is a canary version, the traffic it meets and any target change: a
good canary (must promote), a slow one (+50% batch time), an erroring one (2%
5xx), a wrong one (30% of answers in another class, latency unchanged), the
wrong one behind the doc's exact-payload cache (Zipf payloads: canary-routed
requests get the baseline's cached answers), and a good one during a traffic
spike (the noisy case).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.analysis.canary_run import Rollout
from harness.engine.jobs import run_jobs
from harness.results.canary import CanaryCell, CanaryResult, CanaryRun
from targets.spec import resolve_target
from targets.versions import ModelVersion
from workloads.canary_plan import CanaryPlan, load_plan
from workloads.loader import load_workload

__all__ = ["CANARY_DAYS", "CanaryDay", "run_canary"]

DESIGN_PEAK_RPS = 10_000.0  # the scenarios' rates are the design's; a plan runs them scaled to its rate


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


@dataclass(frozen=True)
class CanaryJob:
    """A picklable rollout for `run_jobs`: names in, a CanaryRun out."""

    plan: str
    day: str
    target: str
    seed: int

    def run(self) -> CanaryRun:
        plan = load_plan(self.plan)
        day = CANARY_DAYS[self.day]
        config = resolve_target(self.target, {"peak_qps": plan.rate_rps, **day.overrides})
        workload = load_workload(day.scenario)
        span = sum(s.duration_s for s in plan.steps) if day.fit_to_steps else plan.duration_s
        workload = workload.scaled(plan.rate_rps / DESIGN_PEAK_RPS, duration_s=span)
        return Rollout(plan, day.version, workload, config, self.seed).run()


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def run_canary(plans: list[str], target: str, seeds: int, first_seed: int = 1, days: list[str] | None = None,
               workers: int | None = None, on_done: Callable[[int, int], None] | None = None) -> CanaryResult:
    """Every plan on every day over `seeds` seeds."""
    names = days or list(CANARY_DAYS)
    jobs = [CanaryJob(p, d, target, first_seed + k) for p in plans for d in names for k in range(seeds)]
    count = [0]

    def done(*_: Any) -> None:
        count[0] += 1
        if on_done:
            on_done(count[0], len(jobs))

    runs = run_jobs(jobs, workers, on_done=done)
    cells = []
    loaded: dict[str, CanaryPlan] = {p: load_plan(p) for p in plans}
    for p in plans:
        for d in names:
            mine = [r for j, r in zip(jobs, runs) if j.plan == p and j.day == d]
            decided = [r for r in mine if r.decided_at_s is not None]
            cells.append(CanaryCell(
                plan=loaded[p].name, day=d, bad=CANARY_DAYS[d].bad, runs=mine,
                rollback_share=sum(r.decision == "rollback" for r in mine) / len(mine),
                promote_share=sum(r.decision == "promote" for r in mine) / len(mine),
                median_decision_s=_median([r.decided_at_s for r in decided]),
                median_blast_radius=_median([float(r.canary_requests) for r in mine]),
                wrong_version=sum(r.wrong_version for r in mine)))
    return CanaryResult(target=target, seeds=seeds, plans={loaded[p].name: loaded[p].description for p in plans},
                        cells=cells)
