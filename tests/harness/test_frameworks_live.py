"""Framework targets live: `harness compare hardened FRAMEWORK --mode live -w spike --scale 0.1` runs
both sides and gives figures for both; a framework server starts on loopback, is sampled, slowed
down and stopped whole.

Each framework's tests skip only where the framework truly cannot import (its server's own imports,
tried in a fresh interpreter: Ray Serve needs `ray.serve` and starlette, not just `ray`), and the
skip says which import failed and how to install it (`pip install -e '.[frameworks]'`).
Short: each run cut to a few seconds after a one-second warm-up; the figures are not judged here
(on 2 shared cores a framework at this scale is overloaded, which is what it shows).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.live.framework_host import FrameworkProcess, FrameworkSpec, descendants
from harness.live.host_warmup import warm_http
from harness.live.payloads import Payloads
from targets.frameworks import FRAMEWORKS, installed_version

runner = CliRunner()


# What each framework's server module (targets/frameworks/*_app.py) imports from outside the project.
# `import ray` alone is not Ray Serve: `.[ray]` installs ray without serve's starlette and fastapi.
SERVER_IMPORTS = {
    "litserve": ("litserve", "fastapi"),
    "ray-serve": ("ray", "ray.serve", "starlette.requests", "starlette.responses"),
    "bentoml": ("bentoml", "starlette.responses"),
}


def import_failure(modules: tuple[str, ...]) -> str | None:
    """Why `modules` cannot all be imported here (the failing import's last error line), or None.

    Tried in a fresh interpreter, not this one: a half-installed framework can fail part way through
    an import (Ray without serve's extras fails inside `ray.serve`), and importing Ray or BentoML here
    would load them into every later test of this worker."""
    absent = [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]
    if absent:
        return f"no module named {absent[0].split('.')[0]!r}"
    code = "import " + ", ".join(modules)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return f"`{code}` took over 120 s"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return f"`{code}` failed: {lines[-1] if lines else f'exit {done.returncode}'}"


@functools.cache
def framework_failure(framework: str) -> str | None:
    return import_failure(SERVER_IMPORTS[framework])


def _needs(framework: str) -> None:
    """Skip the calling test, saying why, unless `framework` truly imports."""
    why = framework_failure(framework)
    if why is not None:
        pytest.skip(f"{framework} cannot import ({why}): pip install -e '.[frameworks]'")


FRAMEWORK_PARAMS = list(FRAMEWORKS)


def test_every_framework_names_its_server_imports() -> None:
    assert set(SERVER_IMPORTS) == set(FRAMEWORKS)
    for name, framework in FRAMEWORKS.items():
        source = importlib.util.find_spec(framework.module)
        assert source is not None and source.origin is not None, framework.module
        text = open(source.origin, encoding="utf-8").read()
        for module in SERVER_IMPORTS[name]:
            top = module.split(".")[0]
            assert f"import {top}" in text or f"from {top}" in text, f"{framework.module} imports no {module}"


def test_the_import_check_names_what_fails_and_passes_what_imports(tmp_path, monkeypatch) -> None:
    assert import_failure(("json", "email.mime.text")) is None
    assert import_failure(("json", "no_such_module_xyz")) == "no module named 'no_such_module_xyz'"
    # A package that is there but breaks part way in, as `ray` without serve's starlette does.
    (tmp_path / "halfpkg").mkdir()
    (tmp_path / "halfpkg" / "__init__.py").write_text("")
    (tmp_path / "halfpkg" / "serve.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    why = import_failure(("halfpkg", "halfpkg.serve"))
    assert why is not None and "halfpkg.serve" in why and "no_such_dependency_xyz" in why, why


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORK_PARAMS)
def test_compare_hardened_with_a_framework_live_on_the_spike(framework, tmp_path) -> None:
    _needs(framework)
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", "hardened", framework, "--mode", "live", "-w", "spike", "--scale", "0.1",
                              "--duration", "2", "--warmup", "0.5", "--json", "--out", str(out)])
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
    _needs(framework)
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
@pytest.mark.parametrize("framework", ["bentoml"])
def test_bentoml_answers_a_malformed_input_alone_not_with_its_batch(framework) -> None:
    """BentoML's batcher gathers calls from many requests: a wrong-shaped input is the model
    service's to refuse (422), item by item, while the rest of its batch is answered (200)."""
    _needs(framework)
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
