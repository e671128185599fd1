"""Run many sim jobs (target x workload) in parallel: worker processes, inline, or a Ray cluster.

Each job is described by plain strings and numbers, resolved inside the worker,
so jobs pickle cheaply and a worker never shares state with another. Any
picklable object with a `run()` method is a `Job` (SimJob, the ablation's
VariantJob, capacity's Point); the same job gives the same result on every
executor, because its seed, not the worker, decides what it draws.

Where jobs run is one immutable value, `Jobs` (the executor, the worker count, and
for Ray the cluster to join). The CLI builds it once from `--executor` and `--jobs`
and passes it down, as httpx passes a transport; a library function that runs jobs
takes it as `jobs`, and a caller that passes none gets `Jobs()`: this machine's
worker processes, one per core, at most 8. There is no process-wide default to set.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Generic, Iterator, Protocol, Sequence, TypeVar, cast

from harness.engine.run_cache import RunCache
from harness.engine.sim import Progress, run_sim
from harness.results.run import RunResult
from targets.config import TargetConfig
from targets.frameworks.spec import framework_name
from targets.spec import resolve_target
from workloads.config_files import ConfigError
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["Executor", "ExecutorUnavailable", "Job", "Jobs", "JobsInterrupted", "OnDone", "SimJob", "Started", "default_workers",
           "require"]

R = TypeVar("R")
T = TypeVar("T")
R_co = TypeVar("R_co", covariant=True)


class Job(Protocol[R_co]):
    """What `Jobs` runs: a picklable object whose `run()` gives its result (picklable too)."""

    def run(self) -> R_co: ...


# Called as each job finishes, in completion order: (its index in the batch, the job, its result).
OnDone = Callable[[int, Job[R], R], None]


class Executor(StrEnum):
    """Where jobs run: this machine's cores, this process, or a Ray cluster."""

    PROCESS = "process"  # one worker process per worker (inline when workers == 1 or one job)
    INLINE = "inline"    # one after another in this process
    RAY = "ray"          # Ray tasks: the cluster at `ray_address`/RAY_ADDRESS, else a local instance


RAY_MISSING = "the ray executor needs Ray, an optional extra: pip install -e '.[ray]'"


class ExecutorUnavailable(RuntimeError):
    """The chosen executor's optional package is not installed."""


class JobsInterrupted(KeyboardInterrupt, Generic[R]):
    """Ctrl-C (or whatever raised KeyboardInterrupt: a SIGTERM handler, an `on_done`) stopped
    `Jobs.run`. `results`: in job order, each finished job's result and None for the rest;
    the worker processes are gone. A KeyboardInterrupt, so a caller that does not look
    inside still stops as it would on Ctrl-C."""

    def __init__(self, results: list[R | None]) -> None:
        super().__init__("interrupted")
        self.results = results


def require(executor: Executor | str) -> Executor:
    """`executor` as an Executor (ValueError if unknown), checked to be installed
    without importing it (ExecutorUnavailable): a command can refuse before any work."""
    chosen = Executor(executor)
    if chosen is Executor.RAY and importlib.util.find_spec("ray") is None:
        raise ExecutorUnavailable(RAY_MISSING)
    return chosen


def default_workers() -> int:
    """Worker processes when none is asked for: one per core, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


@dataclass(frozen=True)
class Jobs:
    """Where jobs run and how many at once.

    `executor`: an Executor or its name (ValueError if unknown). `workers`: worker
    processes (None: one per core, at most 8; 1 runs inline), or the CPUs of a local
    Ray instance (None: all cores). `ray_address`: the Ray cluster to join (None:
    RAY_ADDRESS where set, else a local instance). Whether the executor's package is
    installed is checked when jobs run (or first, with `require`). `cache`: a
    `harness.engine.run_cache.RunCache` that answers the sim jobs it has seen finish
    (`run` and `start`; None, the default: every job runs). `pool`: the worker processes
    every batch shares, set by `sharing` (None: each batch starts workers of its own)."""

    executor: Executor = Executor.PROCESS
    workers: int | None = None
    ray_address: str | None = field(default=None, repr=False)
    cache: RunCache | None = field(default=None, repr=False, compare=False)  # None: every job runs
    pool: ProcessPoolExecutor | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "executor", Executor(self.executor))
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    @property
    def width(self) -> int:
        """Jobs that run at once on this machine: `workers`, else one per core, at most 8."""
        return default_workers() if self.workers is None else self.workers

    @contextmanager
    def sharing(self) -> Iterator["Jobs"]:
        """These Jobs with one pool of `width` worker processes that every batch run or started
        within shares (`run`, `start`, and `start_call`, queued as a job), so batches that
        overlap (the review's canary rollouts beside its ablation) run on `width` workers in all
        rather than `width` each: on two cores, the review's 92 ablation runs took 13-27% more CPU
        on four workers than on two. Queued in the order submitted. The pool ends with the block
        (its workers killed, if the block raised). Inline and Ray Jobs, and Jobs already sharing
        a pool, are given as they are."""
        if self.executor is not Executor.PROCESS or self.width <= 1 or self.pool is not None:
            yield self
            return
        pool = ProcessPoolExecutor(max_workers=self.width, initializer=_worker_signals)
        try:
            yield dataclasses.replace(self, pool=pool)
        except BaseException:
            _stop_now(pool)  # an interrupted or failed block does not wait for the queued jobs
            raise
        pool.shutdown(wait=True)

    def run(self, work: Sequence[Job[R]], on_done: OnDone[R] | None = None) -> list[R]:
        """Each job's `run()` result, in job order; `on_done(index, job, result)` as each
        finishes, in completion order.

        A KeyboardInterrupt (Ctrl-C, or one `on_done` raises) stops every job still running
        or waiting and raises JobsInterrupted with the results of those that finished (process
        and inline; on Ray it propagates as raised)."""
        if not work:
            return []
        if self.cache is not None:
            return self.cache.run(work, on_done, self._run_all)
        return self._run_all(work, on_done)

    def _run_all(self, work: Sequence[Job[R]], on_done: OnDone[R] | None) -> list[R]:
        """`run` without the cache: every job runs."""
        if self.executor is Executor.RAY:
            try:  # Ray is an optional extra: imported only here
                from harness.engine.ray_jobs import run_on_ray
            except ImportError as exc:
                raise ExecutorUnavailable(f"{RAY_MISSING} ({exc})") from exc
            return run_on_ray(work, _longest_first(work), on_done, self.workers, self.ray_address)
        if self.executor is Executor.INLINE or self.width <= 1 or len(work) == 1:
            return _run_inline(work, on_done)
        if self.pool is not None:
            return _run_on(self.pool, work, on_done, shared=True)
        with ProcessPoolExecutor(max_workers=self.width, initializer=_worker_signals) as pool:
            return _run_on(pool, work, on_done, shared=False)

    def start(self, work: Sequence[Job[R]]) -> Callable[[], list[R]]:
        """Start `work` on worker processes now and return the call that waits for their
        results (in job order), so this process can do other work meanwhile (the review
        computes its Part 2/3 answers while the canary rollouts run). The call shuts the
        workers down. Inline and Ray jobs run at that call instead, as `run` would. With a
        cache, only the jobs it cannot answer start."""
        if self.cache is not None:
            return self.cache.start(work, self._start_all)
        return self._start_all(work)

    def start_call(self, fn: Callable[[Any], R], arg: Any) -> "Started[R]":
        """`fn(arg)` started now in a worker process of its own, beside whatever this process
        runs next (jobs included: one long computation of the parent's, such as the rank's LLM
        section, then overlaps the ablation's runs instead of following them). `fn` must pickle
        (a module's function); inline and Ray `Jobs`, and one worker, call it at `result()`.
        Within `sharing`, it is queued on the shared pool instead, as a job the batches after it
        wait behind: a process of its own beside `width` busy workers put one more process to
        work than there are cores."""
        if self.executor is not Executor.PROCESS or self.width <= 1:
            return Started(None, lambda: fn(arg))
        if self.pool is not None:
            queued = self.pool.submit(fn, arg)
            return Started(None, queued.result, queued.cancel)
        pool = ProcessPoolExecutor(max_workers=1, initializer=_worker_signals)
        try:
            future = pool.submit(fn, arg)
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
        return Started(pool, future.result)

    def _start_all(self, work: Sequence[Job[R]]) -> Callable[[], list[R]]:
        """`start` without the cache: every job starts."""
        if not work:
            return list
        if self.executor is not Executor.PROCESS or self.width <= 1 or len(work) <= 1:
            return lambda: self._run_all(work, None)
        shared = self.pool
        pool = shared or ProcessPoolExecutor(max_workers=self.width)
        futures: dict[int, Future[R]] = {}
        try:
            for i in _longest_first(work):
                futures[i] = pool.submit(_run, work[i])
        except BaseException:
            _let_go(pool, shared, futures.values())
            raise

        def results() -> list[R]:
            try:
                return [futures[i].result() for i in range(len(work))]
            finally:
                _let_go(pool, shared, futures.values())
        return results


class Started(Generic[R]):
    """A computation `Jobs.start_call` started on `pool` (None: it runs in this process, at
    `result()`, or on a shared pool, which `cancel` takes it off while it waits there):
    `result()` waits for it and lets the worker go. Used as a context manager, a block that
    raises ends it unfinished (its worker terminated; a shared pool's workers are ended by
    `Jobs.sharing`), as an interrupted run must not wait for it."""

    def __init__(self, pool: ProcessPoolExecutor | None, wait: Callable[[], R],
                 cancel: Callable[[], object] | None = None) -> None:
        self._pool = pool
        self._wait = wait
        self._cancel = cancel

    @staticmethod
    def nothing() -> "Started[None]":
        return Started(None, lambda: None)

    def then(self, fn: Callable[[Callable[[], R]], T]) -> "Started[T]":
        """The same computation, its result given by `fn(wait)` (e.g. a cache that stores it);
        use the returned one in place of this one."""
        return Started(self._pool, lambda: fn(self._wait), self._cancel)

    def result(self) -> R:
        try:
            return self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None

    def stop(self) -> None:
        if self._cancel is not None:
            self._cancel()
        if self._pool is not None:
            _stop_now(self._pool)
            self._pool = None

    def __enter__(self) -> "Started[R]":
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        if kind is not None:
            self.stop()


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

    def sim_inputs(self) -> tuple[TargetConfig, WorkloadConfig, int]:
        """What decides the run (`run_sim`'s arguments): the run cache's key."""
        return self.target_config(), self.workload_config(), self.seed

    def workload_config(self) -> WorkloadConfig:
        """The job's workload at its rate and duration."""
        return load_workload(self.workload).at_rate(self.rate_rps, self.duration_s)

    def target_config(self) -> TargetConfig:
        if framework_name(self.target):  # a real framework has no sim: only its design would run
            raise ConfigError(f"target '{self.target}' is a real serving framework: it runs live only (--mode live)")
        return resolve_target(self.target, self.overrides)


def _run(job: Job[R]) -> R:
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
        proc.join(timeout=1)
        if proc.is_alive():  # SIGTERM came before its initializer made it fatal (a loaded machine): end it
            proc.kill()
            proc.join(timeout=5)


def _let_go(pool: ProcessPoolExecutor, shared: ProcessPoolExecutor | None, futures: Any) -> None:
    """A batch is done with `pool`: a pool of its own is shut down (its jobs not started
    cancelled); of a shared pool, only this batch's jobs not started are cancelled."""
    if shared is None:
        pool.shutdown(cancel_futures=True)
        return
    for future in futures:
        future.cancel()  # (a no-op for a job running or done)


def _run_on(pool: ProcessPoolExecutor, work: Sequence[Job[R]], on_done: OnDone[R] | None,
            shared: bool) -> list[R]:
    """`Jobs.run` on `pool`'s worker processes, longest job first (JobsInterrupted as there:
    the pool's workers are ended, a shared pool's too). A job that raises: its error is
    raised, and this batch's jobs not started are cancelled in a shared pool (a pool of the
    batch's own is shut down by its caller)."""
    results: list[R | None] = [None] * len(work)
    futures: dict[Future[R], int] = {}
    try:
        for i in _longest_first(work):
            futures[pool.submit(_run, work[i])] = i
        for fut in as_completed(futures):
            i = futures[fut]
            result = results[i] = fut.result()
            if on_done:
                on_done(i, work[i], result)
    except KeyboardInterrupt:
        _stop_now(pool)
        raise JobsInterrupted(results) from None
    except BaseException:
        if shared:  # this batch's jobs not started (a pool of its own is its caller's to shut down)
            for fut in futures:
                fut.cancel()
        raise
    return cast("list[R]", results)  # every job has given its result by now


def _run_inline(work: Sequence[Job[R]], on_done: OnDone[R] | None) -> list[R]:
    """`Jobs.run` in this process, one job after another (JobsInterrupted as there)."""
    results: list[R] = []
    try:
        for i, job in enumerate(work):
            results.append(job.run())
            if on_done:
                on_done(i, job, results[i])
    except KeyboardInterrupt:
        raise JobsInterrupted([*results, *[None] * (len(work) - len(results))]) from None
    return results


def _longest_first(work: Sequence[object]) -> list[int]:
    """Job indices, longest first: the last to finish are short ones, so every worker stays busy to the end."""
    return sorted(range(len(work)), key=lambda i: -_weight(work[i]))


def _weight(job: object) -> float:
    """A job's scheduled requests, where its `workload` names a scenario; else 0 (first come)."""
    try:
        wl = load_workload(getattr(job, "workload"))
        return wl.duration_s * wl.peak_rps
    except Exception:
        return 0.0
