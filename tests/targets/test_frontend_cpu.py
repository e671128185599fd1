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
    fe = FrontendCpu(1, cost_s=0.01, shed_cost_s=0.001, limit_s=0.015)
    waits = [fe.admit(0, 0.0) for _ in range(4)]
    # waits 0, 10, 20 ms: the third is over 15 ms and shed (1 ms of CPU); the fourth waits 21 ms: shed too
    assert [a.shed for a in waits] == [False, False, True, True]
    assert waits[3].done_s == pytest.approx(0.022)


def test_shared_cores_serve_every_server_in_arrival_order() -> None:
    fe = FrontendCpu(3, cost_s=0.001, cores=2)
    got = [fe.admit(server, 0.0) for server in (0, 1, 2, 0)]
    # two CPUs for three servers: the third and fourth request wait for the first two, whoever sent them
    assert [a.wait_s for a in got] == pytest.approx([0.0, 0.0, 0.001, 0.001])
    assert [a.done_s for a in got] == pytest.approx([0.001, 0.001, 0.002, 0.002])


@pytest.mark.parametrize("knobs, limit_s, cores", [
    ({}, None, None),                                                      # no guard knob: never sheds
    ({"frontend_age_share": 0.25}, 0.075, None),                           # a quarter of the 300 ms SLO
    ({"frontend_age_share": 0.25, "frontend_lag_limit_s": 0.02}, 0.02, None),  # the tighter guard wins
    ({"frontend_lag_limit_s": 0.1, "frontend_cores": 1}, 0.1, 1),          # a live host: one loop for all
])
def test_config_picks_the_tighter_guard(knobs: dict, limit_s: float | None, cores: int | None) -> None:
    from targets.config import TargetConfig

    fe = FrontendCpu.for_config(TargetConfig(frontend_cost_s=0.001, **knobs), servers=4)
    assert fe is not None and fe.limit_s == pytest.approx(limit_s) and fe.shared is (cores is not None)
    assert len(fe.free_at) == (cores or 4)
    assert FrontendCpu.for_config(TargetConfig(**knobs), servers=4) is None  # cost 0: a free front end


def test_sim_front_end_caps_the_fleet_and_sheds_early() -> None:
    from harness.analysis.traffic import traffic
    from harness.engine.sim import run_sim
    from targets.spec import resolve_target

    # One API server at 2 ms a request carries 500 req/s at most; the GPUs could carry far more.
    # the age guard (a quarter of the 300 ms SLO) does the shedding (the proxy's guard, on in hardened, off here).
    knobs = {"peak_qps": 400, "api_servers": 1, "frontend_cost_s": 0.002, "frontend_shed_cost_s": 0.0002,
             "frontend_age_share": 0.25, "frontend_proxy_share": None}
    cfg = resolve_target("hardened", knobs)
    ok = run_sim(cfg, traffic(300, 2.0)).summary
    over = run_sim(cfg, traffic(1000, 2.0)).summary
    unguarded = run_sim(resolve_target("hardened", {**knobs, "frontend_age_share": None}), traffic(1000, 2.0))
    assert unguarded.summary.requests.shed == 0 and unguarded.summary.requests.timed_out > 0.3 * 2000
    # admission never sees the front end's queue: without the guard, it queues into timeouts
    assert ok.goodput_ratio > 0.99 and ok.requests.shed == 0
    assert over.requests.shed > 0.3 * over.requests.unique          # twice its capacity: about half shed
    admitted = over.attempt_latency_ok_s.p99      # an admitted attempt, not its retries before it
    assert admitted is not None and admitted <= cfg.slo_s
    assert over.requests.timed_out == 0


def test_proxy_refuses_first_and_cheaper() -> None:
    # One CPU, 10 ms a request; the proxy refuses while the third oldest request in the front end
    # has waited 15 ms (0.1 ms a refusal), the handler at a wait over 20 ms (1 ms). Five arrive at
    # once: nobody has waited yet, so the proxy lets them by and the handler sheds the last two.
    fe = FrontendCpu(1, cost_s=0.01, shed_cost_s=0.001, limit_s=0.02, proxy_limit_s=0.015, proxy_shed_cost_s=0.0001)
    got = [fe.admit(0, 0.0) for _ in range(5)]
    assert [(a.shed, a.by_proxy) for a in got] == [(False, False)] * 3 + [(True, False)] * 2
    # A sustained overload, one every 5 ms (twice what it serves): the signal is an age, so it
    # reaches 15 ms only at 45 ms, when the back of the queue already waits 40 ms; then the
    # proxy refuses, cheaply, while the admitted drain.
    fe = FrontendCpu(1, cost_s=0.01, proxy_limit_s=0.015, proxy_shed_cost_s=0.0001)
    got = [fe.admit(0, 0.005 * i) for i in range(11)]
    assert [a.by_proxy for a in got] == [False] * 9 + [True] * 2
    assert got[8].wait_s == pytest.approx(0.04) and got[9].done_s == pytest.approx(0.0901)
    assert fe.proxy_signal(0.05) == pytest.approx(0.015)


def test_the_sim_proxy_reads_the_live_guards_quorum() -> None:
    from targets.frontend_cpu import PROXY_QUORUM
    from targets.http.overload import ProxyGuard

    assert PROXY_QUORUM == ProxyGuard(0.01).quorum


@pytest.mark.parametrize("share, proxy_limit_s", [(None, None), (0.25, 0.075), (0.0, 0.0)])
def test_config_gives_the_proxy_its_share_of_the_slo(share: float | None, proxy_limit_s: float | None) -> None:
    from targets.config import TargetConfig

    fe = FrontendCpu.for_config(TargetConfig(frontend_cost_s=0.001, frontend_proxy_share=share,
                                             frontend_proxy_shed_cost_s=0.00003), servers=2)
    assert fe is not None and fe.proxy_limit_s == (None if share is None else pytest.approx(proxy_limit_s))
    assert fe.proxy_shed_cost_s == 0.00003


def test_sim_proxy_guard_sheds_for_less_than_the_handlers() -> None:
    from harness.analysis.traffic import traffic
    from harness.engine.sim import run_sim
    from targets.spec import resolve_target

    # Hardened's own proxy guard (a tenth of the SLO) at twice the front end's 500 req/s: its refusals
    # cost a tenth of the handler's, so more CPU is left for the admitted ones.
    knobs = {"peak_qps": 400, "api_servers": 1, "frontend_cost_s": 0.002, "frontend_shed_cost_s": 0.0008,
             "frontend_proxy_shed_cost_s": 0.00008}
    proxy = run_sim(resolve_target("hardened", knobs), traffic(1000, 2.0)).summary
    handler = run_sim(resolve_target("hardened", {**knobs, "frontend_proxy_share": None, "frontend_age_share": 0.1}),
                      traffic(1000, 2.0)).summary
    assert proxy.requests.timed_out == 0 and proxy.requests.shed > 0.3 * proxy.requests.unique
    assert proxy.attempt_latency_ok_s.p99 <= 0.3
    assert proxy.goodput_rps > 1.3 * handler.goodput_rps
