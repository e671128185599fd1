"""Run many sim jobs (target x workload) in parallel worker processes.

Each job is described by plain strings and numbers, resolved inside the worker,
so jobs pickle cheaply and a worker never shares state with another.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.engine.sim import Progress, run_sim
from harness.results.run import RunResult
from targets.config import TargetConfig
from targets.spec import resolve_target
from workloads.loader import load_workload
from workloads.model import WorkloadConfig


@dataclass(frozen=True)
class SimJob:
    target: str
    workload: str
    seed: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)
    duration_s: float | None = None
    rate_rps: float | None = None

    def run(self, progress: Progress | None = None) -> RunResult:
        """One seeded sim run of the job; `progress` gets SimRun's once-a-window samples."""
        return run_sim(self.target_config(), self.workload_config(), self.seed, progress)

    def workload_config(self) -> WorkloadConfig:
        """The job's workload at its rate and duration."""
        return load_workload(self.workload).at_rate(self.rate_rps, self.duration_s)

    def target_config(self) -> TargetConfig:
        return resolve_target(self.target, self.overrides)


def _run(job: SimJob) -> RunResult:
    return job.run()


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def run_jobs(jobs: list[SimJob], workers: int | None = None,
             on_done: Callable[[int, SimJob, RunResult], None] | None = None) -> list[RunResult]:
    """Results in job order. One process per core; inline when workers == 1."""
    workers = default_jobs() if workers is None else workers
    results: list[RunResult | None] = [None] * len(jobs)
    if workers <= 1 or len(jobs) == 1:
        for i, job in enumerate(jobs):
            results[i] = job.run()
            if on_done:
                on_done(i, job, results[i])
        return results  # type: ignore[return-value]
    # Longest jobs first keeps both cores busy to the end.
    order = sorted(range(len(jobs)), key=lambda i: -_weight(jobs[i]))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_run, jobs[i]): i for i in order}
        from concurrent.futures import as_completed

        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_done:
                on_done(i, jobs[i], results[i])
    return results  # type: ignore[return-value]


def _weight(job: SimJob) -> float:
    try:
        wl = load_workload(job.workload)
        return wl.duration_s * wl.peak_rps
    except Exception:
        return 0.0
