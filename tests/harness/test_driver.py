"""harness.engine.driver on the virtual clock with a function as the server: exact event logs.

The driver is open loop: every request starts at its scheduled time, however slowly the
target answers, and ``run`` returns when the last request has its final answer.
"""

from __future__ import annotations

import asyncio
import random

import numpy as np

from harness.engine.clock import run_virtual
from harness.engine.driver import CHUNK, Driver, connections
from harness.engine.function_transport import FunctionTransport, Handler
from targets.client import ClientPolicy
from targets.config import Backoff
from targets.protocol import Attempt, Response, Status
from workloads.arrivals import Schedule

POLICY = ClientPolicy(timeout_s=1.0, retries=0, backoff=Backoff.NONE, backoff_base_s=0.1,
                      backoff_cap_s=1.0, request_ids=False, retry_budget=None,
                      honour_retry_after=False, propagate_deadline=False)


def schedule(rows: list[tuple[float, int]], tenants: tuple[str, ...] = ("a",),
             connections: tuple[int, ...] = (1,)) -> Schedule:
    """A schedule of (start s, tenant index) rows; content = row index, size 1."""
    n = len(rows)
    return Schedule(
        config=None,  # type: ignore[arg-type]  # the driver reads only the arrays
        tenants=tenants, connections=connections,
        sched_s=np.array([t for t, _ in rows], dtype=float),
        tenant=np.array([k for _, k in rows], dtype=np.int64),
        content=np.arange(n), variant=np.zeros(n, dtype=np.int64), size=np.ones(n, dtype=np.int64))


class LogSink:
    def __init__(self, log: list[tuple]) -> None:
        self.log = log

    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        pass

    def finish(self, index: int, status: Status, done_s: float, attempts: int) -> None:
        self.log.append((round(done_s, 6), "finish", index, status.name))


def drive(s: Schedule, handler: Handler, t0: float | None = None,
          policy: ClientPolicy = POLICY) -> tuple[list[tuple], float]:
    """The exact log, and the virtual time at which ``Driver.run`` returned."""
    log: list[tuple] = []

    async def main() -> float:
        loop = asyncio.get_running_loop()

        def logged(attempt: Attempt):
            log.append((round(loop.time(), 6), "send", attempt.uid, attempt.tenant, attempt.conn))
            return handler(attempt)

        await Driver(s, policy, FunctionTransport(logged), LogSink(log), random.Random(0)).run(t0)
        return round(loop.time(), 6)

    return log, run_virtual(main())


def slow(seconds: float) -> Handler:
    async def handler(attempt: Attempt) -> Response:
        await asyncio.sleep(seconds)
        return Response(Status.OK)
    return handler


def test_every_request_starts_at_its_scheduled_time_however_slow_the_target() -> None:
    # A 0.6 s server and arrivals 0.1 s apart: an open loop does not wait for answers.
    log, returned = drive(schedule([(0.0, 0), (0.1, 0), (0.1, 0), (0.35, 0)]), slow(0.6))
    assert log == [
        (0.0, "send", 0, "a", 0), (0.1, "send", 1, "a", 0), (0.1, "send", 2, "a", 0),
        (0.35, "send", 3, "a", 0),
        (0.6, "finish", 0, "OK"), (0.7, "finish", 1, "OK"), (0.7, "finish", 2, "OK"),
        (0.95, "finish", 3, "OK")]
    assert returned == 0.95  # run() returns with the last final answer


def test_schedule_times_are_relative_to_t0() -> None:
    log, returned = drive(schedule([(0.0, 0), (0.5, 0)]), lambda a: Response(Status.OK), t0=2.0)
    assert log == [(2.0, "send", 0, "a", 0), (2.0, "finish", 0, "OK"),
                   (2.5, "send", 1, "a", 0), (2.5, "finish", 1, "OK")]
    assert returned == 2.5


def test_each_tenants_requests_go_round_robin_over_its_connections() -> None:
    rows = [(0.0, 0), (0.1, 1), (0.2, 0), (0.3, 0), (0.4, 1), (0.5, 0)]
    log, _ = drive(schedule(rows, tenants=("big", "small"), connections=(3, 2)),
                   lambda a: Response(Status.OK))
    sends = [e[2:] for e in log if e[1] == "send"]
    assert sends == [(0, "big", 0), (1, "small", 0), (2, "big", 1), (3, "big", 2),
                     (4, "small", 1), (5, "big", 0)]


def test_run_waits_for_timeouts_of_lost_requests() -> None:
    log, returned = drive(schedule([(0.0, 0), (0.2, 0)]), lambda a: None)
    assert log == [(0.0, "send", 0, "a", 0), (0.2, "send", 1, "a", 0),
                   (1.0, "finish", 0, "TIMEOUT"), (1.2, "finish", 1, "TIMEOUT")]
    assert returned == 1.2


def test_retries_of_early_requests_do_not_delay_later_starts() -> None:
    answers = {0: iter([Status.UNAVAILABLE, Status.OK])}

    def handler(attempt: Attempt):
        status = next(answers[attempt.uid]) if attempt.uid in answers else Status.OK
        return Response(status, retry_after_s=0.3 if status is Status.UNAVAILABLE else None)

    p = ClientPolicy(**{**POLICY.__dict__, "retries": 1, "honour_retry_after": True})
    log, _ = drive(schedule([(0.0, 0), (0.1, 0)]), handler, policy=p)
    assert log == [(0.0, "send", 0, "a", 0), (0.1, "send", 1, "a", 0), (0.1, "finish", 1, "OK"),
                   (0.3, "send", 0, "a", 0), (0.3, "finish", 0, "OK")]


def test_an_empty_schedule_returns_at_once() -> None:
    log, returned = drive(schedule([]), lambda a: Response(Status.OK), t0=5.0)
    assert (log, returned) == ([], 0.0)


def test_a_cancelled_run_starts_nothing_more_and_its_last_answers_end_quietly() -> None:
    # A sweep step cancelled mid-run: the requests in flight still get their answers after run()
    # is gone; none scheduled later starts, and the last answer must not complete the cancelled
    # run (it raised InvalidStateError from the loop's callback, a traceback on the console).
    log: list[tuple] = []
    errors: list[object] = []

    async def main() -> bool:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, ctx: errors.append(ctx.get("exception") or ctx.get("message")))

        def logged(attempt: Attempt):
            log.append((round(loop.time(), 6), "send", attempt.uid, attempt.tenant, attempt.conn))
            return slow(0.6)(attempt)

        driver = Driver(schedule([(0.0, 0), (0.1, 0), (0.5, 0)]), POLICY, FunctionTransport(logged), LogSink(log),
                        random.Random(0))
        run = asyncio.ensure_future(driver.run())
        await asyncio.sleep(0.2)
        run.cancel()
        await asyncio.sleep(2.0)
        return run.cancelled()

    assert run_virtual(main())
    assert errors == []
    assert log == [(0.0, "send", 0, "a", 0), (0.1, "send", 1, "a", 0),
                   (0.6, "finish", 0, "OK"), (0.7, "finish", 1, "OK")]


def test_requests_past_the_first_chunks_start_with_their_own_arguments() -> None:
    # The driver makes its requests' start arguments CHUNK at a time: 2.5 chunks, a burst of
    # requests at one instant across a chunk's end, uids of a share of a larger schedule.
    n = 2 * CHUNK + CHUNK // 2
    times = np.sort(np.random.default_rng(3).uniform(0.0, 5.0, n))
    times[CHUNK - 5:CHUNK + 5] = times[CHUNK - 5]  # ten at one instant, five each side of a chunk's end
    s = Schedule(config=None, tenants=("a", "b", "c"), connections=(2, 1, 3),  # type: ignore[arg-type]
                 sched_s=times, tenant=np.arange(n) % 3, content=np.arange(n) * 7, variant=np.arange(n) % 5,
                 size=np.arange(n) % 11 + 1)
    uids = [1000 + 2 * i for i in range(n)]
    seen: list[tuple] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def logged(a: Attempt) -> Response:
            seen.append((loop.time(), a.uid, a.tenant, a.conn, a.content, a.variant, a.size))
            return Response(Status.OK)

        await Driver(s, POLICY, FunctionTransport(logged), LogSink([]), random.Random(0), uids=uids).run(1.0)

    run_virtual(main())
    conns = connections(s).tolist()
    assert seen == [(1.0 + float(times[i]), uids[i], "abc"[i % 3], conns[i], 7 * i, i % 5, i % 11 + 1)
                    for i in range(n)]
