"""The modeled API-server CPU: FIFO per server, shedding past the lag limit; and what it does to a fleet."""

from __future__ import annotations

import pytest

from targets.frontend_cpu import FrontendCpu


def test_one_cpu_serves_in_arrival_order() -> None:
    fe = FrontendCpu(1, cost_s=0.001)
    log = [x for a in (fe.admit(0, 0.0), fe.admit(0, 0.0), fe.admit(0, 0.0005), fe.admit(0, 0.01))
           for x in (a.done_s, a.wait_s)]
    # two at t=0: done at 1 and 2 ms; one at 0.5 ms waits 1.5 ms; one at 10 ms finds the CPU idle
    assert log == pytest.approx([0.001, 0.0, 0.002, 0.001, 0.003, 0.0015, 0.011, 0.0])


def test_servers_are_independent() -> None:
    fe = FrontendCpu(2, cost_s=0.001)
    fe.admit(0, 0.0)
    assert fe.admit(1, 0.0).wait_s == 0.0


def test_past_the_lag_limit_it_sheds_at_the_shed_cost() -> None:
    fe = FrontendCpu(1, cost_s=0.01, shed_cost_s=0.001, lag_limit_s=0.015)
    waits = [fe.admit(0, 0.0) for _ in range(4)]
    # waits 0, 10, 20 ms: the third is over 15 ms and shed (1 ms of CPU); the fourth waits 21 ms: shed too
    assert [a.shed for a in waits] == [False, False, True, True]
    assert waits[3].done_s == pytest.approx(0.022)


def test_sim_front_end_caps_the_fleet_and_sheds_early() -> None:
    from harness.engine.sim import run_sim
    from harness.analysis.capacity_sim import traffic
    from targets.spec import resolve_target

    # One API server at 2 ms a request carries 500 req/s at most; the GPUs could carry far more.
    knobs = {"peak_qps": 400, "api_servers": 1, "frontend_cost_s": 0.002, "frontend_shed_cost_s": 0.0002,
             "frontend_lag_limit_s": 0.025}
    cfg = resolve_target("hardened", knobs)
    ok = run_sim(cfg, traffic(300, 2.0)).summary
    over = run_sim(cfg, traffic(1000, 2.0)).summary
    unguarded = run_sim(resolve_target("hardened", {**knobs, "frontend_lag_limit_s": None}), traffic(1000, 2.0))
    assert unguarded.summary.requests.shed == 0 and unguarded.summary.requests.timed_out > 0.3 * 2000
    # admission never sees the front end's queue: without the guard, it queues into timeouts
    assert ok.goodput_ratio > 0.99 and ok.requests.shed == 0
    assert over.requests.shed > 0.3 * over.requests.unique          # twice its capacity: about half shed
    admitted = over.attempt_latency_ok_s.p99      # an admitted attempt, not its retries before it
    assert admitted is not None and admitted <= cfg.slo_s
    assert over.requests.timed_out == 0
