"""Locust as a driver, without importing locust: the generated file, and records read back into a run."""

from __future__ import annotations

import ast

import pytest

from harness.live.locust_file import PER_USER_RPS, locustfile_text
from harness.live.locust_run import records_to_result, status_of
from targets.protocol import Status
from targets.spec import resolve_target
from workloads.loader import load_workload


def test_locustfile_is_python_and_follows_the_phases() -> None:
    wl = load_workload("spike").at_rate(100.0, 20.0)
    text = locustfile_text(wl, 1.5)
    tree = ast.parse(text)                                  # valid Python
    rates = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RATES")
    assert len(rates) == 20 and max(rates) == pytest.approx(100.0, rel=0.05)
    assert min(rates) < max(rates)                          # the spike's phases, not one rate
    assert "TIMEOUT_S = 1.5" in text and f"PER_USER_RPS = {PER_USER_RPS}" in text
    assert "closed loop" in text                            # says where Locust cannot follow


@pytest.mark.parametrize("http, latency, expected", [
    (200, 0.1, Status.OK), (503, 0.01, Status.UNAVAILABLE), (429, 0.01, Status.TOO_MANY),
    (0, 1.0, Status.TIMEOUT),     # no HTTP answer, after the whole timeout: the client gave up
    (0, 0.01, Status.ERROR),      # no HTTP answer, at once: a connection error
    (500, 0.01, Status.ERROR),
])
def test_status_of_a_record(http: int, latency: float, expected: Status) -> None:
    assert status_of(http, latency, 1.0) is expected


def test_records_become_a_run_result_timed_from_the_send() -> None:
    wl = load_workload("steady").at_rate(10.0, 2.0)
    cfg = resolve_target("naive", {"name": "http://x/predict"})
    recs = [[1000.0 + i * 0.1, 0.05 if i % 4 else 0.5, 200 if i % 5 else 503, f"t{i % 10}"] for i in range(20)]
    res = records_to_result(recs, cfg, wl, 1, 3.0, {"driver": "locust", "locust_workers": 2})
    s = res.summary
    assert s.mode == "live" and s.live["driver"] == "locust" and s.live["locust_workers"] == 2
    assert s.requests.unique == 20 and s.requests.shed == 4
    # answered OK: i not a multiple of 5 (16); of those, i % 4 == 0 took 0.5 s > SLO 0.3 (i = 4, 8, 12, 16)
    assert s.requests.within_slo == 12 and s.requests.late == 4
    assert s.latency_ok_s.p50 == pytest.approx(0.05, rel=0.01)


def test_main_thread_cpu_grows_with_work() -> None:
    import os
    import time

    from harness.live.frontend_profile import main_thread_cpu_s

    before = main_thread_cpu_s(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:  # burn 50 ms of this (main) thread's CPU
        pass
    assert main_thread_cpu_s(os.getpid()) - before >= 0.03
