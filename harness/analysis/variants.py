"""Variants of a design under a shortened scenario: the jobs the ablation runs.

A variant is a fully resolved target (its knobs) with one flaw put back or fixed;
`VariantJob` runs it on a scenario shortened by `harness.analysis.shorten`.
Progress is reported through two callbacks: `on_planned(n)` before a batch of n
runs starts (a rank plans its interaction probes only once the ablation is
measured, so the total grows once), and `on_done(index, job, result)` after each
(`harness.engine.jobs.OnDone`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from harness.analysis.shorten import Shortening, shorten
from harness.engine.jobs import Job, Jobs
from harness.engine.sim import run_sim
from harness.results.run import RunResult, RunSummary
from targets.config import TargetConfig
from targets.spec import resolve_target
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["OnDone", "OnPlanned", "VariantJob", "knobs_of", "run_summaries", "variant"]

OnDone = Callable[[int, Job[RunResult], RunResult], None]  # harness.engine.jobs.OnDone of a run
OnPlanned = Callable[[int], None]


@dataclass(frozen=True)
class VariantJob:
    """One run of a fully resolved target (knobs) under a shortened scenario.

    Carries plain data only, so it pickles to a worker process cheaply; the
    `target` label and `workload` name are what progress displays show.
    """

    target: str
    knobs: dict[str, Any]
    workload: str
    seed: int = 1
    shortening: Shortening | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    def run(self) -> RunResult:
        return run_sim(*self.sim_inputs())

    def sim_inputs(self) -> tuple[TargetConfig, WorkloadConfig, int]:
        """What decides the run (`run_sim`'s arguments): the run cache's key."""
        config = TargetConfig.model_validate({**self.knobs, "name": self.target})
        return config, shorten(load_workload(self.workload), self.shortening), self.seed


def knobs_of(spec: str) -> tuple[str, dict[str, Any]]:
    """(label, knobs) of a target spec or TOML design; the label is its name."""
    cfg = resolve_target(spec)
    return cfg.name, cfg.model_dump(mode="json")


def variant(knobs: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`knobs` with `changes` applied (enum values as their plain values)."""
    return {**knobs, **{k: (v.value if hasattr(v, "value") else v) for k, v in changes.items()}}


def run_summaries(runs: list[VariantJob], jobs: Jobs = Jobs(), on_done: OnDone | None = None,
                  on_planned: OnPlanned | None = None) -> dict[tuple[str, str], RunSummary]:
    """{(target label, scenario): summary} for every run, each a job of `jobs`."""
    if on_planned is not None and runs:
        on_planned(len(runs))
    docs = jobs.run(runs, on_done)
    return {(j.target, j.workload): d.summary for j, d in zip(runs, docs)}
