"""`--driver-procs N`: the schedule split over driver processes, their histograms merged, a live run over two."""

from __future__ import annotations

import asyncio
import json
import threading

import httptools
import numpy as np
import pytest

from harness.engine.hdr import new_histogram
from harness.live.driver_procs import (connection_slots, merge_histograms, merge_transport_stats, share_uids,
                                       split_units, unit_connections)
from harness.live.driver_procs_child import _share
from harness.live.http_transport import lag_figures
from workloads.arrivals import build_schedule
from workloads.loader import load_workload
from workloads.model import ConstantPhase, Tenant, WorkloadConfig

ONE_TENANT = WorkloadConfig(name="one", phases=(ConstantPhase(duration_s=3.0, rate_rps=400.0),),
                            tenants=(Tenant(name="solo", share=1.0, connections=7),))


@pytest.mark.parametrize("workload", ["steady", "dominant-tenant", ONE_TENANT])
@pytest.mark.parametrize("procs", [1, 2, 3, 5])
def test_the_shares_together_are_the_one_process_schedule(workload, procs: int) -> None:
    wl = load_workload(workload).at_rate(200.0, 5.0) if isinstance(workload, str) else workload
    whole = build_schedule(wl, seed=7)
    shares = split_units(whole, procs)
    assert len(shares) == min(procs, sum(whole.connections))
    uids = [share_uids(build_schedule(wl, seed=7), units) for units in shares]  # each process builds its own
    joined = np.sort(np.concatenate(uids))
    assert joined.tolist() == list(range(len(whole)))  # every request once
    for units, mine in zip(shares, uids):
        part, ids = _share(whole, tuple(units))
        assert ids == mine.tolist()
        assert part.sched_s.tolist() == whole.sched_s[mine].tolist()  # its own scheduled times
        assert part.content.tolist() == whole.content[mine].tolist()
        assert np.all(np.diff(part.sched_s) >= 0)
        slots = connection_slots(whole)[mine]
        assert {(int(t), int(s)) for t, s in zip(part.tenant, slots)} <= set(units)
    opened = {}
    for units in shares:
        for tenant, n in unit_connections(whole, units).items():
            opened[tenant] = opened.get(tenant, 0) + n
    assert opened == {t: c for t, c in zip(whole.tenants, whole.connections)}  # each connection once
    loads = [len(u) for u in uids]
    unit_weights = np.unique(whole.tenant.astype(np.int64) * 1000 + connection_slots(whole), return_counts=True)[1]
    assert max(loads) - min(loads) <= unit_weights.max()  # dealt heaviest first: within one unit of even


def test_one_tenant_splits_over_its_connections() -> None:
    whole = build_schedule(ONE_TENANT, seed=1)
    shares = split_units(whole, 2)
    assert [unit_connections(whole, u) for u in shares] == [{"solo": 4}, {"solo": 3}]
    assert split_units(whole, 20) and len(split_units(whole, 20)) == 7  # no more processes than connections
    with pytest.raises(ValueError):
        split_units(whole, 0)


def test_merged_histograms_answer_as_the_union_does() -> None:
    rng = np.random.default_rng(3)
    parts = [rng.lognormal(7.0, 1.5, n).astype(np.int64) + 1 for n in (5000, 1, 12345, 0, 800)]
    hists = []
    for values in parts:
        h = new_histogram()
        for v in values.tolist():
            h.record_value(v)
        hists.append(h)
    union = new_histogram()
    for v in np.concatenate(parts).tolist():
        union.record_value(v)
    merged = merge_histograms(h.encode() for h in hists)
    assert merged.get_total_count() == union.get_total_count() == sum(map(len, parts))
    for q in (0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0):
        assert merged.get_value_at_percentile(q) == union.get_value_at_percentile(q)
    assert (merged.get_min_value(), merged.get_max_value()) == (union.get_min_value(), union.get_max_value())
    assert lag_figures(merged) == lag_figures(union)


def test_transport_figures_add_up() -> None:
    a = {"late_over_10ms": 2, "max_open_connections": 5, "connect_failures": 0, "waited_for_connection": 3,
         "first_connect_failure": None, "connections_opened": {"t0": 3, "t1": 2}, "http_status": {"200": 10, "503": 1},
         "http_errors": {"503": "overloaded"}, "connection_errors": {"count": 0, "first": None}}
    b = {"late_over_10ms": 1, "max_open_connections": 4, "connect_failures": 1, "waited_for_connection": 0,
         "first_connect_failure": "refused", "connections_opened": {"t0": 4}, "http_status": {"200": 7, "429": 2},
         "http_errors": {"429": "tenant limit", "503": "other"}, "connection_errors": {"count": 1, "first": "reset"}}
    lags = {"send_lag_s": new_histogram(), "write_lag_s": new_histogram()}
    for v in (10, 20, 30):
        lags["send_lag_s"].record_value(v)
    out = merge_transport_stats([a, b], lags)
    assert out["sends_measured"] == 3 and out["late_over_10ms"] == 3 and out["max_open_connections"] == 9
    assert out["connections_opened"] == {"t0": 7, "t1": 2}
    assert out["http_status"] == {"200": 17, "429": 2, "503": 1}
    assert out["http_errors"] == {"429": "tenant limit", "503": "overloaded"}
    assert out["connection_errors"] == {"count": 1, "first": "reset"}
    assert out["first_connect_failure"] == "refused" and out["connect_failures"] == 1


class _Recording(asyncio.Protocol):
    """A tiny HTTP/1.1 server that answers 200 and keeps each request's uid and request ID."""

    seen: list[tuple[int, str | None]] = []

    def connection_made(self, transport) -> None:
        self.transport, self.parser, self.headers, self.body = transport, httptools.HttpRequestParser(self), {}, b""

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        if self.headers.get(b"x-harness-attempt") == b"0":
            self.seen.append((int(self.headers[b"x-harness-uid"]), json.loads(self.body).get("request_id")))
        self.headers, self.body = {}, b""
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")


@pytest.mark.live
def test_a_live_run_over_two_driver_processes_is_valid_and_sends_each_request_once() -> None:
    from harness.live.plan import plan_live

    ready, loop_box = threading.Event(), {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(loop.create_server(_Recording, "127.0.0.1", 0))
        loop_box["loop"], loop_box["port"] = loop, server.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    _Recording.seen = []
    try:
        plan = plan_live(f"http://127.0.0.1:{loop_box['port']}/predict", "steady", seed=5,
                         overrides={"request_ids": True}, duration_s=2.0, rate_rps=100.0, warmup_s=0.5,
                         driver_procs=2)
        res = plan.run()
    finally:
        loop_box["loop"].call_soon_threadsafe(loop_box["loop"].stop)
        thread.join(5)
    s, live = res.summary, res.summary.live or {}
    assert s.valid, s.invalid_reasons
    procs = live["driver_procs"]
    assert procs["procs"] == 2 and len(procs["per_process"]) == 2 and procs["cores"] >= 1
    assert sum(p["requests"] for p in procs["per_process"]) == s.requests.unique
    assert all(p["send_lag_p99_s"] is not None and not p["behind"] for p in procs["per_process"])
    assert s.requests.succeeded == s.requests.unique and live["sends_measured"] == s.requests.unique
    schedule = build_schedule(plan.workload, plan.seed)
    run = [(uid, rid) for uid, rid in _Recording.seen if not rid.startswith("warmup-")]
    assert sorted(uid for uid, _ in run) == list(range(len(schedule)))  # each request once, by its own number
    assert {rid for _, rid in run} == {f"{schedule.tenants[t]}-{i}" for i, t in enumerate(schedule.tenant.tolist())}


def test_the_realtime_guard_drops_a_driver_busy_for_two_looks_in_a_row(monkeypatch) -> None:
    from harness.live import driver_loop

    cpu = iter([0.0, 0.6, 0.7, 1.4, 2.1])   # process CPU at creation and at each look, 1 s apart
    wall = iter([0.0, 1.0, 2.0, 3.0, 4.0])
    policy = {"now": driver_loop.os.SCHED_RR}
    monkeypatch.setattr(driver_loop.time, "process_time", lambda: next(cpu))
    monkeypatch.setattr(driver_loop.time, "monotonic", lambda: next(wall))
    monkeypatch.setattr(driver_loop.os, "sched_getscheduler", lambda pid: policy["now"])
    monkeypatch.setattr(driver_loop.os, "sched_setscheduler", lambda pid, p, param: policy.update(now=p))

    class Loop:  # runs each look at once, in order
        def call_later(self, delay, callback):
            self.next = callback
            return self

        def cancel(self) -> None:
            pass

    loop = Loop()
    guard = driver_loop.RealtimeGuard(loop)  # type: ignore[arg-type]
    loop.next()          # 60% of a core: one look over half
    loop.next()          # 10%: the count starts again
    assert not guard.dropped
    loop.next()          # 70%
    loop.next()          # 70% again: two in a row, dropped
    assert guard.dropped and policy["now"] == driver_loop.os.SCHED_OTHER


def test_driver_priority_is_given_back_after_the_block() -> None:
    import os

    from harness.live.driver_loop import driver_priority

    before = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
    with driver_priority() as got:
        # What it says it got is what the process has (it yields only these three).
        now = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
        assert now == {"realtime": (now[0], os.SCHED_RR), "nice -10": (-10, os.SCHED_OTHER),
                       "normal": before}[got]
    assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)) == before


def test_the_environment_can_keep_the_driver_at_normal_priority(monkeypatch):
    import os

    from harness.live.driver_loop import PRIORITY_ENV, driver_priority

    monkeypatch.setenv(PRIORITY_ENV, "normal")
    before = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
    with driver_priority() as got:
        assert got == "normal"
        assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)) == before


class _Slow(_Recording):
    """Answers every request 0.2 s late."""

    def on_message_complete(self) -> None:
        asyncio.get_running_loop().call_later(0.2, self.transport.write,
                                              b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")


@pytest.mark.live
@pytest.mark.parametrize("procs", [1, 2])
def test_a_live_sweep_step_stops_early_once_it_has_certainly_failed(procs: int) -> None:
    from harness.analysis.sweep.steps import live_step
    from harness.live.plan import plan_live

    ready, box = threading.Event(), {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(loop.create_server(_Slow, "127.0.0.1", 0))
        box["loop"], box["port"] = loop, server.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    assert ready.wait(10)
    try:
        plan = plan_live(f"http://127.0.0.1:{box['port']}/predict", "steady", overrides={"slo_s": 0.1},
                         warmup_s=0, driver_procs=procs)
        step = live_step(plan, 0.99)(50.0, 8.0)   # every answer misses a 0.1 s SLO
    finally:
        box["loop"].call_soon_threadsafe(box["loop"].stop)
    assert step.stopped_early and step.ran_s < 4.0 and not step.passed
    # Stopping is the target's verdict: the retries still pending when the drive was cut must
    # not count as connections the target refused. (Send lag over a few dozen requests, with
    # this test's server sharing the process, is left to the test above.)
    assert not any("could not reach" in r for r in step.invalid_reasons), step.invalid_reasons
