"""Front-end shedding: the pure age and lag rules, the lag monitor on a real (wall-clock) loop,
and a real proxy and API server shedding a burst it cannot serve."""

from __future__ import annotations

import asyncio
import time

import pytest

from targets.http.overload import AgeGuard, LagGuard, LoopLag, ProxyGuard


@pytest.mark.parametrize("age_s, expected", [
    (None, None),       # age unknown (no proxy in front): admit
    (0.0, None),        # just arrived: admit
    (0.075, None),      # at the limit: admit (strictly over sheds)
    (0.076, 0.076),     # just over: shed, ask back after its own age (over the 50 ms floor)
    (2.5, 2.5),         # a request that waited seconds: the queue ahead drains in about that long
])
def test_age_guard_sheds_requests_older_than_its_share_of_the_slo(age_s: float | None,
                                                                  expected: float | None) -> None:
    guard = AgeGuard.for_slo(0.3, 0.25)           # 75 ms of a 300 ms SLO
    assert guard.decide(age_s) == (None if expected is None else pytest.approx(expected))


def test_age_guard_asks_back_after_its_floor_at_least() -> None:
    assert AgeGuard(0.01, retry_after_s=0.05).decide(0.02) == 0.05  # 20 ms old, over 10 ms: the 50 ms floor


@pytest.mark.parametrize("slo_s, share", [(0.3, 0.0), (0.3, 1.5), (0.0, 0.25)])
def test_age_guard_refuses_a_budget_outside_the_slo(slo_s: float, share: float) -> None:
    with pytest.raises(ValueError):
        AgeGuard.for_slo(slo_s, share)


@pytest.mark.parametrize("share, wait_s, expected", [
    (0.25, 0.0, None),        # nothing in flight: relay
    (0.25, 0.074, None),      # in flight under 75 ms of the 300 ms SLO: relay
    (0.25, 0.075, 0.075),     # at the limit: refuse, ask back after that wait
    (0.25, 0.01 + 0.075, 0.085),
    (0.5, 0.1, None),         # a wider budget relays what a quarter refuses
    (0.1, 0.031, 0.05),       # over 30 ms: refuse; asked back after the 50 ms floor
    (0.0, 0.0, 0.05),         # a zero budget refuses everything (profiling a refusal's cost)
])
def test_proxy_guard_refuses_while_the_front_end_queue_is_over_budget(share: float, wait_s: float,
                                                                      expected: float | None) -> None:
    guard = ProxyGuard.for_slo(0.3, share)
    assert guard.decide(wait_s) == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize("waits_s, expected", [
    ([], 0.0),                     # nothing in flight
    ([2.0, 1.0], 0.0),             # two held long (a dedupe waiter, a re-dispatch): not a backlog alone
    ([2.0, 1.0, 0.08], 0.08),      # the third oldest is what counts
    ([0.3, 0.2, 0.1, 0.05], 0.1),
])
def test_proxy_guard_judges_its_quorum_th_oldest_request(waits_s: list[float], expected: float) -> None:
    assert ProxyGuard(0.075, quorum=3).signal(waits_s) == expected


@pytest.mark.parametrize("slo_s, share", [(0.3, -0.1), (0.3, 1.5), (0.0, 0.25)])
def test_proxy_guard_refuses_a_budget_outside_the_slo(slo_s: float, share: float) -> None:
    with pytest.raises(ValueError):
        ProxyGuard.for_slo(slo_s, share)


@pytest.mark.parametrize("lag_s, expected", [
    (0.0, None),        # an idle loop admits
    (0.025, None),      # at the limit: admit (strictly over sheds)
    (0.026, 0.05),      # just over: shed, ask back after the floor
    (0.4, 0.4),         # far behind: ask back after the lag itself
])
def test_guard_sheds_only_over_its_limit(lag_s: float, expected: float | None) -> None:
    assert LagGuard(0.025, retry_after_s=0.05).decide(lag_s) == expected


def test_one_late_tick_is_a_hiccup_a_run_of_them_is_a_backlog() -> None:
    lag = LoopLag(window=3)
    for late in (0.0, 0.2, 0.0):          # descheduled once: no sustained lag
        lag.observe(late)
    assert lag.lag_s == 0.0 and lag.peak_s == 0.2
    for late in (0.04, 0.05, 0.03):       # every tick late: a backlog of ready work
        lag.observe(late)
    assert lag.lag_s == 0.03
    lag.observe(0.0)                      # and it clears as soon as a tick is on time
    assert lag.lag_s == 0.0


@pytest.mark.live
def test_monitor_sees_a_blocked_loop() -> None:
    async def main() -> float:
        lag = LoopLag(tick_s=0.005)
        lag.start()
        await asyncio.sleep(0.05)
        time.sleep(0.1)          # block the loop: the next tick fires ~100 ms late
        await asyncio.sleep(0.02)
        lag.stop()
        return lag.peak_s

    assert asyncio.run(main()) >= 0.08


@pytest.mark.live
async def test_a_server_behind_the_proxy_sheds_a_burst_it_cannot_serve() -> None:
    """Each admitted request costs its handler 30 ms of blocked loop (a CPU-bound front end): of a
    burst of 12 at once, the first four start within the 100 ms age limit and the rest are over it
    by the time their handler starts, so they get 503 + Retry-After before their body is parsed."""
    import json
    import random

    import aiohttp

    from targets.config import TargetConfig
    from targets.http.l4proxy import L4Proxy
    from targets.http.api_servers import ApiServers
    from targets.http.server import ApiMetrics, FrontDoor
    from targets.target import ServingTarget

    cfg = TargetConfig(batching="dynamic", max_wait_s=0.002, batch_time_s=0.002, batch_size=8, cache="off",
                       gpus=1, api_servers=1, slo_s=0.4, frontend_age_share=0.25)
    target = ServingTarget(cfg, random.Random(1))
    parsed = []

    def validate(x) -> None:  # runs once the body is parsed: an admitted request's CPU
        parsed.append(1)
        time.sleep(0.03)

    servers = ApiServers([FrontDoor(target, 0, validate, lambda x: 64, ApiMetrics(target, None))])
    (port,) = await servers.start()
    proxy = L4Proxy([("127.0.0.1", port)])
    servers.behind(proxy)
    url = f"http://127.0.0.1:{await proxy.start()}/predict"
    body = json.dumps({"tenant": "t0", "input": [0.5] * 512}).encode()
    try:
        async with aiohttp.ClientSession(headers={"Content-Type": "application/json"}) as s:
            async def one():
                async with s.post(url, data=body) as r:
                    return r.status, r.headers.get("Retry-After"), await r.json()

            answers = await asyncio.gather(*(one() for _ in range(12)))
    finally:
        await proxy.stop()
        await servers.stop()
    shed = [a for a in answers if a[0] == 503]
    assert sum(a[0] == 200 for a in answers) >= 1 and len(shed) >= 6, [a[0] for a in answers]
    assert all(ra is not None and int(ra) >= 1 and b["error"] == "overloaded" and "waited" in b["reason"]
               for _, ra, b in shed)
    assert len(parsed) == 12 - len(shed)      # a shed request's body was never parsed


def test_front_end_waits_are_read_oldest_first_and_a_new_request_moves_to_the_back() -> None:
    from targets.http.overload import FrontEndWaits

    w = FrontEndWaits()
    for key, t in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        w.begin(key, t)
    assert w.oldest(10.0, 2) == [9.0, 8.0]
    w.begin("a", 5.0)  # its next request: waits from now, behind the others
    w.end("b")
    assert w.oldest(10.0, 3) == [7.0, 5.0]
    w.clear()
    assert w.oldest(10.0, 3) == [] and len(w) == 0


def test_a_late_answer_cannot_put_an_ended_request_back_in_the_books() -> None:
    # What latched the live guard: an answer coming back for a request that had already ended
    # re-entered its connection into the books, where nothing would ever take it out again.
    from targets.http.overload import FrontEndWaits

    w = FrontEndWaits()
    first = w.begin("a", 1.0)
    assert w.to_gpu("a", first) and w.waiting == 0
    w.end("a")                                  # answered (say the handler gave up on it)
    assert not w.from_gpu("a", first, 2.0)      # its answer comes back late: ignored
    second = w.begin("a", 3.0)                  # the connection's next request
    assert w.to_gpu("a", second)
    assert not w.from_gpu("a", first, 4.0)      # the first one's answer again: still not this request
    assert w.oldest(9.0, 3) == [] and len(w) == 1
    assert w.from_gpu("a", second, 5.0) and w.oldest(9.0, 3) == [4.0]


def test_the_relay_key_names_both_ends() -> None:
    from targets.http.overload import relay_key

    # Linux gives one ephemeral port to connections towards two API servers: both halves tell them apart.
    a = relay_key(("127.0.0.1", 40000), ("127.0.0.1", 9001))
    b = relay_key(("127.0.0.1", 40000), ("127.0.0.1", 9002))
    assert a != b and a == relay_key(("127.0.0.1", 40000, 0, 0), ("127.0.0.1", 9001))
    assert relay_key(None, ("127.0.0.1", 9001)) is None
