"""Framework targets live: `harness compare hardened FRAMEWORK --mode live -w spike --scale 0.1` runs
both sides and gives figures for both; a framework server starts on loopback, is sampled, slowed
down and stopped whole.

Each framework's tests skip, saying why, where it is not installed (`pip install -e '.[frameworks]'`).
Short: each run cut to a few seconds after a one-second warm-up; the figures are not judged here
(on 2 shared cores a framework at this scale is overloaded, which is what it shows).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import time

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.live.framework_host import FrameworkProcess, FrameworkSpec, descendants
from harness.live.host_warmup import warm_http
from harness.live.payloads import Payloads
from targets.frameworks import FRAMEWORKS, installed_version

runner = CliRunner()


def _needs(framework: str):
    module = {"litserve": "litserve", "ray-serve": "ray", "bentoml": "bentoml"}[framework]
    missing = importlib.util.find_spec(module) is None
    return pytest.mark.skipif(missing, reason=f"{framework} is not installed: pip install -e '.[frameworks]'")


FRAMEWORK_PARAMS = [pytest.param(name, marks=_needs(name)) for name in FRAMEWORKS]


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORK_PARAMS)
def test_compare_hardened_with_a_framework_live_on_the_spike(framework, tmp_path) -> None:
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", "hardened", framework, "--mode", "live", "-w", "spike", "--scale", "0.1",
                              "--duration", "4", "--warmup", "1", "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    pair = doc["scenarios"]["spike"]
    assert set(pair) == {"hardened", framework}
    for side, s in pair.items():
        assert s["requests"]["unique"] > 0 and s["offered_rps"] > 0, side
        assert s["goodput_rps"] >= 0 and "validity" in s["live"], side
    theirs = pair[framework]["live"]
    assert theirs["framework"]["name"] == framework
    assert theirs["framework"]["version"] == installed_version(FRAMEWORKS[framework])
    assert theirs["framework"]["workers"] == pair["hardened"]["gpu"]["count"]  # the same fleet
    assert "no-tenant-limits" in pair[framework]["flaws"]
    assert theirs["validity"]["fault"] in ("none", "target", "driver", "both")
    full = json.loads(out.read_text())
    assert full["live"]["sim_skipped"].startswith(framework)


@pytest.mark.live
@pytest.mark.parametrize("framework", FRAMEWORK_PARAMS)
def test_a_framework_server_starts_answers_slows_and_stops_whole(framework) -> None:
    spec = FrameworkSpec(framework, {"num_api_servers": 1} if framework == "litserve" else {}, workers=1,
                         batch_size=4, pad_to_s=0.05)

    async def session():
        proc = FrameworkProcess(spec)
        ready = await proc.start()
        try:
            body = Payloads("mlp", seed=3).body("t0", 7, 64, "r-1", None)
            answered = await warm_http(ready["proxy_port"], [body] * 4)
            before = await proc.request("stats")
            await proc.request("slowdown", factor=3.0)
            slowed = await warm_http(ready["proxy_port"], [body])
            after = await proc.request("stats")
            sample = await proc.request("sample")
        finally:
            pid, folder = proc.proc.pid, proc.folder
            family = descendants(pid)  # BentoML's and Ray's workers run in sessions of their own
            await proc.stop()
        return ready, answered, before, slowed, after, sample, pid, folder, family

    ready, answered, before, slowed, after, sample, pid, folder, family = asyncio.run(session())
    assert ready["framework"]["version"] == installed_version(FRAMEWORKS[framework])
    assert answered["http_status"] == {"200": 4} and slowed["http_status"] == {"200": 1}
    b, a = before["snapshot"]["pool"], after["snapshot"]["pool"]
    assert a["batches"] == b["batches"] + 1
    assert a["busy_gpu_s"] - b["busy_gpu_s"] >= 3 * 0.05 * 0.95   # the slowed batch held 3 x its pad
    assert sample["queue_depth"] == 0 and sample["alive"] == 1
    # Nothing of its session is left running (zombies aside). A killed process ends once it is
    # scheduled: on a busy machine, at idle priority, that took seconds here.
    deadline = time.monotonic() + 30.0
    while (_alive_in_group(pid) or _running(family)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive_in_group(pid) == [] and _running(family) == []
    assert family and not folder.exists()


@pytest.mark.live
@pytest.mark.parametrize("framework", [pytest.param("bentoml", marks=_needs("bentoml"))])
def test_bentoml_answers_a_malformed_input_alone_not_with_its_batch(framework) -> None:
    """BentoML's batcher gathers calls from many requests: a wrong-shaped input is the model
    service's to refuse (422), item by item, while the rest of its batch is answered (200)."""
    spec = FrameworkSpec(framework, {"max_latency_ms": 10_000}, workers=1, batch_size=8, pad_to_s=0.05)

    async def session():
        proc = FrameworkProcess(spec)
        ready = await proc.start()
        try:
            good = Payloads("mlp", seed=3).body("t0", 7, 64, None, None)
            bad = b'{"tenant": "t0", "input": [1, 2, 3]}'
            bad_tenant = b'{"tenant": "no spaces", "input": []}'
            return await warm_http(ready["proxy_port"], [good] * 5 + [bad, bad_tenant])
        finally:
            await proc.stop()

    answered = asyncio.run(session())
    assert answered["http_status"] == {"200": 5, "422": 1, "400": 1}  # 400: BentoML's own field validation


def _running(pids: list[int]) -> list[int]:
    """Those of `pids` that still run (not zombies)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except (OSError, IndexError):
            continue
    return alive


def _alive_in_group(pgid: int) -> list[int]:
    """Processes of process group `pgid` that still run (not zombies), from /proc."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
            alive.append(int(entry))
    return alive
