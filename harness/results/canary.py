"""The `canary` result: each plan on each canary bad day, over many seeds.

Per run: the decision (promote, rollback, hold), when it was made (s since the
rollout began), the step it was made at, the checks that failed, the attempts
the canary served until then (blast radius) and the cache hits answered with
the wrong version's output. Per plan and day: the share of runs rolled back,
the median time to decision and blast radius; `bad` days should be rolled back,
the others promoted (a rollback there is a false rollback). `mode` live: each
run was a rollout on a served target, its seconds wall-clock ones.
"""

from __future__ import annotations

import statistics
from typing import Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["CanaryCell", "CanaryDayFigures", "CanaryResult", "CanaryRun", "StepEvidence"]


class StepEvidence(Figures):
    """What one step's analysis read (live rollouts keep it: each is one costly run)."""

    weight: float
    action: str
    failed: list[str] = Field(default_factory=list)
    canary_answers: int
    baseline_answers: int
    canary_median_s: float | None
    baseline_median_s: float | None
    canary_errors: int
    baseline_errors: int
    output_distance: float | None
    unversioned: dict[str, int] = Field(default_factory=dict)  # answers no model computed: status -> count


class CanaryRun(Figures):
    seed: int
    decision: str
    decided_at_s: float | None
    step: int
    failed: list[str] = Field(default_factory=list)
    canary_requests: int
    wrong_version: int
    steps: list[StepEvidence] = Field(default_factory=list)
    batch_s: dict[str, float | None] = Field(default_factory=dict)  # live: mean batch time per version (host's pools)


class CanaryCell(Figures):
    plan: str
    day: str
    bad: bool
    runs: list[CanaryRun]
    rollback_share: float              # share of the seeds rolled back (on a good day: false rollbacks)
    promote_share: float               # share of the seeds promoted (on a bad day: misses)
    median_decision_s: float | None    # median time from the rollout's start to its decision, decided runs
    median_blast_radius: float | None  # median attempts the canary served before the decision
    wrong_version: int                 # answers from the other version's cache, summed over the seeds

    @classmethod
    def of(cls, plan: str, day: str, bad: bool, runs: list[CanaryRun]) -> "CanaryCell":
        """One plan on one day from its runs: their shares and medians."""
        decided = [r.decided_at_s for r in runs if r.decided_at_s is not None]
        return cls(plan=plan, day=day, bad=bad, runs=runs,
                   rollback_share=sum(r.decision == "rollback" for r in runs) / len(runs),
                   promote_share=sum(r.decision == "promote" for r in runs) / len(runs),
                   median_decision_s=statistics.median(decided) if decided else None,
                   median_blast_radius=statistics.median([float(r.canary_requests) for r in runs]) if runs else None,
                   wrong_version=sum(r.wrong_version for r in runs))


class CanaryDayFigures(Figures):
    """One canary day as it ran: bad or good, and what made it so (from the version's settings, the
    traffic and any target change: harness.analysis.canary, sim or live)."""

    bad: bool
    canary: str                          # how the canary version differs: "batch time +50%", "2% 5xx", ...
    traffic: str                         # the scenario it met ("steady", "spike", ...)
    target_change: str = ""              # e.g. "cache=exact"


class CanaryResult(Result):
    kind: Literal["canary"] = "canary"
    mode: str = "sim"  # live: rollouts on a served target with two torch models (harness.analysis.canary.live)
    target: str
    seeds: int
    plans: dict[str, str]  # name -> description
    cells: list[CanaryCell]
    days: dict[str, CanaryDayFigures] = Field(default_factory=dict)  # each day that ran (older files: none)

    def summary_json(self) -> dict[str, object]:
        return {"target": self.target, "mode": self.mode, "seeds": self.seeds,
                "cells": [{"plan": c.plan, "day": c.day, "bad": c.bad, "rollback_share": c.rollback_share,
                           "median_decision_s": c.median_decision_s, "median_blast_radius": c.median_blast_radius,
                           "wrong_version": c.wrong_version} for c in self.cells]}
