"""A rollout plan run over the canary bad days across seeds.

The days themselves (a canary version, the traffic it meets, any target
change) are data in `workloads.canary_days`, re-exported here. `run_canary`
runs every plan on every day; `run_rollouts` runs the (plan, day) pairs a
suite lists (`harness canary --suite`); both make one cell per pair from the
same jobs, so a pair's figures do not depend on which way it was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.analysis.canary.run import Rollout
from harness.engine.jobs import Jobs
from harness.results.canary import CanaryCell, CanaryDayFigures, CanaryResult, CanaryRun
from targets.config import TargetConfig
from targets.spec import resolve_target
from workloads.canary_days import CANARY_DAYS, CanaryDay
from workloads.canary_plan import CanaryPlan, load_plan
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["CANARY_DAYS", "CanaryDay", "day_figures", "run_canary", "run_rollouts", "start_canary"]

DESIGN_PEAK_RPS = 10_000.0  # the scenarios' rates are the design's; a plan runs them scaled to its rate


@dataclass(frozen=True)
class CanaryJob:
    """A picklable rollout for `Jobs.run`: names in, a CanaryRun out."""

    plan: str
    day: str
    target: str
    seed: int

    def run(self) -> CanaryRun:
        plan, day, workload, config = self._inputs()
        return Rollout(plan, day.version, workload, config, self.seed).run()

    def _inputs(self) -> tuple[CanaryPlan, CanaryDay, WorkloadConfig, TargetConfig]:
        plan = load_plan(self.plan)
        day = CANARY_DAYS[self.day]
        config = resolve_target(self.target, {"peak_qps": plan.rate_rps, **day.overrides})
        workload = load_workload(day.scenario)
        span = sum(s.duration_s for s in plan.steps) if day.fit_to_steps else plan.duration_s
        return plan, day, workload.scaled(plan.rate_rps / DESIGN_PEAK_RPS, duration_s=span), config

    def cache_inputs(self) -> dict[str, Any]:
        """Everything that decides `run()` (harness.engine.run_cache): the plan, the canary
        version and the target as resolved (a plan or design file edited in place misses)."""
        plan, day, workload, config = self._inputs()
        return {"plan": plan, "day": self.day, "version": day.version, "workload": workload,
                "config": config, "seed": self.seed}

    def cache_label(self) -> str:
        return f"canary {self.plan} on {self.day}, seed {self.seed}"


def run_canary(plans: list[str], target: str, seeds: int, first_seed: int = 1, days: list[str] | None = None,
               jobs: Jobs = Jobs(), on_done: Callable[[int, int], None] | None = None) -> CanaryResult:
    """Every plan on every day (or on `days`) over `seeds` seeds, each rollout a job of `jobs`."""
    return run_rollouts(_pairs(plans, days), target, seeds, first_seed, jobs, on_done)


def run_rollouts(pairs: list[tuple[str, str]], target: str, seeds: int, first_seed: int = 1,
                 jobs: Jobs = Jobs(), on_done: Callable[[int, int], None] | None = None) -> CanaryResult:
    """Each (plan, day) over seeds `first_seed`..`first_seed + seeds - 1`: one cell per pair, in order."""
    rollouts = _rollouts(pairs, target, seeds, first_seed)
    count = [0]

    def done(*_: Any) -> None:
        count[0] += 1
        if on_done:
            on_done(count[0], len(rollouts))

    return _result(pairs, target, seeds, jobs.run(rollouts, on_done=done))


def start_canary(plans: list[str], target: str, seeds: int, first_seed: int = 1, days: list[str] | None = None,
                 jobs: Jobs = Jobs()) -> Callable[[], CanaryResult]:
    """`run_canary`, started on worker processes now; the returned call waits for the result.

    The rollouts' judges test with scipy.stats, which the caller (the review's canary answer)
    imports too: imported here, before the workers fork, they share it, where each would
    otherwise import it again in its first rollout (about 1 CPU-s a worker)."""
    import scipy.stats  # noqa: F401  # (see above)

    pairs = _pairs(plans, days)
    waiting = jobs.start(_rollouts(pairs, target, seeds, first_seed))
    return lambda: _result(pairs, target, seeds, waiting())


def _pairs(plans: list[str], days: list[str] | None) -> list[tuple[str, str]]:
    """Every plan on every day (or on `days`), plan by plan."""
    return [(p, d) for p in plans for d in days or list(CANARY_DAYS)]


def _rollouts(pairs: list[tuple[str, str]], target: str, seeds: int, first_seed: int) -> list[CanaryJob]:
    unknown = sorted({d for _, d in pairs if d not in CANARY_DAYS})
    if unknown:
        raise ValueError(f"unknown canary day(s) {', '.join(unknown)} (known: {', '.join(CANARY_DAYS)})")
    return [CanaryJob(p, d, target, first_seed + k) for p, d in pairs for k in range(seeds)]


def _result(pairs: list[tuple[str, str]], target: str, seeds: int, runs: list[CanaryRun]) -> CanaryResult:
    loaded: dict[str, CanaryPlan] = {p: load_plan(p) for p, _ in pairs}
    cells = []
    for i, (p, d) in enumerate(pairs):
        cells.append(CanaryCell.of(loaded[p].name, d, CANARY_DAYS[d].bad, runs[i * seeds:(i + 1) * seeds]))
    return CanaryResult(target=target, seeds=seeds, plans={v.name: v.description for v in loaded.values()},
                        cells=cells, days={d: day_figures(CANARY_DAYS[d]) for d in dict.fromkeys(d for _, d in pairs)})


def day_figures(day: CanaryDay) -> CanaryDayFigures:
    """A sim day as it runs: the version's settings, the scenario it meets, the target's change."""
    return CanaryDayFigures(bad=day.bad, canary=day.version.describe(), traffic=day.scenario,
                            target_change=", ".join(f"{k}={v}" for k, v in day.overrides.items()))
