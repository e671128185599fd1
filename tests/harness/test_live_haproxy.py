"""Live runs behind HAProxy (`--balancer haproxy`): the host runs it in front of its API servers,
the result says what it counted (`live.balancer`), and no HAProxy outlives its host, stopped or
killed. Real processes on loopback, a few seconds of traffic."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.live.host import HostSpec
from harness.live.host_process import HostProcess
from harness.results import load_result
from targets.http.haproxy import HaproxyPolicy
from targets.http.haproxy_proc import HaproxyBalancer, haproxy_path
from targets.spec import resolve_target

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(haproxy_path() is None, reason="haproxy is not installed (Debian's `haproxy` "
                                 "package; .ci/run installs it)")]

QUICK = ["--device", "cpu", "-q", "--set", "client_timeout_s=0.5", "--set", "client_retries=1", "--warmup", "1"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _gone_within(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("target, mode", [("naive", "tcp"), ("hardened", "http")])
def test_a_live_run_behind_haproxy_reports_its_stats_and_leaves_nothing(tmp_path: Path, target: str,
                                                                        mode: str) -> None:
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", target, "--mode", "live", "-w", "steady", "--scale", "0.02",
                                   "--duration", "2", "--balancer", "haproxy", "--out", str(out), *QUICK])
    assert res.exit_code == 0, res.output
    s = load_result(out).summary
    b = s.live["balancer"]
    assert b["kind"] == "haproxy" and b["version"].startswith("2.") and b["policy"]["mode"] == mode
    assert b["connections"] >= 1 and b["bytes_in"] > 0 and "error" not in b
    assert s.requests.succeeded >= 0.5 * s.requests.unique
    if mode == "http":  # requests counted from the run's start: the run's own traffic
        assert b["requests"] == sum(s.live["http_status"].values())
    assert s.live["proxy"] is None  # the project's proxy did not run
    assert _gone_within(b["pid"], 5.0), "HAProxy outlived its run"


async def test_a_killed_host_takes_its_haproxy_with_it_and_the_next_start_its_folder() -> None:
    cfg = resolve_target("naive", {"gpus": 1, "api_servers": 2, "batch_size": 4})
    host = HostProcess(HostSpec(config=cfg.model_dump(mode="json"), device="cpu", balancer="haproxy"))
    ready = await host.start()
    pid = ready["balancer"]["pid"]
    folder = Path(ready["balancer"]["config"]).parent
    try:
        assert ready["balancer"]["policy"]["mode"] == "tcp" and _alive(pid)
        reader, writer = await asyncio.open_connection("127.0.0.1", ready["proxy_port"])
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(reader.readline(), 5.0)).startswith(b"HTTP/1.1 200")
        writer.close()
        os.kill(host.proc.pid, signal.SIGKILL)  # no stop, no cleanup: only Linux's parent-death signal
        assert await asyncio.to_thread(_gone_within, pid, 5.0), "HAProxy outlived a killed host"
        await asyncio.to_thread(host.proc.wait, 5.0)
        # The killed host left its folder; the next HAProxy to start removes it (its owner is gone).
        assert folder.is_dir() and folder.name.startswith(f"harness-haproxy-{host.proc.pid}-")
        beside = HaproxyBalancer(HaproxyPolicy.for_target(cfg), [("127.0.0.1", 9)])
        beside.start()
        beside.stop()
        assert not folder.exists(), "the next start left a killed host's folder"
    finally:
        host.kill()
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def test_balancer_is_refused_where_it_cannot_apply() -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["run", "naive", "--balancer", "haproxy"])
    assert res.exit_code == 2 and "--balancer applies to --mode live only" in res.output
    res = runner.invoke(app, ["run", "http://127.0.0.1:9/predict", "--mode", "live", "--balancer", "haproxy"])
    assert res.exit_code == 2 and "applies to a target the harness starts" in res.output
    res = runner.invoke(app, ["run", "naive", "--mode", "live", "--balancer", "nginx"])
    assert res.exit_code == 2 and "valid are python, haproxy" in res.output


def test_a_live_compare_behind_haproxy_runs_both_sides_behind_it(tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    res = CliRunner().invoke(app, ["compare", "naive", "hardened", "--mode", "live", "-w", "steady", "--scale", "0.02",
                                   "--duration", "2", "--balancer", "haproxy", "--out", str(out),
                                   *QUICK[QUICK.index("-q"):]])  # compare has no --device: it runs the default
    assert res.exit_code == 0, res.output
    runs = load_result(out).runs["steady"]
    for side, mode in (("naive", "tcp"), ("hardened", "http")):  # each side's own HAProxy, as its policy says
        s = runs[side].summary
        b = s.live["balancer"]
        assert b["kind"] == "haproxy" and b["policy"]["mode"] == mode and "error" not in b, (side, b)
        assert b["connections"] >= 1 and s.live["proxy"] is None
        assert s.requests.succeeded >= 0.5 * s.requests.unique, side
        assert _gone_within(b["pid"], 5.0), f"{side}'s HAProxy outlived its run"
