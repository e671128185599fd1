"""Run many sim jobs (target x workload) in parallel worker processes.

Each job is described by plain strings and numbers, resolved inside the worker,
so jobs pickle cheaply and a worker never shares state with another.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.engine.sim import run_sim
from harness.results.run import RunResult
from targets.spec import resolve_target
from workloads.loader import load_workload


@dataclass(frozen=True)
class SimJob:
    target: str
    workload: str
    seed: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)
    duration_s: float | None = None
    rate_rps: float | None = None

    def run(self) -> RunResult:
        config = resolve_target(self.target, self.overrides)
        wl = load_workload(self.workload)
        factor = (self.rate_rps / wl.peak_rps) if self.rate_rps and wl.peak_rps else 1.0
        if factor != 1.0 or self.duration_s:
            wl = wl.scaled(factor, self.duration_s)
        return run_sim(config, wl, seed=self.seed)


def _run(job: SimJob) -> dict[str, Any]:
    return job.run()


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def run_jobs(jobs: list[SimJob], workers: int | None = None,
             on_done: Callable[[int, SimJob, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Results in job order. One process per core; inline when workers == 1."""
    workers = default_jobs() if workers is None else workers
    results: list[dict[str, Any] | None] = [None] * len(jobs)
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
