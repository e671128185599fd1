"""The proxy guard's books (FrontEndWaits) and its rule (ProxyGuard): they cannot latch.

Properties over random interleavings of what happens to requests on connections
(heads arriving, trips to the GPUs and back, answers, late answers, timeouts,
disconnects): the books only ever hold requests in flight, a gone connection
leaves nothing behind, and they read oldest first. Then the rule on the books in
a closed loop: a front end of fixed capacity under a constant overload admits
about its capacity, and keeps admitting, whatever the overload.
"""

from __future__ import annotations

import heapq
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.http.overload import FrontEndWaits, ProxyGuard

CONNS = 4
OPS = st.lists(st.tuples(st.sampled_from(["head", "to_gpu", "back", "late_back", "answer", "gone"]),
                         st.integers(0, CONNS - 1), st.floats(0.0, 0.5)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_the_books_hold_only_requests_in_flight_whatever_the_interleaving(ops) -> None:
    w = FrontEndWaits()
    now = 0.0
    in_flight: dict[int, int] = {}      # the model: connection -> its request's number
    front_since: dict[int, float] = {}  # of those, the ones waiting in the front end, since when
    handles: list[tuple[int, int]] = []  # every (connection, request) that went to the GPUs, ever
    for op, c, dt in ops:
        now += dt
        if op == "head":
            in_flight[c] = w.begin(c, now)
            front_since[c] = now
        elif op == "to_gpu" and c in in_flight:
            assert w.to_gpu(c, in_flight[c])
            front_since.pop(c, None)
            handles.append((c, in_flight[c]))
        elif op in ("back", "late_back") and handles:
            # "back": the answer of the newest trip on c; "late_back": of any trip ever (maybe ended long ago)
            mine = [h for h in handles if h[0] == c]
            conn, request = (mine[-1] if mine and op == "back" else handles[int(dt * 1000) % len(handles)])
            live = in_flight.get(conn) == request and conn not in front_since
            assert w.from_gpu(conn, request, now) == live
            if live:
                front_since[conn] = now
        elif op in ("answer", "gone"):
            w.end(c)
            in_flight.pop(c, None)
            front_since.pop(c, None)
        assert len(w) == len(in_flight) and w.waiting == len(front_since)
        for conn in range(CONNS):
            assert w.current(conn) == in_flight.get(conn)
        expected = sorted(now - t for t in front_since.values())[::-1]
        assert w.oldest(now, CONNS) == expected  # oldest first, and nothing else
    for conn in range(CONNS):  # every connection goes away: nothing stays in the books
        w.end(conn)
    assert len(w) == 0 and w.oldest(now + 100.0, CONNS) == []


def _overloaded_front_end(offered_per_s: float, capacity_per_s: float, limit_s: float, seconds: float,
                          seed: int) -> tuple[int, int, float]:
    """A one-core front end (FIFO, a fixed CPU time per request) behind the proxy guard, under
    Poisson arrivals on fresh connections. Returns (admitted in the second half, answered in
    the second half, the longest front-end wait of a request answered in the second half)."""
    rng = random.Random(seed)
    guard = ProxyGuard(limit_s)
    books = FrontEndWaits()
    service_s = 1.0 / capacity_per_s
    events: list[tuple[float, int, int]] = []  # (time, kind 0 = done / 1 = arrival, connection)
    t = 0.0
    conn = 0
    while t < seconds:
        t += rng.expovariate(offered_per_s)
        conn += 1
        events.append((t, 1, conn))
    heapq.heapify(events)
    free_at = 0.0
    admitted = answered = 0
    worst = 0.0
    started: dict[int, float] = {}
    while events:
        now, kind, c = heapq.heappop(events)
        second_half = now >= seconds / 2
        if kind == 1:
            if guard.decide(guard.signal(books.oldest(now, guard.quorum))) is not None:
                continue  # refused at the door: it costs the loop nothing here
            books.begin(c, now)
            started[c] = now
            admitted += second_half
            free_at = max(free_at, now) + service_s
            heapq.heappush(events, (free_at, 0, c))
        else:
            books.end(c)
            answered += second_half
            wait = now - started.pop(c)
            if second_half:
                worst = max(worst, wait)
    return admitted, answered, worst


@settings(max_examples=15, deadline=None)
@given(st.floats(1.2, 8.0), st.sampled_from([0.01, 0.03, 0.1]), st.integers(0, 10**6))
def test_under_constant_overload_the_guard_admits_about_capacity(overload, limit_s, seed) -> None:
    capacity = 500.0
    seconds = 4.0
    admitted, answered, worst = _overloaded_front_end(overload * capacity, capacity, limit_s, seconds, seed)
    half = capacity * seconds / 2
    # Goodput flat past saturation: the core stays busy (no collapse, no latch)...
    assert answered >= 0.95 * half, (answered, half)
    # ...and nothing is admitted beyond what it can serve, so waits stay bounded, not growing
    # with the run's length. The signal is an age (the quorum-th oldest's wait), which lags the
    # queue behind it: while it stays under the limit, arrivals keep coming at the offered rate,
    # so the bound scales with the overload (closed form: about overload x limit).
    bound_s = (1.25 * overload + 2) * limit_s + 4 * ProxyGuard(limit_s).quorum / capacity  # Poisson bursts: 1.25
    assert worst <= bound_s, (worst, bound_s)
    assert admitted <= half + bound_s * capacity  # what it admitted, less the backlog it may end with


def test_the_guard_admits_again_once_its_backlog_is_served() -> None:
    # A burst trips the guard; once the requests it admitted are answered it admits at once.
    guard = ProxyGuard(0.03)
    books = FrontEndWaits()
    for c in range(10):
        books.begin(c, 0.0)
    assert guard.decide(guard.signal(books.oldest(0.05, guard.quorum))) is not None
    for c in range(10):
        books.end(c)
    assert guard.decide(guard.signal(books.oldest(0.06, guard.quorum))) is None
