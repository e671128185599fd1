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


# Modules whose module-scoped fixtures are expensive (a tiny rank, a capacity plan, a pool
# experiment) stay on one worker (`--dist loadgroup`); every other test is spread one by one.
_GROUPED = {"test_ablation.py", "test_review.py", "test_capacity.py", "test_pool_cmd.py", "test_pool_sim.py",
            "test_gate.py", "test_rank_review_gate.py", "test_html.py", "test_models.py", "test_torch_gpu.py",
            "test_server.py", "test_architecture.py", "test_capacity_and_pool.py", "test_result_contract.py"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in _GROUPED:
            item.add_marker(pytest.mark.xdist_group(name=item.path.name))


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
