"""The canary follow-up: the built-in rollout plans on the canary bad days, and the plan to use.

Each plan is judged over the days that judge a plan (`CanaryDay.judges_plan`:
the exact-payload cache day is the target's flaw and is reported apart): the
share of bad canaries rolled back (caught), the share of good ones rolled back
(false rollbacks, with a Clopper-Pearson 95% upper bound, since a review runs
few seeds), and, on the bad canaries, the median time to decision and the
median blast radius (attempts the canary served before the rollback). The
recommended plan is the one that meets the bar (caught >= 95%, false
rollbacks <= 5%) with the smallest blast radius, then the sooner decision;
none when no plan meets it.
"""

from __future__ import annotations

import statistics
from typing import Callable

from harness.analysis.canary import CANARY_DAYS, start_canary
from harness.engine.jobs import Jobs
from harness.results.canary import CanaryResult, CanaryRun
from harness.results.followups import CanaryAnswer, PlanFigures
from workloads.canary_plan import plan_names

__all__ = ["MAX_FALSE_ROLLBACK", "MIN_CAUGHT", "canary_answer", "judge_plans", "start_canary_answer"]

MIN_CAUGHT = 0.95          # bad canaries rolled back
MAX_FALSE_ROLLBACK = 0.05  # good canaries rolled back
_ANSWER = "harness.analysis.review.canary.start_canary_answer"  # the kept answer's kind (run cache)


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _plan(result: CanaryResult, plan: str, min_caught: float = MIN_CAUGHT,
          max_false_rollback: float = MAX_FALSE_ROLLBACK) -> PlanFigures:
    cells = [c for c in result.cells if c.plan == plan and CANARY_DAYS[c.day].judges_plan]
    bad: list[CanaryRun] = [r for c in cells if c.bad for r in c.runs]
    good: list[CanaryRun] = [r for c in cells if not c.bad for r in c.runs]
    back = [r for r in bad if r.decision == "rollback"]
    caught = len(back) / len(bad) if bad else 0.0
    falsely = sum(r.decision == "rollback" for r in good)
    false_share = falsely / len(good) if good else 0.0
    from scipy.stats import binomtest  # here, not with the module: `harness review` starts 1 s sooner

    high = float(binomtest(falsely, len(good)).proportion_ci(0.95, method="exact").high) if good else 1.0
    return PlanFigures(
        plan=plan, description=result.plans.get(plan, ""), caught=caught, bad_runs=len(bad),
        false_rollback=false_share, false_rollback_high=high, good_runs=len(good),
        median_decision_s=_median([r.decided_at_s for r in back if r.decided_at_s is not None]),
        median_blast_radius=_median([float(r.canary_requests) for r in back]),
        meets_bar=bool(bad and good) and caught >= min_caught and false_share <= max_false_rollback)


def judge_plans(result: CanaryResult, min_caught: float = MIN_CAUGHT,
                max_false_rollback: float = MAX_FALSE_ROLLBACK) -> list[PlanFigures]:
    return [_plan(result, p, min_caught, max_false_rollback) for p in result.plans]


def canary_answer(result: CanaryResult, source: str, min_caught: float = MIN_CAUGHT,
                  max_false_rollback: float = MAX_FALSE_ROLLBACK) -> CanaryAnswer:
    """Every plan judged against the bar (`min_caught`, `max_false_rollback`: shares), and the
    recommended one (see the module doc); the answer carries the bar, so its words say the one used."""
    plans = judge_plans(result, min_caught, max_false_rollback)
    fit = [p for p in plans if p.meets_bar]
    inf = float("inf")
    best = min(fit, key=lambda p: (p.median_blast_radius if p.median_blast_radius is not None else inf,
                                   p.median_decision_s if p.median_decision_s is not None else inf), default=None)
    return CanaryAnswer(result=result, source=source, plans=plans, recommended=best.plan if best else None,
                        min_caught=min_caught, max_false_rollback=max_false_rollback)


def start_canary_answer(seeds: int, first_seed: int = 1, target: str = "hardened",
                        jobs: Jobs = Jobs()) -> Callable[[], CanaryAnswer]:
    """The built-in plans on every canary day over `seeds` seeds, started on worker processes
    now (`jobs`); the returned call waits for them and judges.

    With a run cache, the answer itself is kept too (`RunCache.recall`, `remember`): a review run
    again takes it whole, and neither loads the rollouts nor imports scipy.stats to judge them
    (its import was 0.7 s of a 1.9 s cached review)."""
    plans = plan_names()
    cache, inputs = jobs.cache, {"plans": plans, "target": target, "seeds": seeds, "first_seed": first_seed}
    source = f"run here: {seeds} seed(s) a plan and day"
    if cache is not None:
        found = cache.recall(_ANSWER, inputs, f"canary answer, {source}")
        if found is not None:
            return lambda: found
    waiting = start_canary(plans, target, seeds, first_seed, jobs=jobs)

    def answer() -> CanaryAnswer:
        judged = canary_answer(waiting(), source)
        if cache is not None:
            cache.remember(_ANSWER, inputs, judged)
        return judged
    return answer
