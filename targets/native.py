"""The compiled core: the simulation's hot path, compiled by mypyc, and whether this process runs it.

`pip install -e .` (setup.py) compiles the modules of `COMPILED` with mypyc into
C extensions beside their sources, when a C compiler is at hand; the sources stay
the reference and the fallback, so the compiled core is the *same* target code
live mode runs, only faster (about 1.8x naive, 2.5x hardened in
`benchmarks/sim_speed.py`). A module compiled is imported from its extension
unless, at the first import of `targets` or `harness`:

- `HARNESS_PURE_PYTHON=1` is set (debugging, profiling, timing the difference), or
- the build is missing or partial, or
- a source is newer than its extension (edited since the build: the extension
  would run the old code). The whole core then runs from source, with one warning
  saying how to rebuild, rather than old code silently.

Either way every compiled module is imported from the same place, so compiled
code never calls into a stale neighbour. `status()` says which it is (`harness
--version`, the speed benchmark). `mypyc_attr` is mypyc's class decorator, or a
no-op without mypy installed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["COMPILED", "PURE_ENV", "decide", "install", "mypyc_attr", "status"]

# The modules mypyc compiles (setup.py reads this tuple): the sim's hot path.
COMPILED = (
    "harness.engine.canary_tap", "harness.engine.clock", "harness.engine.driver", "harness.engine.function_transport",
    "harness.engine.recorder", "harness.engine.transports",
    "targets.accounting", "targets.admission", "targets.balancer", "targets.batcher", "targets.bounded",
    "targets.bucketed_queue", "targets.cache", "targets.canary_fleet", "targets.client", "targets.dedupe",
    "targets.delayline", "targets.dispatch_policy", "targets.gpu_pool", "targets.http.limits",
    "targets.latency_forecast", "targets.protocol", "targets.queues", "targets.slowness", "targets.target",
    "targets.throttle", "targets.versions",
    # The LLM engines' step machines and their simulation loops (`harness llm`, rank's LLM section)
    "harness.engine.llm_fleet", "harness.engine.llm_run", "targets.llm.continuous", "targets.llm.kv_cache",
    "targets.llm.prefix_cache", "targets.llm.run_to_completion", "targets.llm.sequence", "targets.llm.waiting",
    # The two-model GPU pool's gang schedulers and the loop that runs them (`harness pool`, review's Part 3)
    "harness.analysis.pool.shell", "targets.gang_schedulers",
)
PURE_ENV = "HARNESS_PURE_PYTHON"
_ROOT = Path(__file__).resolve().parent.parent
_state: list[str] = []  # the status line, once decided

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # mypy is a build dependency only
    def mypyc_attr(*_args: Any, **_kwargs: Any) -> Callable[[Any], Any]:  # type: ignore[misc]  # a no-op stand-in
        return lambda cls: cls


def _source(name: str, root: Path = _ROOT) -> Path:
    return root / (name.replace(".", "/") + ".py")


def _extension(name: str, root: Path = _ROOT) -> Path | None:
    src = _source(name, root)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        ext = src.with_suffix(suffix)
        if ext.exists():
            return ext
    return None


def decide(root: Path = _ROOT, env: Mapping[str, str] = os.environ,
           modules: Sequence[str] = COMPILED) -> tuple[bool, str]:
    """(compiled?, why) for the tree at `root`: the rules of the module doc."""
    if env.get(PURE_ENV, "") not in ("", "0"):
        return False, f"pure Python ({PURE_ENV} is set)"
    exts = {name: _extension(name, root) for name in modules}
    missing = [n for n, e in exts.items() if e is None]
    if len(missing) == len(modules):
        return False, "pure Python (the compiled core is not built: pip install -e . with a C compiler)"
    if missing:
        return False, f"pure Python (the compiled core is partial: {missing[0]} has no extension; rebuild: pip install -e .)"
    for name, ext in exts.items():
        src = _source(name, root)
        if ext is not None and src.stat().st_mtime > ext.stat().st_mtime:
            return False, (f"pure Python ({src.relative_to(root)} changed after the compiled core was "
                           "built; rebuild: pip install -e .)")
    return True, "compiled (mypyc)"


class _SourceFinder:
    """Imports every compiled module from its source instead of its extension."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name in COMPILED:
            return importlib.util.spec_from_file_location(name, _source(name))
        return None


def install() -> None:
    """Decide, once per process, whether the compiled core runs (called by the packages' __init__)."""
    if _state:
        return
    compiled, why = decide()
    _state.append(why)
    if compiled:
        return
    loaded = [n for n in COMPILED if n in sys.modules]
    if loaded:  # imported before install() (should not happen): leave them be
        return
    sys.meta_path.insert(0, _SourceFinder())
    if "changed after" in why or "partial" in why:
        print(f"harness: {why}", file=sys.stderr)


def status() -> str:
    """How this process runs the core: "compiled (mypyc)" or "pure Python (why)"."""
    install()
    return _state[0]
