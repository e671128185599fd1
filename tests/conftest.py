"""Shared test helpers: small targets and workloads built in code."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# -- parallel runs (pytest-xdist) ---------------------------------------------------------
# Live tests drive real servers on the wall clock and assert that most requests are answered
# in time; a CPU-bound sim on the other worker can starve them. Under xdist each live test
# therefore holds an exclusive lock and every other test a shared one, so a live test runs
# alone while the rest run in parallel.

import fcntl  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:  # not under xdist: nothing runs beside this test
        yield
        return
    mode = fcntl.LOCK_EX if item.get_closest_marker("live") else fcntl.LOCK_SH
    with open(Path(tempfile.gettempdir()) / f"harness-tests-{run_id}.lock", "a") as lock:
        fcntl.flock(lock, mode)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Modules with module-scoped fixtures or memos (a tiny rank, a capacity plan, a pool experiment, promtool's
# bad days) stay on one worker, so each fixture is built once; every other test is spread one by
# one. Found by reading the test files (a new module fixture groups its module by itself). The
# scheduler does it by node id: xdist's own `xdist_group` mark no longer groups anything under
# pytest 9.2 (xdist 3.8 renames the item through `_nodeid`, which pytest 9.2 no longer reads), so
# every such module was spread over both workers and built its fixtures on each.
# Modules that take a session fixture of SESSION_SHARED (a sim several modules read) form one group
# of that fixture's name instead, so it too is built once.
_SHARED = ('scope="module"', "functools.cache", "lru_cache")  # what a module builds once and shares
SESSION_SHARED = ("llm_rank_30s",)


def _group(path: Path) -> str | None:
    text = path.read_text(encoding="utf-8")
    return next((f for f in SESSION_SHARED if f in text), None) or (path.name if any(s in text for s in _SHARED)
                                                                    else None)


_GROUPED = {path.name: group for path in Path(__file__).parent.rglob("test_*.py") if (group := _group(path))}


@pytest.hookimpl(optionalhook=True)  # only xdist defines it (`-p no:xdist` leaves it unknown)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            return _GROUPED[name] if name in _GROUPED else super()._split_scope(nodeid)

    return ModuleGroups(config, log)


# -- the run cache (harness.engine.run_cache) ---------------------------------------------
# A command run by a test reuses only what that same test (or, in a module-scoped fixture,
# that module's fixtures) stored: never a user's cache, nor another test's.

@pytest.fixture(autouse=True, scope="module")
def _module_run_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("module-run-cache")))
        yield


@pytest.fixture(autouse=True)
def _own_run_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("run-cache")))


# -- sims several modules read (each module that takes one is grouped with the others: _GROUPED) ------

@pytest.fixture(scope="session")
def llm_rank_30s() -> object:
    """The rank's LLM section, every LLM flaw on 30 s of its mixes, seed 1 (~2.5 CPU-s of pure-Python
    LLM simulation): the LLM rank's tests, its view's and the rank file's end to end share it."""
    from harness.analysis.llm.rank import llm_rank

    return llm_rank(seed=1, duration_s=30)


@pytest.fixture
def local_ray(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A local Ray instance (harness.engine.ray_jobs opens it on first use), stopped after the test;
    skipped where the optional ray extra is not installed."""
    ray = pytest.importorskip("ray")
    from harness.engine import ray_jobs

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    yield ray
    ray_jobs.shutdown()

