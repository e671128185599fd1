"""Run many sim jobs (target x workload) in parallel: worker processes, inline, or a Ray cluster.

Each job is described by plain strings and numbers, resolved inside the worker,
so jobs pickle cheaply and a worker never shares state with another. Any
picklable object with a `run()` method is a job (SimJob, the ablation's
VariantJob, capacity's Point); the same job gives the same result on every
executor, because its seed, not the worker, decides what it draws.

The executor is chosen per call or, for the commands whose jobs are planned
several calls deep (rank, review, capacity), once per process with
`configure(executor=...)`.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Sequence

from harness.engine.sim import Progress, run_sim
from harness.results.run import RunResult
from targets.config import TargetConfig
from targets.frameworks.spec import framework_name
from targets.spec import resolve_target
from workloads.config_files import ConfigError
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["Executor", "ExecutorUnavailable", "JobsInterrupted", "SimJob", "configure", "default_jobs", "require",
           "run_jobs", "start_jobs"]

OnDone = Callable[[int, Any, Any], None]


class Executor(StrEnum):
    """Where jobs run: this machine's cores, this process, or a Ray cluster."""

    PROCESS = "process"  # one worker process per core (inline when workers == 1 or one job)
    INLINE = "inline"    # one after another in this process
    RAY = "ray"          # Ray tasks: RAY_ADDRESS's cluster, else a local instance (harness.engine.ray_jobs)


RAY_MISSING = "the ray executor needs Ray, an optional extra: pip install -e '.[ray]'"
_default = Executor.PROCESS


class ExecutorUnavailable(RuntimeError):
    """The chosen executor's optional package is not installed."""


class JobsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or whatever raised KeyboardInterrupt: a SIGTERM handler, an `on_done`) stopped
    `run_jobs`. `results`: in job order, each finished job's result and None for the rest;
    the worker processes are gone. A KeyboardInterrupt, so a caller that does not look
    inside still stops as it would on Ctrl-C."""

    def __init__(self, results: list[Any]) -> None:
        super().__init__("interrupted")
        self.results = results


def require(executor: Executor | str) -> Executor:
    """`executor` as an Executor (ValueError if unknown), checked to be installed
    without importing it (ExecutorUnavailable): a command can refuse before any work."""
    chosen = Executor(executor)
    if chosen is Executor.RAY and importlib.util.find_spec("ray") is None:
        raise ExecutorUnavailable(RAY_MISSING)
    return chosen


def configure(executor: Executor | str) -> None:
    """Set the executor `run_jobs` uses when a call names none (the CLI's `--executor`)."""
    global _default
    _default = require(executor)


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
        if framework_name(self.target):  # a real framework has no sim: only its design would run
            raise ConfigError(f"target '{self.target}' is a real serving framework: it runs live only (--mode live)")
        return resolve_target(self.target, self.overrides)


def _run(job: Any) -> Any:
    return job.run()


def _worker_signals() -> None:
    """In each worker process: Ctrl-C is the parent's to handle (it stops the workers), and
    SIGTERM ends the worker at once, whatever handler the parent had."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_now(pool: ProcessPoolExecutor) -> None:
    """Cancel the jobs not started and end the running ones' workers (a job's partial work
    is lost with its worker)."""
    workers = list((pool._processes or {}).values())  # no public way to end running jobs before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.join(timeout=5)


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def run_jobs(jobs: Sequence[Any], workers: int | None = None, on_done: OnDone | None = None,
             executor: Executor | str | None = None) -> list[Any]:
    """Each job's `run()` result, in job order; `on_done(index, job, result)` as each
    finishes, in completion order. `workers`: processes (default one per core, at most
    8), or a local Ray instance's CPUs (default all cores). `executor` defaults to the
    configured one (process).

    A KeyboardInterrupt (Ctrl-C, or one `on_done` raises) stops every job still running
    or waiting and raises JobsInterrupted with the results of those that finished (process
    and inline; on Ray it propagates as raised)."""
    chosen = _default if executor is None else Executor(executor)
    if not jobs:
        return []
    if chosen is Executor.RAY:
        try:  # Ray is an optional extra: imported only here
            from harness.engine.ray_jobs import run_on_ray
        except ImportError as exc:
            raise ExecutorUnavailable(f"{RAY_MISSING} ({exc})") from exc
        return run_on_ray(jobs, _longest_first(jobs), workers, on_done)
    workers = default_jobs() if workers is None else workers
    if chosen is Executor.INLINE or workers <= 1 or len(jobs) == 1:
        return _run_inline(jobs, on_done)
    results_by_index: list[Any] = [None] * len(jobs)
    with ProcessPoolExecutor(max_workers=workers, initializer=_worker_signals) as pool:
        try:
            futures = {pool.submit(_run, jobs[i]): i for i in _longest_first(jobs)}
            for fut in as_completed(futures):
                i = futures[fut]
                results_by_index[i] = fut.result()
                if on_done:
                    on_done(i, jobs[i], results_by_index[i])
        except KeyboardInterrupt:
            _stop_now(pool)
            raise JobsInterrupted(results_by_index) from None
    return results_by_index


def _run_inline(jobs: Sequence[Any], on_done: OnDone | None) -> list[Any]:
    """`run_jobs` in this process, one job after another (JobsInterrupted as there)."""
    results: list[Any] = []
    try:
        for i, job in enumerate(jobs):
            results.append(job.run())
            if on_done:
                on_done(i, job, results[i])
    except KeyboardInterrupt:
        raise JobsInterrupted(results + [None] * (len(jobs) - len(results))) from None
    return results


def start_jobs(jobs: Sequence[Any], workers: int | None = None,
               executor: Executor | str | None = None) -> Callable[[], list[Any]]:
    """Start `jobs` on worker processes now and return the call that waits for their
    results (in job order), so this process can do other work meanwhile (the review
    computes its Part 2/3 answers while the canary rollouts run). The call shuts the
    workers down. Inline and Ray jobs run at that call instead, as `run_jobs` would."""
    chosen = _default if executor is None else Executor(executor)
    workers = default_jobs() if workers is None else workers
    if chosen is not Executor.PROCESS or workers <= 1 or len(jobs) <= 1:
        return lambda: run_jobs(jobs, workers, executor=executor)
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futures = {i: pool.submit(_run, jobs[i]) for i in _longest_first(jobs)}
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise

    def results() -> list[Any]:
        try:
            return [futures[i].result() for i in range(len(jobs))]
        finally:
            pool.shutdown(cancel_futures=True)
    return results


def _longest_first(jobs: Sequence[Any]) -> list[int]:
    """Job indices, longest first: the last to finish are short ones, so every worker stays busy to the end."""
    return sorted(range(len(jobs)), key=lambda i: -_weight(jobs[i]))


def _weight(job: Any) -> float:
    try:
        wl = load_workload(job.workload)
        return wl.duration_s * wl.peak_rps
    except Exception:
        return 0.0
