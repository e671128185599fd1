"""targets.client on the virtual clock with a function as the server: exact event logs.

Each test runs requests through a ``Client`` whose transport is a ``FunctionTransport``
and asserts the exact (time, event) list: when each attempt was sent, what came back, and
when and how the request finished. Times are virtual seconds, rounded to the microsecond.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.clock import run_virtual
from harness.engine.function_transport import FunctionTransport, Handler
from targets.client import Client, ClientPolicy
from targets.config import Backoff
from targets.protocol import Attempt, Response, Status
from targets.throttle import RetryBudget, Throttle

NAIVE = ClientPolicy(timeout_s=1.0, retries=2, backoff=Backoff.NONE, backoff_base_s=0.1,
                     backoff_cap_s=1.0, request_ids=False, retry_budget=None,
                     honour_retry_after=False, propagate_deadline=False)


def policy(**changes: Any) -> ClientPolicy:
    return ClientPolicy(**{**NAIVE.__dict__, **changes})


class LogSink:
    """The recorder's side of the client: logs finals (attempts are in the send log)."""

    def __init__(self, log: list[tuple], now: Callable[[], float]) -> None:
        self.log = log
        self.now = now

    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        self.log.append((round(sent_s + latency_s, 6), "answer", status.name))

    def finish(self, index: int, status: Status, done_s: float, attempts: int) -> None:
        self.log.append((round(done_s, 6), "finish", index, status.name, attempts))


def run_client(p: ClientPolicy, handler: Handler, starts: list[tuple[float, str]],
               rng: random.Random | None = None, until_s: float = 60.0) -> list[tuple]:
    """Start request i at starts[i] = (time, tenant); log sends, answers and finishes."""
    log: list[tuple] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def logged(attempt: Attempt):
            log.append((round(loop.time(), 6), "send", attempt.uid, attempt.attempt_no))
            return handler(attempt)

        client = Client(p, FunctionTransport(logged), LogSink(log, loop.time),
                        rng or random.Random(0))
        for i, (t, tenant) in enumerate(starts):
            loop.call_at(t, client.start, i, tenant, 0, i, 0, 1)
        await asyncio.sleep(until_s)

    run_virtual(main())
    return log


def after(seconds: float, response: Response) -> Handler:
    async def handler(attempt: Attempt) -> Response:
        await asyncio.sleep(seconds)
        return response
    return handler


def test_an_answer_in_time_is_one_attempt() -> None:
    assert run_client(NAIVE, after(0.25, Response(Status.OK)), [(1.0, "t")]) == [
        (1.0, "send", 0, 0), (1.25, "answer", "OK"), (1.25, "finish", 0, "OK", 1)]


def test_naive_client_retries_each_timeout_at_once_until_retries_run_out() -> None:
    lost = lambda attempt: None  # noqa: E731 - the server never answers
    assert run_client(NAIVE, lost, [(0.5, "t")]) == [
        (0.5, "send", 0, 0), (1.5, "answer", "TIMEOUT"),
        (1.5, "send", 0, 1), (2.5, "answer", "TIMEOUT"),
        (2.5, "send", 0, 2), (3.5, "answer", "TIMEOUT"), (3.5, "finish", 0, "TIMEOUT", 3)]


def test_a_late_answer_is_dropped_and_the_retry_answers() -> None:
    # 1.5 s per answer, 1 s timeout: every attempt times out; the late answers are ignored.
    log = run_client(policy(retries=1), after(1.5, Response(Status.OK)), [(0.0, "t")])
    assert log == [(0.0, "send", 0, 0), (1.0, "answer", "TIMEOUT"),
                   (1.0, "send", 0, 1), (2.0, "answer", "TIMEOUT"),
                   (2.0, "finish", 0, "TIMEOUT", 2)]


def test_bad_request_is_final_but_errors_and_sheds_are_retried() -> None:
    assert run_client(NAIVE, lambda a: Response(Status.BAD_REQUEST), [(0.0, "t")]) == [
        (0.0, "send", 0, 0), (0.0, "answer", "BAD_REQUEST"), (0.0, "finish", 0, "BAD_REQUEST", 1)]
    # A naive client retries a shed at once: 429 and 500 alike, retries + 1 attempts.
    answers = iter([Status.TOO_MANY, Status.ERROR, Status.OK])
    assert run_client(NAIVE, lambda a: Response(next(answers)), [(0.0, "t")]) == [
        (0.0, "send", 0, 0), (0.0, "answer", "TOO_MANY"),
        (0.0, "send", 0, 1), (0.0, "answer", "ERROR"),
        (0.0, "send", 0, 2), (0.0, "answer", "OK"), (0.0, "finish", 0, "OK", 3)]


def test_exponential_backoff_is_capped_full_jitter_under_a_seeded_rng() -> None:
    p = policy(retries=4, backoff=Backoff.EXPONENTIAL, backoff_base_s=0.1, backoff_cap_s=0.3)
    log = run_client(p, lambda a: Response(Status.ERROR), [(0.0, "t")], rng=random.Random(7))
    # Full jitter: pause k ~ U(0, min(cap, base * 2**(k-1))): ceilings 0.1, 0.2, 0.3 (capped), 0.3.
    expect_rng = random.Random(7)
    pauses = [expect_rng.uniform(0.0, ceiling) for ceiling in (0.1, 0.2, 0.3, 0.3)]
    sends = [0.0]
    for pause in pauses:
        sends.append(sends[-1] + pause)
    expected: list[tuple] = []
    for k, t in enumerate(sends):
        expected += [(round(t, 6), "send", 0, k), (round(t, 6), "answer", "ERROR")]
    expected.append((round(sends[-1], 6), "finish", 0, "ERROR", 5))
    assert log == expected
    assert all(0.0 < pause <= 0.3 for pause in pauses)


def test_retry_after_sets_the_pause_on_429_and_503() -> None:
    p = policy(honour_retry_after=True)
    answers = iter([Response(Status.UNAVAILABLE, retry_after_s=0.5),
                    Response(Status.TOO_MANY, retry_after_s=0.25), Response(Status.OK)])
    assert run_client(p, lambda a: next(answers), [(1.0, "t")]) == [
        (1.0, "send", 0, 0), (1.0, "answer", "UNAVAILABLE"),
        (1.5, "send", 0, 1), (1.5, "answer", "TOO_MANY"),
        (1.75, "send", 0, 2), (1.75, "answer", "OK"), (1.75, "finish", 0, "OK", 3)]


def test_retry_after_is_a_floor_under_the_jittered_backoff() -> None:
    p = policy(retries=1, honour_retry_after=True, backoff=Backoff.EXPONENTIAL,
               backoff_base_s=1.0, backoff_cap_s=1.0)
    answers = iter([Response(Status.UNAVAILABLE, retry_after_s=0.5), Response(Status.OK)])
    log = run_client(p, lambda a: next(answers), [(0.0, "t")], rng=random.Random(3))
    pause = max(random.Random(3).uniform(0.0, 1.0), 0.5)
    assert log == [(0.0, "send", 0, 0), (0.0, "answer", "UNAVAILABLE"),
                   (round(pause, 6), "send", 0, 1), (round(pause, 6), "answer", "OK"),
                   (round(pause, 6), "finish", 0, "OK", 2)]


def test_retry_after_is_ignored_by_a_client_that_does_not_honour_it() -> None:
    answers = iter([Response(Status.UNAVAILABLE, retry_after_s=0.5), Response(Status.OK)])
    assert run_client(policy(retries=1), lambda a: next(answers), [(0.0, "t")]) == [
        (0.0, "send", 0, 0), (0.0, "answer", "UNAVAILABLE"),
        (0.0, "send", 0, 1), (0.0, "answer", "OK"), (0.0, "finish", 0, "OK", 2)]


def test_the_retry_budget_stops_retries_per_tenant() -> None:
    # Ratio 0: only the budget's floor of 10 retries per tenant. Twelve failing requests of
    # tenant a, one at a time: the first ten get their retry, the last two do not; tenant b
    # has its own budget.
    p = policy(retries=1, retry_budget=0.0)
    starts = [(float(i), "a") for i in range(12)] + [(12.0, "b")]
    log = run_client(p, lambda a: Response(Status.ERROR), starts)
    finishes = [(e[2], e[4]) for e in log if e[1] == "finish"]
    assert finishes == [(i, 2) for i in range(10)] + [(10, 1), (11, 1), (12, 2)]
    assert log[-8:] == [(11.0, "send", 11, 0), (11.0, "answer", "ERROR"),
                        (11.0, "finish", 11, "ERROR", 1),
                        (12.0, "send", 12, 0), (12.0, "answer", "ERROR"),
                        (12.0, "send", 12, 1), (12.0, "answer", "ERROR"),
                        (12.0, "finish", 12, "ERROR", 2)]


def test_retry_budget_allows_ratio_times_first_attempts_plus_the_floor() -> None:
    budget = RetryBudget(0.5, floor=1)
    spent = []
    for _ in range(4):
        budget.record_first()
        spent.append(budget.try_spend())
        spent.append(budget.try_spend())
    # after n firsts the budget holds 0.5 n + 1 retries: 1.5, 2, 2.5, 3
    assert spent == [True, False, True, False, False, False, True, False]


def test_request_ids_and_deadlines_ride_on_every_attempt() -> None:
    seen: list[tuple] = []

    def handler(attempt: Attempt):
        seen.append((attempt.attempt_no, attempt.request_id, attempt.sent_s, attempt.deadline_s))
        return None  # lost: time out

    run_client(policy(retries=1, request_ids=True, propagate_deadline=True), handler,
               [(2.0, "gold")])
    assert seen == [(0, 0, 2.0, 3.0), (1, 0, 3.0, 4.0)]  # the request's number (on the wire: "gold-0")
    seen.clear()
    run_client(policy(retries=0), handler, [(2.0, "gold")])
    assert seen == [(0, None, 2.0, None)]


# -- adaptive throttling (SRE book, "Handling Overload") ------------------------------------

def test_the_throttle_refuses_nothing_while_the_server_accepts_over_one_in_k() -> None:
    t = Throttle(k=2.0, window_s=2.0)
    for i in range(100):  # half of everything accepted: requests == k * accepts
        t.request(i * 0.01)
        if i % 2 == 0:
            t.accept(i * 0.01)
    assert t.reject_probability(1.0) == 0.0
    t.request(1.0)  # one more unanswered request: now over k x accepts
    assert t.reject_probability(1.0) == 1 / 102


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.booleans()), max_size=300), st.floats(1.0, 4.0),
       st.floats(0.1, 5.0))
def test_the_throttle_only_counts_its_window_and_its_chance_is_a_probability(
        events: list[tuple[float, bool]], k: float, window_s: float) -> None:
    t = Throttle(k, window_s)
    events.sort()
    for i, (now, accepted) in enumerate(events):
        if i % 2:  # as the client counts an attempt that ended
            t.ended(now, accepted)
        else:
            t.request(now)
            if accepted:
                t.accept(now)
        p = t.reject_probability(now)
        assert 0.0 <= p < 1.0
        # what the throttle holds is exactly the events of the slices still in its window
        oldest = int(now // t.slice_s) - t.buckets + 1
        inside = [a for s, a in events[:i + 1] if int(s // t.slice_s) >= oldest]
        assert (t.total_requests, t.total_accepts) == (len(inside), sum(inside))
    if events:  # a window later it has forgotten everything
        assert t.reject_probability(events[-1][0] + window_s + t.slice_s) == 0.0
        assert t.total_requests == t.total_accepts == 0


def test_under_constant_overload_the_client_sends_sqrt_k_capacity_offered() -> None:
    """A server that accepts 100 req/s and refuses the rest, offered 1,000 req/s for 20 s: past
    the first window the client sends about sqrt(k x 100 x 1,000) req/s (the fixed point of
    p = 1 - k C / S with S = (1 - p) R) and refuses the rest itself."""
    capacity, offered, k = 100.0, 1000.0, 2.0
    accepted_at: list[float] = []
    bucket = {"tokens": 0.0, "at": 0.0}

    def server(attempt: Attempt) -> Response:  # a token bucket: capacity per s, a burst of 5
        now = asyncio.get_running_loop().time()
        bucket["tokens"] = min(5.0, bucket["tokens"] + (now - bucket["at"]) * capacity)
        bucket["at"] = now
        if bucket["tokens"] >= 1.0:
            bucket["tokens"] -= 1.0
            accepted_at.append(now)
            return Response(Status.OK)
        return Response(Status.UNAVAILABLE)

    p = policy(retries=0, throttle_k=k, throttle_window_s=2.0)
    starts = [(i / offered, "t") for i in range(int(20 * offered))]
    log = run_client(p, server, starts, rng=random.Random(1), until_s=21.0)
    sent = [t for t, what, *_ in log if what == "send" and t >= 4.0]
    refused_here = [e for e in log if e[1] == "finish" and e[4] == 0 and e[0] >= 4.0]
    ok = [t for t in accepted_at if t >= 4.0]
    assert len(ok) / 16 == pytest.approx(capacity, rel=0.02)  # the server stays at its capacity
    assert len(sent) / 16 == pytest.approx((k * capacity * offered) ** 0.5, rel=0.1)  # and is sent less
    assert all(e[3] == "UNAVAILABLE" for e in refused_here) and len(refused_here) + len(sent) == 16_000


def test_a_client_without_the_throttle_sends_everything() -> None:
    log = run_client(policy(retries=0), lambda a: Response(Status.UNAVAILABLE),
                     [(i * 0.001, "t") for i in range(1000)])
    assert sum(1 for e in log if e[1] == "send") == 1000


def test_the_throttle_lets_go_as_soon_as_the_server_accepts_again() -> None:
    """Everything refused for 5 s (a pause), then everything accepted: the client throttles
    during the refusals and stops within one slice (0.2 s) of the first accepted answers."""
    def server(attempt: Attempt) -> Response:
        return Response(Status.UNAVAILABLE if asyncio.get_running_loop().time() < 5.0 else Status.OK)

    p = policy(retries=0, throttle_k=2.0, throttle_window_s=2.0)
    log = run_client(p, server, [(i / 500, "t") for i in range(5000)], rng=random.Random(2), until_s=11.0)
    throttled = [e[0] for e in log if e[1] == "finish" and e[4] == 0]
    assert len([t for t in throttled if t < 5.0]) > 1000  # it did throttle the refusals
    assert max(throttled) < 5.2  # and let go within a slice of the first accepts
