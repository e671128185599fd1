"""Live mode end to end, as a user runs it: `harness run TARGET --mode live`.

Each test starts real processes (the CLI, which starts a target host: a layer-4
proxy, aiohttp API servers and MLP workers on the CPU) and sends real HTTP on
127.0.0.1. Runs are a few seconds of traffic; the two targets of a test run at
the same time to keep the wall time down. These tests must sleep on the wall
clock; their bounds are loose.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.engine.sim import run_sim
from harness.results import RunResult, load_result
from targets.spec import resolve_target
from workloads.loader import load_workload

# Cold runs (--warmup 0): these tests time faults and signals from the start; warm-up has its own (test_warmup).
QUICK = ["--device", "cpu", "-q", "--set", "client_timeout_s=0.5", "--set", "client_retries=1", "--warmup", "0"]


def _harness(*args: str) -> subprocess.Popen:
    # SIGINT back to its default: a shell may start background jobs with it ignored.
    return subprocess.Popen([sys.executable, "-c", "from harness.cli import app; app()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _finish(proc: subprocess.Popen, timeout_s: float = 90.0) -> str:
    out, errs = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, errs[-3000:]
    return out


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


@pytest.mark.live
def test_naive_and_hardened_run_live_and_write_valid_results(tmp_path: Path) -> None:
    runs = {t: _harness("run", t, "--mode", "live", "-w", "steady", "--scale", "0.02", "--duration", "2",
                        "--out", str(tmp_path / f"{t}.json"), *QUICK) for t in ("naive", "hardened")}
    for proc in runs.values():
        _finish(proc)
    sim = run_sim(resolve_target("naive"), load_workload("steady").scaled(1 / 32, 2.0)).to_json()["summary"]
    for target in runs:
        doc = load_result(tmp_path / f"{target}.json")
        assert isinstance(doc, RunResult)
        s = doc.summary
        assert doc.mode == s.mode == "live" and not s.partial
        assert set(doc.to_json()["summary"]) == set(sim) | {"live"}  # the same document as sim, plus the live block
        r = s.requests
        assert 450 < r.unique < 800  # 312.5 req/s (scale 0.02 snapped to 1/32) for 2 s
        # Naive runs at utilisation 0.98 (no headroom): on a busy machine a few slow
        # batches tip it into timeouts, so only hardened must answer nearly all.
        assert r.succeeded >= (0.5 if target == "naive" else 0.95) * r.unique and r.unfinished == 0
        live = s.live
        assert live["scale"]["effective"] == pytest.approx(1 / 32) and live["scale"]["requested"] == 0.02
        # Every unique request was sent (its first attempt measured) or refused by the hardened
        # client's own adaptive throttle before any attempt (requests.throttled, part of shed):
        # under load 22 of 620 were, and sends_measured read 598 (targets.client.Client.start)
        assert live["send_lag_s"]["p99"] is not None and live["sends_measured"] + r.throttled == r.unique
        assert target == "hardened" or r.throttled == 0  # naive's client has no throttle
        assert live["executors"]["batches"] == s.gpu.batches > 0  # real forward passes
        assert live["host"]["model"] == "mlp" and live["host"]["device"] == "cpu"
        assert sum(live["proxy"]["per_api_server"]) == live["proxy"]["accepted"] >= 10
        assert live["balancer"]["kind"] == "python" and live["balancer"]["connections"] == live["proxy"]["accepted"]
        assert 0 < s.gpu.utilization <= 1.0 and live["batch_s_mean"] > 0  # the host's snapshot arrived
    naive, hardened = (load_result(tmp_path / f"{t}.json").summary for t in runs)
    assert naive.gpu.count == 1 and hardened.gpu.count == 3  # sizing rules at 312.5 req/s
    assert hardened.goodput_ratio > 0.9


OUTAGE = """
name = "outage-test"
[[phases]]
kind = "constant"
duration_s = 3
rate_rps = 200
[[faults]]
kind = "gpu-down"
at_s = 1.0
duration_s = 1.0
fraction = 0.5
[[tenants]]
name = "a"
share = 0.5
connections = 4
[[tenants]]
name = "b"
share = 0.5
connections = 4
"""


@pytest.mark.live
def test_gpu_outage_live_hardened_loses_nothing_naive_loses_in_flight(tmp_path: Path) -> None:
    # Two GPUs of 80 req/s (B = 8 in 100 ms) under 200 req/s: both are always busy,
    # so the GPU killed at 1 s certainly has a batch in flight.
    wl = tmp_path / "outage.toml"
    wl.write_text(OUTAGE)
    knobs = ["--set", "gpus=2", "--set", "batch_size=8", "--set", "api_servers=1"]
    runs = {t: _harness("run", t, "--mode", "live", "-w", str(wl), "--scale", "1", *knobs,
                        "--out", str(tmp_path / f"{t}.json"), *QUICK) for t in ("naive", "hardened")}
    for proc in runs.values():
        _finish(proc)
    naive, hardened = (load_result(tmp_path / f"{t}.json") for t in runs)
    for doc in (naive, hardened):
        assert [e["event"] for e in doc.events] == ["gpu-down", "gpu-up"]
        assert doc.events[0]["gpus"] == 1 and 0.9 < doc.events[0]["t_s"] < 1.5
    n, h = naive.summary, hardened.summary
    assert n.requests.lost >= 1 and n.gpu.redispatched == 0
    assert n.attempt_status.get("timeout", 0) >= n.requests.lost  # found out by timing out
    assert h.requests.lost == 0 and h.gpu.redispatched >= 1


@pytest.mark.live
def test_ctrl_c_and_sigterm_leave_a_valid_partial_result_and_no_child(tmp_path: Path) -> None:
    sigs = {"int": signal.SIGINT, "term": signal.SIGTERM}
    runs = {k: _harness("run", "hardened", "--mode", "live", "-w", "steady", "--scale", "0.02", "--duration", "60",
                        "--out", str(tmp_path / f"{k}.json"), *QUICK) for k in sigs}
    hosts: dict[str, list[int]] = {}
    deadline = time.monotonic() + 30
    while len(hosts) < len(runs) and time.monotonic() < deadline:
        for k, proc in runs.items():
            if k not in hosts and (kids := _children(proc.pid)):
                hosts[k] = kids
        time.sleep(0.1)
    assert len(hosts) == len(runs), "no target host started"
    time.sleep(8.0)  # the host starts and warms every batch size (about 4 s alone), then traffic flows
    for k, proc in runs.items():
        proc.send_signal(sigs[k])
    for k, proc in runs.items():
        _finish(proc, timeout_s=30)
        s = load_result(tmp_path / f"{k}.json").summary
        assert s.partial is True and s.mode == "live" and s.requests.attempts > 0
        assert s.end_s < 30 and s.requests.unfinished > 0  # stopped long before 60 s
        for pid in hosts[k]:
            assert not Path(f"/proc/{pid}").exists(), f"host {pid} outlived its run"


def test_url_targets_outside_loopback_are_refused_without_allow_remote() -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    runner = CliRunner()
    for url in ("http://10.1.2.3:8000/predict", "http://example.com/predict"):
        result = runner.invoke(app, ["run", url, "--mode", "live", "-q"])
        assert result.exit_code == 2 and "--allow-remote" in result.output, result.output
    result = runner.invoke(app, ["run", "https://127.0.0.1:1/predict", "--mode", "live", "-q"])
    assert result.exit_code == 2 and "only http://" in result.output
    result = runner.invoke(app, ["run", "naive", "--mode", "warp", "-q"])
    assert result.exit_code == 2 and "valid are sim, live" in result.output


def test_scale_keeps_the_designs_per_gpu_rate() -> None:
    from harness.live.scaling import default_scale, scale_for_live, snap_scale

    naive, hardened = resolve_target("naive"), resolve_target("hardened")
    # The doc's fleet is ceil(10,000 x 0.1 / 32) = 32 GPUs: scales snap to k/32.
    assert snap_scale(naive, 0.02) == snap_scale(hardened, 0.02) == 1 / 32
    assert snap_scale(naive, 0.001) == 1 / 32 and snap_scale(naive, 0.5) == 0.5
    assert snap_scale(naive, default_scale(load_workload("steady"))) == 1 / 32
    small, info = scale_for_live(naive, 1 / 32)
    assert (small.fleet_gpus, small.api_servers, small.peak_qps) == (1, 1, 312.5)
    assert info.per_gpu_rps_live == info.per_gpu_rps_design == 312.5
    assert (info.per_server_rps_design, info.per_server_rps_live) == (1000, 312.5)
    # Hardened sizes by its own rule at the scaled peak: ceil(0.977 / 0.8) + 1 spare.
    assert scale_for_live(hardened, 1 / 32)[0].fleet_gpus == 3
    half, _ = scale_for_live(naive, 0.5)
    assert (half.fleet_gpus, half.api_servers) == (16, 5)
    fixed, _ = scale_for_live(resolve_target("naive:gpus=40"), 0.25)
    assert fixed.fleet_gpus == 10
    with pytest.raises(ValueError):
        snap_scale(naive, 0)


def test_live_plan_snaps_the_scale_and_keeps_the_workloads_shape() -> None:
    from harness.live.plan import parse_url, plan_live

    plan = plan_live("naive", "steady", seed=2, scale=0.02, duration_s=2.0)
    assert plan.scale == 1 / 32 and plan.asked_scale == 0.02 and plan.scaling.requested == 0.02
    assert plan.config.fleet_gpus == 1 and plan.workload.duration_s == 2.0
    assert plan.workload.peak_rps == pytest.approx(load_workload("steady").peak_rps / 32)
    assert plan.spec is not None and plan.spec.tenants == [t.name for t in plan.workload.tenants]
    # --rate asks for a peak; hardened snaps from naive's fleet in a compare, as A does.
    asked = plan_live("hardened", "steady", rate_rps=625.0, scale_from=resolve_target("naive"))
    assert asked.scale == 2 / 32 and asked.config.fleet_gpus == 4  # ceil(625 x 0.1 / 32 / 0.8) + 1 spare
    # --scale with --rate: the scale's fleet, driven at the rate (past its knee)
    past = plan_live("hardened", "steady", scale=0.35, rate_rps=8600.0)
    alone = plan_live("hardened", "steady", scale=0.35)
    assert past.config == alone.config and past.scale == alone.scale
    assert past.workload.peak_rps == pytest.approx(8600.0) and alone.workload.peak_rps < 4000
    url = plan_live("http://127.0.0.1:9/predict", "steady", scale=0.01)
    assert url.url == ("127.0.0.1", 9, "/predict") and url.spec is None and url.scale == 0.01
    with pytest.raises(ValueError, match="--allow-remote"):
        parse_url("http://10.1.2.3:8000/predict", allow_remote=False)


@pytest.mark.live
def test_an_unreachable_url_exits_1_saying_why_before_sending_anything() -> None:
    proc = _harness("run", "http://127.0.0.1:1/predict", "--mode", "live", "--duration", "2")
    out, errs = proc.communicate(timeout=60)
    text = " ".join(errs.split())
    assert proc.returncode == 1, errs
    assert "cannot connect to 127.0.0.1:1: Connection refused" in text and "no request was sent" in text


REFUSER = """
import sys
from aiohttp import web

async def predict(request):
    return web.json_response({"error": "invalid input", "reason": "field 'input' is missing"}, status=422)

app = web.Application()
app.router.add_post("/predict", predict)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""


@pytest.mark.live
def test_a_run_where_nothing_succeeded_exits_1_with_the_servers_reason(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", REFUSER, str(port)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        template = tmp_path / "t.json"
        template.write_text('{"tenant": "{{tenant}}", "inputs": {{input}}}')
        out = tmp_path / "r.json"
        proc = _harness("run", f"http://127.0.0.1:{port}/predict", "--mode", "live", "--duration", "1",
                        "--rate", "30", "--template", str(template), "-q", "--out", str(out), "--warmup", "0.5")
        _, errs = proc.communicate(timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=10)
    text = " ".join(errs.split())
    assert proc.returncode == 1, errs
    assert "nothing succeeded: HTTP 422" in text and "invalid input: field 'input' is missing" in text
    assert "INVALID" in text
    s = load_result(out).summary
    assert s.valid is False and s.invalid_reasons[0].startswith("nothing succeeded: HTTP 422")
    # The warm-up's 422s are its own (live.warmup), not counted with the run's.
    assert s.live["http_status"] == {"422": s.requests.attempts} and s.requests.succeeded == 0
    assert s.live["warmup"]["requests"] > 0 and s.live["warmup"]["succeeded"] == 0
    assert s.live["http_errors"]["422"] == "invalid input: field 'input' is missing"
