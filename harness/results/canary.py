"""The `canary` result: each plan on each canary bad day, over many seeds.

Per run: the decision (promote, rollback, hold), when it was made (s since the
rollout began), the step it was made at, the checks that failed, the attempts
the canary served until then (blast radius) and the cache hits answered with
the wrong version's output. Per plan and day: the share of runs rolled back,
the median time to decision and blast radius; `bad` days should be rolled back,
the others promoted (a rollback there is a false rollback).
"""

from __future__ import annotations

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["CanaryCell", "CanaryResult", "CanaryRun"]


class CanaryRun(Figures):
    seed: int
    decision: str
    decided_at_s: float | None
    step: int
    failed: list[str] = Field(default_factory=list)
    canary_requests: int
    wrong_version: int


class CanaryCell(Figures):
    plan: str
    day: str
    bad: bool
    runs: list[CanaryRun]
    rollback_share: float
    promote_share: float
    median_decision_s: float | None
    median_blast_radius: float | None
    wrong_version: int


class CanaryResult(Result):
    kind: str = "canary"
    target: str
    seeds: int
    plans: dict[str, str]  # name -> description
    cells: list[CanaryCell]

    def summary_json(self) -> dict[str, object]:
        return {"target": self.target, "seeds": self.seeds,
                "cells": [{"plan": c.plan, "day": c.day, "bad": c.bad, "rollback_share": c.rollback_share,
                           "median_decision_s": c.median_decision_s, "median_blast_radius": c.median_blast_radius,
                           "wrong_version": c.wrong_version} for c in self.cells]}
