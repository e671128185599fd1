"""One job over several seeds: each seed a separate job (so seeds spread over the cores),
gathered into a `SeedSet` with each headline figure's mean and 95% interval.

Seeds are derived from the base seed (`harness.analysis.stats.seeds_from`: seed,
seed+1, ...) and recorded in the result, so a seeded run is reproduced by its
base seed and count alone.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from harness.analysis.stats import interval
from harness.engine.jobs import Jobs, OnDone, SimJob
from harness.results.run import RunResult, RunSummary, SeedSet

__all__ = ["RUN_FIGURES", "run_seeds", "seed_set"]

# The figures a multi-seed run reports with intervals (summary keys; `harness run --json` names them).
RUN_FIGURES = ("goodput_ratio", "goodput_rps", "throughput_rps", "latency_s.p50", "latency_s.p99",
               "latency_ok_s.p50", "latency_ok_s.p99", "amplification", "outcomes.shed.share",
               "outcomes.timed_out.share", "gpu.utilization", "gpu.batch_fill", "gpu.wasted_gpu_s")


def seed_set(seeds: Sequence[int], summaries: Sequence[RunSummary], figures: Sequence[str] = RUN_FIGURES) -> SeedSet:
    """The seeds' summaries and an interval for each figure."""
    bare = SeedSet(seeds=list(seeds), summaries=list(summaries))
    return bare.model_copy(update={"figures": {k: interval(bare.values(k)) for k in figures}})


def run_seeds(job: SimJob, seeds: Sequence[int], jobs: Jobs = Jobs(),
              on_done: OnDone[RunResult] | None = None) -> RunResult:
    """The job once per seed, each a job of `jobs`: the first seed's run, with `over_seeds` when
    there are several."""
    runs = jobs.run([dataclasses.replace(job, seed=s) for s in seeds], on_done)
    if len(seeds) == 1:
        return runs[0]
    return runs[0].model_copy(update={"over_seeds": seed_set(seeds, [r.summary for r in runs])})
