"""Jobs as Ray tasks: the process pool's jobs and seeds, spread over a cluster.

`run_on_ray` joins the cluster at the address `Jobs` names, else at `RAY_ADDRESS`
when it is set, else starts a local instance with one CPU per worker. The connection then stays up for the
rest of the process: rank, review and capacity call the runner many times, and
a start costs seconds. Ray's own exit hook closes it; `shutdown()` closes it
sooner, and only if this module opened it (a `ray.init` the caller made is
left as found).

Workers must import this project. A local instance's workers run in this
folder with this interpreter; its root goes on their PYTHONPATH, so a checkout
that is not installed imports too. A joined cluster gets the project folder as
its `working_dir`, which Ray uploads (without the venv, git data and results).

Only `harness.engine.jobs` imports this module (`Jobs.run`), and only when the ray
executor is chosen: Ray is an optional extra (`pip install -e '.[ray]'`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, TypeVar, cast

import ray

__all__ = ["connect", "run_on_ray", "runtime_env", "shutdown"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Never uploaded to a joined cluster: environments, git data, results and caches.
NOT_UPLOADED = (".venv", ".git", "runs", "**/__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis")

_opened = False  # whether this module's ray.init made the current connection

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Job(Protocol[R_co]):
    """`harness.engine.jobs.Job`, restated: that module imports this one, not the other way."""

    def run(self) -> R_co: ...


def runtime_env(joined: bool) -> dict[str, Any]:
    """What workers need to import this project: the folder uploaded to a joined
    cluster, or the folder on PYTHONPATH for a local instance (which shares this disk)."""
    if joined:
        return {"working_dir": str(PROJECT_ROOT), "excludes": list(NOT_UPLOADED)}
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


def connect(workers: int | None, address: str | None) -> None:
    """Join the cluster at `address`, else at RAY_ADDRESS, else start a local instance of `workers`
    CPUs (default: all cores); a no-op when already connected (the first choice holds)."""
    global _opened
    if ray.is_initialized():
        return
    quiet: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, runtime_env=runtime_env(joined=True), **quiet)
    else:
        # "local": a new instance, even where `ray start` left one that ray.init() would join.
        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, runtime_env=runtime_env(joined=False),
                 **quiet)
    _opened = True


def shutdown() -> None:
    """Close the connection `run_on_ray` opened (stopping a local instance); no-op otherwise."""
    global _opened
    if _opened:
        ray.shutdown()
        _opened = False


@ray.remote(num_cpus=1)
def _run(job: Job[object]) -> object:
    return job.run()


def run_on_ray(work: Sequence[Job[R]], order: Sequence[int], on_done: Callable[[int, Job[R], R], None] | None,
               workers: int | None, address: str | None) -> list[R]:
    """Each job's `run()` result in job order, submitted in `order` (longest first);
    `on_done(index, job, result)` as each completes. A job's exception is raised
    here as Ray's RayTaskError, an instance of the job's own exception type too.
    `workers` sizes a local instance (default: all cores); a joined cluster (`address`,
    else RAY_ADDRESS) has its own. The first call's choice holds for the process."""
    connect(workers, address)
    refs: dict[ray.ObjectRef[object], int] = {_run.remote(work[i]): i for i in order}
    results: dict[int, R] = {}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            i = refs[done[0]]
            result = results[i] = cast(R, ray.get(done[0]))  # what work[i].run() returned
            if on_done:
                on_done(i, work[i], result)
    finally:
        for ref in pending:  # a failed job or an interrupt: free the cluster of the rest
            ray.cancel(ref)
    return [results[i] for i in range(len(work))]
