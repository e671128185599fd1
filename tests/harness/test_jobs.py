"""The job runner's executors: the same jobs give the same figures wherever they run.

Ray is an optional extra: the tests that start it skip without it, and a missing
Ray is simulated (an import that fails) to check the error names the extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.analysis.capacity.sim import Point
from harness.analysis.traffic import traffic
from harness.cli import app
from harness.engine import jobs as runner
from harness.engine.jobs import Executor, ExecutorUnavailable, SimJob, run_jobs

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


@pytest.fixture
def local_ray(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The ray executor on a local instance, stopped after the test."""
    ray = pytest.importorskip("ray")
    from harness.engine import ray_jobs

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    yield ray
    ray_jobs.shutdown()


def test_an_unknown_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="'dask'"):
        run_jobs([], executor="dask")


def test_a_missing_ray_names_the_extra(no_ray: None) -> None:
    with pytest.raises(ExecutorUnavailable, match=r"pip install -e '\.\[ray\]'"):
        runner.require("ray")
    job = SimJob("naive", "steady", 1, duration_s=1.0)
    with pytest.raises(ExecutorUnavailable, match=r"pip install -e '\.\[ray\]'"):
        run_jobs([job, job], 2, executor=Executor.RAY)


def test_the_cli_refuses_a_missing_ray_before_any_work(no_ray: None) -> None:
    res = CliRunner().invoke(app, ["compare", "naive", "hardened", "--executor", "ray"])
    assert res.exit_code == 2, res.output
    assert "--executor ray: the ray executor needs Ray" in res.output
    assert "pip install -e '.[ray]'" in res.output


def test_the_cli_names_the_valid_executors() -> None:
    res = CliRunner().invoke(app, ["rank", "--executor", "dask"])
    assert res.exit_code == 2, res.output
    assert "--executor 'dask': valid are process, ray" in res.output


def test_configure_sets_the_default_and_checks_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_default", Executor.PROCESS)
    runner.configure("inline")
    assert runner._default is Executor.INLINE
    with pytest.raises(ValueError):
        runner.configure("dask")
    assert runner._default is Executor.INLINE


def test_started_jobs_run_while_this_process_works_and_give_run_jobs_figures() -> None:
    jobs = small_jobs()
    waiting = runner.start_jobs(jobs, workers=2, executor="process")
    inline = run_jobs(jobs, executor="inline")  # this process works meanwhile
    assert [as_json(r) for r in waiting()] == [as_json(r) for r in inline]
    assert [as_json(r) for r in runner.start_jobs(jobs[:1], workers=2)()] == [as_json(inline[0])]


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
    pooled = run_jobs(jobs, 2, executor=Executor.PROCESS)
    seen: list[tuple[int, Any]] = []
    on_ray = run_jobs(jobs, 2, on_done=lambda i, job, _res: seen.append((i, job)), executor=Executor.RAY)
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
                              "--rate", "2000", "--executor", executor, "-q", "--out", str(out)],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        docs[executor] = figures(json.loads(out.read_text()))
    assert docs["ray"] == docs["process"]
