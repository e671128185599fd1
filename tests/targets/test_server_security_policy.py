"""The pure policies behind the hardened live server, on plain numbers (no loop, no sockets).

Dedupe by (tenant, ID, input digest); bounded and expiring containers; the
proxy's connection table; limits, exposure and the log budget; the parser's
handling of numbers of any size.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.admission import TenantBuckets, TokenBucket
from targets.bounded import Bound, BoundedMap, RecentSet
from targets.dedupe import Conflict, Deduper, input_digest
from targets.http.conn_table import Admit, ConnTable, Expiry, Phase
from targets.http.limits import EdgeLimits, LogBudget, check_exposure
from targets.http.parse import MAX_REASON_CHARS, BadRequest, parse_predict
from targets.protocol import Attempt, Response, Status

INPUTS = ([0.0, 1.0], [1.0, 0.0], [0.5, 0.5])


def _attempt(uid: int, tenant: str, rid: str | None, x: list[float], log: list) -> Attempt:
    a = Attempt(uid, tenant, 0, 0, 0, 1, 0.0, 0, request_id=rid, payload=x)
    a.on_answer = lambda r: log.append((a, r))
    return a


# -- dedupe ---------------------------------------------------------------------------------------

def test_two_tenants_reusing_one_id_never_meet() -> None:
    d, log = Deduper(ttl_s=5.0), []
    a = _attempt(1, "alice", "rid-1", INPUTS[0], log)
    b = _attempt(2, "bob", "rid-1", INPUTS[1], log)
    assert d.offer(a, 0.0) and d.offer(b, 0.0)  # both are new work: different keys
    for w in d.finish(a, Response(Status.OK, output="alice's"), 0.1):
        w.answer(Response(Status.OK, output="alice's"))
    late = _attempt(3, "bob", "rid-1", INPUTS[1], log)
    assert not d.offer(late, 0.2)  # coalesced onto bob's own in-flight work, not alice's answer
    assert [(x.uid, r.output) for x, r in log] == [(1, "alice's")]


def test_same_id_with_another_input_is_a_conflict_in_flight_and_after() -> None:
    d, log = Deduper(ttl_s=5.0), []
    a = _attempt(1, "t", "r", INPUTS[0], log)
    assert d.offer(a, 0.0)
    assert not d.offer(_attempt(2, "t", "r", INPUTS[1], log), 0.1)       # in flight: 409
    d.finish(a, Response(Status.OK, output="x"), 0.2)
    assert not d.offer(_attempt(3, "t", "r", INPUTS[2], log), 0.3)       # remembered: 409
    assert not d.offer(_attempt(4, "t", "r", [0, 1], log), 0.4)          # 0 == 0.0: same input, replayed
    assert [(x.uid, type(r).__name__) for x, r in log] == [(2, "Conflict"), (3, "Conflict"), (4, "Response")]
    assert d.stats.conflicts == 2 and d.stats.replayed == 1
    assert d.offer(_attempt(5, "t", "r", INPUTS[1], log), 5.3)           # past the TTL: new work


def test_waiters_on_one_id_are_capped() -> None:
    d, log = Deduper(ttl_s=5.0, max_waiters=3), []
    assert d.offer(_attempt(0, "t", "r", INPUTS[0], log), 0.0)
    for uid in range(1, 6):
        assert not d.offer(_attempt(uid, "t", "r", INPUTS[0], log), 0.0)
    assert [r.status for _, r in log] == [Status.TOO_MANY, Status.TOO_MANY] and d.stats.refused == 2


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["offer", "offer", "finish", "tick"]), st.sampled_from(["A", "B", "A1"]),
                          st.integers(0, 2), st.integers(0, 2)), max_size=80))
def test_no_answer_reaches_a_request_whose_tenant_id_or_input_differs(script) -> None:
    """Random interleavings of offers, finishes and clock ticks: every answer a
    request receives was computed for its own (tenant, ID, input). Tenants and IDs
    whose concatenations meet ("A" + "1r0", "A1" + "r0") must not share a key."""
    d, log = Deduper(ttl_s=2.0, max_done=4), []
    running: list[Attempt] = []
    now, uid = 0.0, 0
    for op, tenant, k, x in script:
        if op == "tick":
            now += 0.7
        elif op == "offer":
            uid += 1
            a = _attempt(uid, tenant, ["r0", "1r0", "r1"][k], INPUTS[x], log)
            if d.offer(a, now):
                running.append(a)
        elif running:
            a = running.pop(k % len(running))
            ok = Response(Status.OK, output=(a.tenant, a.request_id, tuple(a.payload)))
            for w in d.finish(a, ok, now):
                w.answer(ok)
    seen = set()
    for a, r in log:
        assert a.uid not in seen, "answered twice"
        seen.add(a.uid)
        if r.status is Status.OK:
            assert r.output == (a.tenant, a.request_id, tuple(a.payload)), "another request's answer"
        else:
            assert isinstance(r, Conflict) or r.status is Status.TOO_MANY
    assert d.done_entries <= 4


def test_input_digest_is_by_value() -> None:
    assert input_digest([1, 2]) == input_digest([1.0, 2.0]) != input_digest([2.0, 1.0])
    assert input_digest([[1, 2], [3]]) != input_digest([[1], [2, 3]])
    assert input_digest([10 ** 400]) != input_digest([10 ** 400 + 1])  # past float range: by text


# -- bounded containers ------------------------------------------------------------------------------

def test_bounded_map_expires_by_age_and_evicts_by_count() -> None:
    m: BoundedMap[str, int] = BoundedMap(Bound(max_items=3, ttl_s=10.0))
    for i, key in enumerate("abcd"):
        m.put(key, i, now=float(i))
    assert list(m) == ["b", "c", "d"] and m.evicted == 1           # 4 puts, room for 3
    assert m.get("b", now=11.5) is None and m.expired == 1         # put at t=1: past 10 s at t=11.5
    m.put("e", 4, now=12.5)                                        # c (t=2) expires on the way
    assert list(m) == ["d", "e"] and m.get("d", now=12.5) == 3


def test_recent_set_holds_a_window_not_a_history() -> None:
    s: RecentSet[int] = RecentSet(Bound(max_items=1000, ttl_s=1.0))
    for i in range(100_000):
        s.add(i, now=i * 0.001)  # 1,000 per second for 100 s
    assert len(s) <= 1001 and 99_999 in s and 0 not in s


def test_tenant_buckets_forget_only_full_buckets() -> None:
    b = TenantBuckets(rate=10.0, capacity=5.0, max_tenants=100)
    for i in range(1000):
        b.bucket(f"t{i}", now=i * 0.01)  # 1,000 tenants over 10 s; a bucket refills in 0.5 s
    assert len(b) <= 51
    hot = b.bucket("hot", 20.0)
    assert all(hot.try_take(20.0) for _ in range(5)) and not hot.try_take(20.0)
    assert not b.bucket("hot", 20.05).try_take(20.05)               # half a token: kept, not replaced
    fresh = TokenBucket(10.0, 5.0, 21.0)
    assert b.bucket("hot", 21.0).tokens == fresh.tokens             # after the TTL: exactly a full bucket


# -- the proxy's connection table ---------------------------------------------------------------------

LIM = EdgeLimits(idle_timeout_s=10.0, header_timeout_s=2.0, body_timeout_s=5.0, max_connections=4,
                 max_connections_per_client=2)


def test_caps_refuse_per_client_and_evict_the_longest_idle() -> None:
    t: ConnTable[str] = ConnTable(LIM)
    assert t.admit("a1", "A", 0.0) == (Admit.ACCEPT, None)
    assert t.admit("a2", "A", 1.0) == (Admit.ACCEPT, None)
    assert t.admit("a3", "A", 2.0) == (Admit.REFUSE_CLIENT, None)      # A holds its 2
    assert t.admit("b1", "B", 3.0) == (Admit.ACCEPT, None)
    t.upstream("b1", b"GET / HTTP/1.1\r\n", 3.0)                       # b1 is mid-head: not idle
    assert t.admit("c1", "C", 4.0) == (Admit.ACCEPT, None)             # 4 of 4
    assert t.admit("d1", "D", 5.0) == (Admit.EVICT, "a1")              # full: a1 idle longest (t=0)
    t.upstream("a2", b"x", 5.0)
    t.upstream("c1", b"x", 5.0)
    t.upstream("d1", b"x", 5.0)
    assert t.admit("e1", "E", 6.0) == (Admit.REFUSE_TOTAL, None)       # full, nothing idle
    assert t.count() == 4 and t.count(address="A") == 1 and t.count(Phase.HEAD) == 4


def test_a_trickled_head_expires_from_its_first_byte() -> None:
    t: ConnTable[str] = ConnTable(LIM)
    t.admit("slow", "S", 0.0)
    t.admit("fast", "F", 0.0)
    for i in range(10):                                   # one byte every 0.3 s from t=1
        t.upstream("slow", b"G", 1.0 + 0.3 * i)
    t.upstream("fast", b"GET / HTTP/1.1\r\nHost: x\r\n", 1.0)
    t.upstream("fast", b"\r\n", 1.5)                      # CRLF CRLF split across chunks
    assert t.phase("fast") is Phase.WAITING and t.deadline("slow") == 3.0
    assert t.expire(2.99) == [] and t.expire(3.0) == [("slow", Expiry.HEADER)]
    t.downstream("fast", 4.0)                             # the answer: keep-alive idle from t=4
    assert t.phase("fast") is Phase.IDLE and t.expire(13.99) == [] and t.expire(14.0) == [("fast", Expiry.IDLE)]
    assert len(t) == 0 and t.clients == 0


def test_a_silent_connection_is_idle() -> None:
    t: ConnTable[str] = ConnTable(LIM)
    t.admit("quiet", "Q", 0.0)
    assert t.expire(9.9) == [] and t.expire(10.0) == [("quiet", Expiry.IDLE)]


# -- limits, exposure, log budget ---------------------------------------------------------------------------

def test_limits_validate_and_fit_the_descriptor_limit() -> None:
    with pytest.raises(ValueError):
        EdgeLimits(header_timeout_s=0)
    with pytest.raises(ValueError):
        EdgeLimits(max_connections=10, max_connections_per_client=11)
    fit = EdgeLimits().for_fd_limit(1024)                 # (1024 - 256) // 3 descriptors a connection
    assert fit.max_connections == 256 and fit.max_connections_per_client == 256
    assert EdgeLimits().for_fd_limit(1_000_000) == EdgeLimits()


def test_binding_beyond_loopback_needs_expose() -> None:
    assert check_exposure("127.0.0.1", False) is False and check_exposure("::1", False) is False
    assert check_exposure("localhost", False) is False
    with pytest.raises(ValueError, match="--expose"):
        check_exposure("0.0.0.0", False)
    assert check_exposure("0.0.0.0", True) is True


def test_log_budget_allows_a_few_lines_a_window_and_counts_the_rest() -> None:
    b = LogBudget(per_window=2, window_s=10.0)
    got = [b.allow(t) for t in (0.0, 1.0, 2.0, 3.0, 4.0, 10.0, 11.0)]
    assert got == [0, 0, None, None, None, 3, 0]   # 3 suppressed, reported by the next line


# -- parsing numbers of any size, reasons that echo nothing ----------------------------------------------------

@pytest.mark.parametrize("raw", [b"1" + b"0" * 400, b"1e999", b"-1e999", b"1" + b"0" * 4000, b"1e-999", b"0.0"])
def test_any_deadline_number_is_a_clean_422(raw: bytes) -> None:
    body = b'{"tenant":"t0","deadline_ms":' + raw + b',"input":[1]}'
    with pytest.raises(BadRequest) as info:
        parse_predict(body, None, lambda x: None)
    assert info.value.status == 422 and len(info.value.reason) <= MAX_REASON_CHARS


def test_reasons_never_echo_the_request() -> None:
    marker = "ECHO" * 50_000
    bodies = [b'{"tenant":"t0","input":[1],"' + marker.encode() + b'":1}',
              b'{"tenant":"' + marker.encode() + b'","input":[1]}',
              b'{"tenant":"t0","request_id":"' + marker.encode() + b'","input":[1]}']

    def choke(x):
        raise ValueError(f"could not convert string to float: '{marker}'")

    bodies_and_validators = [(b, lambda x: None) for b in bodies] + [(b'{"tenant":"t0","input":["x"]}', choke)]
    for body, validate in bodies_and_validators:
        with pytest.raises(BadRequest) as info:
            parse_predict(body, frozenset({"t0"}), validate)
        assert "ECHO" not in info.value.reason and len(info.value.reason) <= MAX_REASON_CHARS


def test_next_deadline_is_the_earliest_front() -> None:
    t: ConnTable[str] = ConnTable(LIM)
    assert t.next_deadline() is None
    t.admit("idle", "A", 0.0)                   # idle: due at 10
    t.admit("head", "B", 1.0)
    t.upstream("head", b"P", 1.5)               # head: due at 3.5
    assert t.next_deadline() == 3.5
    t.upstream("head", b"\r\n\r\n", 2.0)        # waiting: untimed
    assert t.next_deadline() == 10.0
