"""Framework targets in the harness: planning a live run, the host's answers from its books, the CLI.

No framework server runs here (tests/harness/test_frameworks_live.py starts them).
"""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.engine.jobs import SimJob
from harness.live.framework_host import FrameworkProcess, FrameworkSpec, host_process
from harness.live.host import HostSpec
from harness.live.host_process import HostProcess
from harness.live.plan import plan_live
from targets.frameworks.books import Books, Field
from workloads.config_files import ConfigError

runner = CliRunner()


def test_a_framework_plan_serves_hardeneds_fleet_at_the_same_scale() -> None:
    ours = plan_live("hardened", "spike", scale=0.1)
    theirs = plan_live("litserve:timeout=0.2", "spike", scale=0.1)
    assert isinstance(theirs.spec, FrameworkSpec) and isinstance(ours.spec, HostSpec)
    assert theirs.scale == ours.scale == 3 / 32                  # snapped alike: the same traffic
    assert theirs.workload.peak_rps == ours.workload.peak_rps
    assert theirs.spec.workers == ours.config.fleet_gpus == 5
    assert theirs.spec.batch_size == 32 and theirs.pad_s == 0.1
    assert theirs.spec.knobs["timeout"] == 0.2
    assert "no-admission-control" not in theirs.spec.flaws and "no-tenant-limits" in theirs.spec.flaws
    assert theirs.spec.tenants == [t.name for t in theirs.workload.tenants]
    assert "5 worker(s), batches up to 32" in theirs.spec.describe()


def test_a_bentoml_plan_passes_its_knobs_to_its_server() -> None:
    plan = plan_live("bentoml:max_latency_ms=250", "spike", scale=0.1, overrides={"max_concurrency": 64})
    assert isinstance(plan.spec, FrameworkSpec) and plan.spec.framework == "bentoml"
    assert plan.spec.workers == plan_live("hardened", "spike", scale=0.1).config.fleet_gpus == 5
    assert plan.spec.knobs["max_latency_ms"] == 250 and plan.spec.knobs["max_concurrency"] == 64
    assert plan.spec.changed == {"max_latency_ms": 250, "max_concurrency": 64}
    assert "no-admission-control" not in plan.spec.flaws and "pool-refresh-fails-calls" in plan.spec.flaws


def test_the_live_run_starts_the_framework_or_the_harness_host() -> None:
    assert isinstance(host_process(plan_live("ray-serve", "steady", scale=0.05).spec), FrameworkProcess)
    assert isinstance(host_process(plan_live("hardened", "steady", scale=0.05).spec), HostProcess)


def test_sample_stats_and_slowdown_come_from_the_books(tmp_path) -> None:
    proc = FrameworkProcess(FrameworkSpec("litserve", {}, workers=2, batch_size=32, pad_to_s=0.1))
    proc.folder = tmp_path  # as start() leaves it, without a server
    api, worker = Books(tmp_path, "api"), Books(tmp_path, "worker")
    api.add(Field.RECEIVED, 40)
    api.add(Field.ANSWERED, 30)
    worker.batch(8, 0.1, 50.0)
    (tmp_path / "worker-1.bin").write_bytes(worker.path.read_bytes())  # a second worker: one batch of 8
    worker.batch(12, 0.1, 51.0)

    async def ask():
        return (await proc.request("sample"), await proc.request("stats"),
                await proc.request("slowdown", factor=2.0))

    sample, stats, slow = asyncio.run(ask())
    assert sample == {"queue_depth": 10, "busy_gpu_s": pytest.approx(0.3), "alive": 2}
    pool = stats["snapshot"]["pool"]
    assert (pool["batches"], pool["items"], pool["largest_batch"], pool["gpus"]) == (3, 28, 12, 2)
    assert pool["last_done_s"] == 51.0
    assert stats["snapshot"]["received"] == 40 and slow == {"factor": 2.0}
    assert (tmp_path / "slowdown").read_text() == "2.0"
    with pytest.raises(RuntimeError, match="takes no GPU-down fault"):
        asyncio.run(proc.request("kill", fraction=0.5))
    proc.kill()  # no process: only the folder goes
    assert not tmp_path.exists()


def test_a_framework_cannot_run_in_sim() -> None:
    with pytest.raises(ConfigError, match="runs live only"):
        SimJob("litserve", "steady").target_config()


@pytest.mark.parametrize("argv, error", [
    (["run", "litserve", "-w", "steady"], "'litserve' is a real serving framework: it runs live only"),
    (["compare", "hardened", "ray-serve", "-w", "spike"], "B 'ray-serve' is a real serving framework"),
    (["run", "litserve:nope=1", "--mode", "live"], "key 'nope': not a litserve knob"),
    (["run", "hardened", "--set", "max_queued_requests=5"], "is a framework's knob, not this target's"),
    (["run", "bentoml", "-w", "steady"], "'bentoml' is a real serving framework: it runs live only"),
    (["run", "bentoml", "--mode", "live", "--set", "max_concurrency=0"], "key 'max_concurrency'"),
    (["compare", "hardened", "bentoml:max_latency_ms=-5", "--mode", "live"], "key 'max_latency_ms'"),
    (["run", "hardened", "--set", "max_latency_ms=250"], "is a framework's knob, not this target's"),
])
def test_the_cli_refuses_what_a_framework_cannot_do(argv, error) -> None:
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert error in " ".join(res.output.split()), res.output


def test_targets_lists_the_frameworks_flaws_and_knobs() -> None:
    import io

    from rich.console import Console

    from harness.cli.frameworks import render_frameworks

    res = runner.invoke(app, ["targets", "--knobs"])
    assert res.exit_code == 0 and "ray-serve" in res.output, res.output
    wide = Console(width=240, file=io.StringIO())
    render_frameworks(wide, knobs=True)
    text = wide.file.getvalue()
    for needle in ("litserve", "ray-serve", "no-admission-control", "clock-cut-batches", "max_queued_requests",
                   "workers_per_device", "tuned: litserve:timeout=0.2,batch_timeout=0.01,num_api_servers=1",
                   "bentoml", "max_latency_ms", "pool-refresh-fails-calls", "per-server-queues"):
        assert needle in text, needle


def test_a_framework_review_plans_each_declared_flaw_it_still_has() -> None:
    from harness.analysis.review.frameworks import plan_trials

    trials = {t.flaw.id: t for t in plan_trials("ray-serve")}
    assert trials["no-admission-control"].fixed == "ray-serve:max_queued_requests=100"
    assert trials["no-admission-control"].scenarios == ("spike", "slowdown")  # gpu-outage: no GPU-down fault here
    assert trials["clock-cut-batches"].fixed == "ray-serve:batch_wait_timeout_s=0.1"
    assert trials["no-tenant-limits"].skipped == "no knob of the framework fixes it"
    tuned = {t.flaw.id: t for t in plan_trials("litserve:timeout=0.2")}
    assert "no-admission-control" not in tuned  # its knob already fixes it
    assert tuned["no-failure-handling"].fixed == "litserve:timeout=0.2,restart_workers=true"
    assert tuned["no-failure-handling"].skipped.startswith("no bad day a framework target can run")


def test_a_bentoml_review_measures_the_flaws_its_knobs_fix() -> None:
    from harness.analysis.review.frameworks import plan_trials

    trials = {t.flaw.id: t for t in plan_trials("bentoml")}
    assert trials["no-admission-control"].fixed == "bentoml:max_latency_ms=250"
    assert trials["no-admission-control"].scenarios == ("spike", "slowdown")  # gpu-outage: no GPU-down fault
    assert trials["pool-refresh-fails-calls"].fixed == "bentoml:runner_max_requests=1000000000"
    assert trials["pool-refresh-fails-calls"].scenarios == ("steady", "spike")
    assert trials["per-server-queues"].skipped == "no knob of the framework fixes it"
    tuned = plan_trials("bentoml:max_latency_ms=250,runner_max_requests=1000000000")
    assert {t.flaw.id for t in tuned} == {"per-server-queues", "blind-retries", "no-tenant-limits", "fixed-batch-time"}


def test_review_scale_is_for_framework_targets_only() -> None:
    res = runner.invoke(app, ["review", "hardened", "--scale", "0.1"])
    assert res.exit_code == 2 and "--scale applies to a framework target only" in res.output


@pytest.mark.parametrize("duration_s, warmup_s", [(2.0, 0.5), (None, None)])
def test_a_framework_review_cuts_each_day_to_its_duration_and_warms_as_asked(duration_s, warmup_s) -> None:
    """`harness review FRAMEWORK --duration S --warmup W`: every planned run is S long (else the live
    shortening, which keeps the spike whole) after a W s warm-up (else the default)."""
    from harness.analysis.review.frameworks import review_framework
    from harness.live.warmup import DEFAULT_WARMUP_S

    planned = []

    def first_only(plan):
        planned.append(plan)
        raise KeyboardInterrupt  # stops the review: the rest are skipped, nothing starts

    trials = review_framework("ray-serve", scale=0.02, warmup_s=warmup_s, run_one=first_only, duration_s=duration_s)
    assert all(t.result is None for t in trials) and len(planned) == 1
    (plan,) = planned
    assert plan.warmup_s == (DEFAULT_WARMUP_S if warmup_s is None else warmup_s)
    if duration_s is None:
        assert plan.workload.duration_s > 10  # the spike kept whole, with calm before and after
    else:
        assert plan.workload.duration_s == duration_s


def test_review_duration_and_warmup_are_for_framework_targets_only() -> None:
    for option in (["--duration", "2"], ["--warmup", "0.5"]):
        res = runner.invoke(app, ["review", "hardened", *option])
        assert res.exit_code == 2 and f"{option[0]} applies to a framework target only" in res.output, res.output


def test_a_framework_review_of_one_flaw_runs_only_its_days() -> None:
    from harness.analysis.review.frameworks import review_framework

    planned = []

    def record(plan):
        planned.append((plan.target, plan.workload.name))
        raise KeyboardInterrupt

    trials = review_framework("ray-serve", scale=0.02, run_one=record, duration_s=1.0, flaws=["clock-cut-batches"])
    assert [t.flaw.id for t in trials] == ["clock-cut-batches"]
    assert planned == [("ray-serve", "steady")]
    with pytest.raises(ValueError, match="--flaw per-server-queues: ray-serve has no such flaw"):
        review_framework("ray-serve", run_one=record, flaws=["per-server-queues"])
    res = runner.invoke(app, ["review", "hardened", "--flaw", "blind-retries"])
    assert res.exit_code == 2 and "--flaw applies to a framework target only" in res.output, res.output
