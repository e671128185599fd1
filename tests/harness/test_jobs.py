"""The job runner: one `Jobs` value says where jobs run, and the same jobs give the same
figures wherever they run.

Ray is an optional extra: the tests that start it skip without it, and a missing
Ray is simulated (an import that fails) to check the error names the extra.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.analysis.capacity.sim import Point
from harness.analysis.traffic import traffic
from harness.cli import app
from harness.engine import jobs as runner
from harness.engine.jobs import Executor, ExecutorUnavailable, Jobs, SimJob, default_workers

WALL_CLOCK = {"wall_s", "versions"}  # differ between any two runs, whatever runs them


def figures(doc: Any) -> Any:
    """A result's JSON without its wall-clock fields, at any depth."""
    if isinstance(doc, dict):
        return {k: figures(v) for k, v in doc.items() if k not in WALL_CLOCK}
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


def as_json(result: Any) -> Any:
    return figures(result if isinstance(result, dict) else result.to_json())


def small_jobs() -> list[Any]:
    """Two sim jobs and a capacity point (a duck-typed job returning a dict), a second each."""
    return [SimJob("naive", "steady", 1, duration_s=1.0, rate_rps=2000.0),
            SimJob("hardened", "spike", 2, duration_s=1.0, rate_rps=2000.0),
            Point("p", "hardened", (("gpus", 8),), traffic(2000.0, 1.0), seed=3)]


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import ray` fails, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "harness.engine.ray_jobs", raising=False)


def test_an_unknown_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="'dask'"):
        Jobs("dask")  # type: ignore[arg-type]  # what a caller passing a name gets
    with pytest.raises(ValueError, match="workers must be >= 1"):
        Jobs(workers=0)


def test_a_missing_ray_names_the_extra(no_ray: None) -> None:
    with pytest.raises(ExecutorUnavailable, match=r"pip install -e '\.\[ray\]'"):
        runner.require("ray")
    job = SimJob("naive", "steady", 1, duration_s=1.0)
    with pytest.raises(ExecutorUnavailable, match=r"pip install -e '\.\[ray\]'"):
        Jobs(Executor.RAY, 2).run([job, job])


def test_the_cli_refuses_a_missing_ray_before_any_work(no_ray: None) -> None:
    res = CliRunner().invoke(app, ["compare", "naive", "hardened", "--executor", "ray"])
    assert res.exit_code == 2, res.output
    assert "--executor ray: the ray executor needs Ray" in res.output
    assert "pip install -e '.[ray]'" in res.output


def test_the_cli_names_the_valid_executors() -> None:
    res = CliRunner().invoke(app, ["rank", "--executor", "dask"])
    assert res.exit_code == 2, res.output
    assert "--executor 'dask': valid are process, ray" in res.output


def test_jobs_is_one_immutable_value_with_a_local_default() -> None:
    jobs = Jobs()
    assert (jobs.executor, jobs.workers, jobs.ray_address) == (Executor.PROCESS, None, None)
    assert jobs.width == default_workers() == max(1, min(os.cpu_count() or 1, 8))
    assert Jobs("ray", 3) == Jobs(Executor.RAY, 3) and Jobs("ray", 3).width == 3  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        jobs.workers = 2  # type: ignore[misc]
    # Nothing process-wide to set: what a caller passes is what runs.
    assert not hasattr(runner, "configure") and not hasattr(runner, "_default")


def test_the_cli_builds_one_jobs_value_and_the_library_runs_on_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Jobs] = []
    real = Jobs.run

    def run(self: Jobs, work: Any, on_done: Any = None) -> Any:
        seen.append(self)
        return real(self, work, on_done)

    monkeypatch.setattr(Jobs, "run", run)
    args = ["compare", "naive", "hardened", "-w", "steady", "--duration", "1", "--rate", "2000", "-q"]
    res = CliRunner().invoke(app, [*args, "-j", "1", "--out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    assert seen == [Jobs(Executor.PROCESS, 1)]


def test_started_jobs_run_while_this_process_works_and_give_the_figures_of_run() -> None:
    jobs = small_jobs()
    waiting = Jobs(Executor.PROCESS, 2).start(jobs)
    inline = Jobs(Executor.INLINE).run(jobs)  # this process works meanwhile
    assert [as_json(r) for r in waiting()] == [as_json(r) for r in inline]
    assert [as_json(r) for r in Jobs(workers=2).start(jobs[:1])()] == [as_json(inline[0])]


def test_a_started_call_runs_in_a_worker_and_a_block_that_raises_stops_it_without_waiting() -> None:
    import time

    started = Jobs(workers=2).start_call(os.getpid, None)  # (os.getpid takes no argument: see below)
    with pytest.raises(TypeError):  # the call's own error comes back at result()
        started.result()
    pid = Jobs(workers=2).start_call(_pid_of, None).result()
    assert pid != os.getpid()  # it ran in another process
    assert Jobs(workers=1).start_call(_pid_of, None).result() == os.getpid()  # one worker: here, at result()
    t0 = time.perf_counter()
    sleeping = Jobs(workers=2).start_call(time.sleep, 30.0)
    workers = list(sleeping._pool._processes.values())  # type: ignore[union-attr]  # (to watch them end)
    with pytest.raises(RuntimeError):
        with sleeping:
            raise RuntimeError("the ablation failed")
    assert workers and all(_ended(w) for w in workers)  # its worker was ended...
    assert time.perf_counter() - t0 < 10  # ...not waited for


def _pid_of(_: object) -> int:
    return os.getpid()


def test_workers_import_the_project_from_its_root() -> None:
    ray_jobs = pytest.importorskip("harness.engine.ray_jobs")
    assert (ray_jobs.PROJECT_ROOT / "harness" / "engine" / "ray_jobs.py").is_file()
    local = ray_jobs.runtime_env(joined=False)["env_vars"]["PYTHONPATH"].split(os.pathsep)
    assert local[0] == str(ray_jobs.PROJECT_ROOT)
    joined = ray_jobs.runtime_env(joined=True)
    assert joined["working_dir"] == str(ray_jobs.PROJECT_ROOT)
    assert {".venv", ".git", "runs"} <= set(joined["excludes"])


@pytest.mark.slow
def test_ray_gives_the_process_pools_figures(local_ray: Any) -> None:
    jobs = small_jobs()
    pooled = Jobs(Executor.PROCESS, 2).run(jobs)
    seen: list[tuple[int, Any]] = []
    on_ray = Jobs(Executor.RAY, 2).run(jobs, on_done=lambda i, job, _res: seen.append((i, job)))
    assert local_ray.cluster_resources()["CPU"] == 2
    assert sorted(seen, key=lambda s: s[0]) == list(enumerate(jobs))  # each job reported once
    assert [as_json(r) for r in on_ray] == [as_json(r) for r in pooled]  # both in job order


@pytest.mark.slow
def test_a_plain_harness_invocation_runs_on_ray(tmp_path: Path) -> None:
    """`harness compare --executor ray` from another folder, with no PYTHONPATH or cluster
    set: its workers import the project, and its figures are the process pool's."""
    pytest.importorskip("ray")
    harness = Path(sys.executable).with_name("harness")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    docs = {}
    for executor in ("process", "ray"):
        out = tmp_path / f"{executor}.json"
        res = subprocess.run([str(harness), "compare", "naive", "hardened", "-w", "steady", "--duration", "1",
                              "--rate", "2000", "--executor", executor, "--no-cache", "-q", "--out", str(out)],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        docs[executor] = figures(json.loads(out.read_text()))
    assert docs["ray"] == docs["process"]


def _slow_start() -> None:
    import time

    time.sleep(0.5)  # a loaded machine: the stop's SIGTERM arrives before the worker's own handlers are set
    runner._worker_signals()


def test_a_stop_ends_a_worker_whose_sigterm_came_before_its_initializer() -> None:
    """A worker forked from a process with a SIGTERM handler runs that handler until its initializer
    restores the default: a SIGTERM then (the stop of a block that raised at once, on a busy machine)
    was swallowed and the worker slept on (seen in CI). The stop ends what SIGTERM did not."""
    import signal
    import time
    from concurrent.futures import ProcessPoolExecutor

    before = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        pool = ProcessPoolExecutor(max_workers=1, initializer=_slow_start)
        pool.submit(time.sleep, 30.0)
        workers = list(pool._processes.values())
        t0 = time.perf_counter()
        runner._stop_now(pool)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert workers and all(_ended(w) for w in workers)
    assert time.perf_counter() - t0 < 10


def _ended(proc: Any) -> bool:
    """Whether a worker process is gone: reaped here, or no longer a process at all. (In CI both
    stop tests once saw `is_alive()` stay True after SIGKILL and a 5 s join: its wait reads ECHILD
    as "running" when the child was reaped elsewhere in the test process.)"""
    if not proc.is_alive():
        return True
    try:
        os.kill(proc.pid, 0)
    except ProcessLookupError:
        return True
    return False


@dataclasses.dataclass(frozen=True)
class _Where:
    """A job that says which process ran it, after a pause (so that a batch's jobs spread over
    the workers there are)."""

    n: int
    pause_s: float = 0.05

    def run(self) -> tuple[int, int]:
        import time

        time.sleep(self.pause_s)
        return self.n, os.getpid()


@dataclasses.dataclass(frozen=True)
class _Fails:
    def run(self) -> None:
        raise ValueError("this job fails")


def test_batches_run_and_started_within_sharing_share_one_pool_of_width_workers() -> None:
    jobs = Jobs(workers=2)
    with jobs.sharing() as shared:
        assert shared.pool is not None and shared == jobs and jobs.pool is None
        waiting = shared.start([_Where(i) for i in range(6)])  # queued first (the review's canary)
        ran = shared.run([_Where(i) for i in range(6, 12)])      # beside it (the ablation)
        started = waiting()
        with pytest.raises(ValueError, match="this job fails"):  # a job's error, as without sharing
            shared.run([_Fails(), _Where(12)])
        after = shared.run([_Where(13), _Where(14)])  # and the pool still serves the next batch
    assert [n for n, _ in started] == list(range(6)) and [n for n, _ in ran] == list(range(6, 12))
    assert [n for n, _ in after] == [13, 14]
    pids = {pid for _, pid in started + ran + after}
    assert len(pids) <= 2 and os.getpid() not in pids  # two workers in all, not two a batch
    # Without it, a started batch and a batch run meanwhile each have workers of their own.
    waiting = jobs.start([_Where(i) for i in range(6)])
    ran = jobs.run([_Where(i) for i in range(6, 12)])
    assert len({pid for _, pid in waiting() + ran}) > 2
    for inline in (Jobs(Executor.INLINE), Jobs(workers=1)):  # nothing to share: given as they are
        with inline.sharing() as same:
            assert same is inline


def test_a_call_started_within_sharing_is_queued_on_the_shared_pool_and_a_stop_takes_it_off() -> None:
    """Within `sharing`, `start_call` runs on the shared workers (no process of its own beside
    them), ahead of the batches queued after it; a stop takes a call still waiting off the queue."""
    import time

    with Jobs(workers=2).sharing() as shared:
        assert shared.pool is not None
        call = shared.start_call(_pid_of, None)
        ran = shared.run([_Where(i) for i in range(4)])
        pid = call.result()
        workers = set(shared.pool._processes)
        assert pid in workers and {p for _, p in ran} <= workers and len(workers) == 2
        blockers = [shared.pool.submit(time.sleep, 0.5) for _ in range(2)]  # both workers busy...
        waiting = shared.start_call(_pid_of, None)
        waiting.stop()  # ...so the call still waits in the queue, and is taken off it
        assert waiting._cancel is not None and all(b.result() is None for b in blockers)
        with pytest.raises(CancelledError):
            waiting.result()


def test_a_block_that_raises_within_sharing_ends_the_shared_workers_without_waiting() -> None:
    import time

    t0 = time.perf_counter()
    with pytest.raises(RuntimeError):
        with Jobs(workers=2).sharing() as shared:
            shared.start([_Where(i, pause_s=30.0) for i in range(4)])
            time.sleep(0.2)  # (the workers start)
            assert shared.pool is not None
            workers = list(shared.pool._processes.values())
            raise RuntimeError("the ablation failed")
    assert workers and all(_ended(w) for w in workers)
    assert time.perf_counter() - t0 < 10
