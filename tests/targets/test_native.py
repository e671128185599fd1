"""The compiled core (targets.native): when it runs, and that it computes what the sources do."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import targets.batcher
from targets.native import COMPILED, PURE_ENV, decide, status

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]  # what this interpreter imports as an extension


def _tree(tmp_path: Path, modules: list[str], built: list[str]) -> Path:
    for name in modules:
        src = tmp_path / (name.replace(".", "/") + ".py")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text("x = 1\n")
    later = time.time() + 10
    for name in built:
        ext = tmp_path / (name.replace(".", "/") + SUFFIX)
        ext.write_bytes(b"")
        os.utime(ext, (later, later))
    return tmp_path


def test_the_core_runs_compiled_only_when_every_extension_is_built_and_newer_than_its_source(tmp_path):
    mods = ["pkg.a", "pkg.b"]
    assert decide(_tree(tmp_path / "none", mods, []), {}, mods) == (
        False, "pure Python (the compiled core is not built: pip install -e . with a C compiler)")
    partial = decide(_tree(tmp_path / "half", mods, ["pkg.a"]), {}, mods)
    assert not partial[0] and "pkg.b has no extension" in partial[1]
    full = _tree(tmp_path / "full", mods, mods)
    assert decide(full, {}, mods) == (True, "compiled (mypyc)")
    assert decide(full, {PURE_ENV: "1"}, mods) == (False, f"pure Python ({PURE_ENV} is set)")
    assert decide(full, {PURE_ENV: "0"}, mods)[0]
    edited = full / "pkg" / "b.py"
    later = time.time() + 20
    os.utime(edited, (later, later))
    stale = decide(full, {}, mods)
    assert not stale[0] and "pkg/b.py changed after the compiled core was built" in stale[1]


def test_this_process_imports_the_core_the_way_status_says():
    compiled = status().startswith("compiled")
    assert targets.batcher.__file__.endswith(".py") is not compiled
    assert "targets.batcher" in COMPILED


_PROBE = """
import json, sys
from harness.engine.sim import run_sim
from targets.spec import resolve_target
from targets.native import status
from workloads.loader import load_workload
import targets.batcher
wl = load_workload(sys.argv[1]).model_copy(update={"duration_s": 3.0})
s = run_sim(resolve_target(sys.argv[2]), wl, 7).summary
print(json.dumps({"core": status(), "file": targets.batcher.__file__,
                  "summary": s.model_dump(mode="json", exclude={"wall_s"})}))
"""


def _probe(workload: str, target: str, pure: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    if pure:
        env[PURE_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", _PROBE, workload, target], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("workload,target", [("spike", "naive"), ("dominant-tenant", "hardened"),
                                             ("gpu-outage", "hardened")])
def test_the_compiled_core_gives_the_very_figures_of_the_sources(workload, target):
    pure = _probe(workload, target, pure=True)
    assert pure["core"] == f"pure Python ({PURE_ENV} is set)" and pure["file"].endswith(".py")
    native = _probe(workload, target, pure=False)
    assert native["core"] == status()  # compiled wherever the build compiled it (CI checks it did)
    assert native["summary"] == pure["summary"]
    assert pure["summary"]["requests"]["unique"] > 1000


_CANARY_PROBE = """
import json, sys
from harness.analysis.canary.days import CanaryJob
from targets.native import status
import targets.versions
runs = [CanaryJob(plan, day, "hardened", 3).run().model_dump(mode="json")
        for plan, day in (("fast", "wrong"), ("careful", "erroring"), ("fast", "wrong-behind-exact-cache"))]
print(json.dumps({"core": status(), "file": targets.versions.__file__, "runs": runs}))
"""


@pytest.mark.slow
def test_the_compiled_canary_path_decides_as_the_sources_do():
    """The rollout's split, answers and tap (targets.versions, targets.canary_fleet,
    harness.engine.canary_tap) compiled against their sources: the same decisions,
    at the same instants, on the same exposure."""
    def probe(pure: bool) -> dict:
        env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
        if pure:
            env[PURE_ENV] = "1"
        out = subprocess.run([sys.executable, "-c", _CANARY_PROBE], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    pure, native = probe(pure=True), probe(pure=False)
    assert pure["file"].endswith(".py") and native["core"] == status()
    assert native["runs"] == pure["runs"]
    # Both bad canaries are caught; behind the exact-payload cache the wrong one is answered
    # with the baseline's cached outputs and promotes (the doc's flaw, which no plan can fix).
    assert [r["decision"] for r in pure["runs"]] == ["rollback", "rollback", "promote"]
    assert pure["runs"][2]["wrong_version"] > 0
    assert all(r["canary_requests"] > 0 for r in pure["runs"])


_LLM_POOL_PROBE = """
import json, sys
from harness.analysis.llm.rank import llm_rank
from harness.analysis.pool import run_pool_experiment
from harness.analysis.pool.gang import PoolConfig
from targets.native import status
import targets.llm.continuous

def figures(result):
    return {k: v for k, v in result.model_dump(mode="json").items() if k not in ("wall_s", "versions")}

print(json.dumps({"core": status(), "file": targets.llm.continuous.__file__,
                  "llm": figures(llm_rank(2, duration_s=20.0)),
                  "pool": figures(run_pool_experiment(PoolConfig(duration_s=8.0)))}))
"""


@pytest.mark.slow
def test_the_compiled_llm_engines_and_pool_give_the_figures_of_the_sources():
    """The LLM step machines and fleet loop, and the two-model pool's schedulers and shell,
    compiled against their sources: every LLM flaw's costs (single engines and a fleet with
    prefix caches) and every pool policy's figures the same."""
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}

    def probe(pure: bool) -> dict:
        out = subprocess.run([sys.executable, "-c", _LLM_POOL_PROBE], env={**env, PURE_ENV: "1"} if pure else env,
                             cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    pure, native = probe(pure=True), probe(pure=False)
    assert pure["file"].endswith(".py") and native["core"] == status()
    assert native["llm"] == pure["llm"] and native["pool"] == pure["pool"]
    assert len(pure["llm"]["flaws"]) >= 5 and all(f["costs"] for f in pure["llm"]["flaws"])
    assert len(pure["pool"]["policies"]) >= 3
