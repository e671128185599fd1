"""The in-process and function transports on the virtual clock: exact event logs.

Both keep ``targets.client.Transport``'s contract: ``on_done`` is called exactly once per
attempt, with the target's answer or with a timeout, and a late answer is dropped.
"""

from __future__ import annotations

import asyncio

import pytest

from harness.engine.clock import run_virtual
from harness.engine.function_transport import FunctionTransport
from harness.engine.transports import InProcessTransport
from targets.protocol import Attempt, Response, Status


def attempt(uid: int, sent_s: float = 0.0) -> Attempt:
    return Attempt(uid=uid, tenant="t", conn=0, content=uid, variant=0, size=1, sent_s=sent_s,
                   attempt_no=0)


class DelayedTarget:
    """A target that answers each uid after its own delay (None: never, a lost attempt)."""

    def __init__(self, delays: dict[int, float | None]) -> None:
        self.delays = delays
        self.loop = asyncio.get_running_loop()

    def submit(self, a: Attempt) -> None:
        delay = self.delays[a.uid]
        if delay is not None:
            self.loop.call_later(delay, a.answer, Response(Status.OK))


def run_sends(make_transport, sends: list[tuple[float, int]], timeout_s: float = 1.0):
    """Send attempt uid at time t for each (t, uid); log (time, uid, status) of every answer."""
    log: list[tuple] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport = make_transport()
        for t, uid in sends:
            def go(uid: int = uid) -> None:
                transport.send(attempt(uid, loop.time()), timeout_s,
                               lambda r, uid=uid: log.append((round(loop.time(), 6), uid, r.status.name)))
            loop.call_at(t, go)
        await asyncio.sleep(10)

    run_virtual(main())
    return log


def test_in_process_transport_delivers_answers_and_timeouts() -> None:
    target = lambda: InProcessTransport(DelayedTarget({0: 0.5, 1: None, 2: 1.5}))  # noqa: E731
    assert run_sends(target, [(0.0, 0), (0.2, 1), (0.4, 2)]) == [
        (0.5, 0, "OK"),            # answered in time; its timeout later finds it done
        (1.2, 1, "TIMEOUT"),       # lost: the timeout answers, exactly timeout_s after send
        (1.4, 2, "TIMEOUT")]       # answered at 1.9, too late: dropped


def test_in_process_timeouts_have_one_millisecond_of_slack() -> None:
    # Timeouts due within 1 ms of the one firing wait for the next millisecond tick
    # (TIMEOUT_RESOLUTION_S): a loop iteration saved per attempt, as real timer slack.
    target = lambda: InProcessTransport(DelayedTarget({0: None, 1: None, 2: None}))  # noqa: E731
    assert run_sends(target, [(0.0, 0), (0.0005, 1), (0.003, 2)]) == [
        (1.0, 0, "TIMEOUT"), (1.001, 1, "TIMEOUT"), (1.003, 2, "TIMEOUT")]


def test_function_transport_answers_sync_async_and_lost() -> None:
    async def slow(a: Attempt) -> Response:
        await asyncio.sleep(0.25 if a.uid == 1 else 2.0)
        return Response(Status.OK)

    def handler(a: Attempt):
        return {0: Response(Status.TOO_MANY), 3: None}.get(a.uid) if a.uid in (0, 3) else slow(a)

    assert run_sends(lambda: FunctionTransport(handler), [(0.0, 0), (0.1, 1), (0.2, 2), (0.3, 3)]) == [
        (0.0, 0, "TOO_MANY"),      # a Response: answered inside send
        (0.35, 1, "OK"),           # an awaitable: answered when it completes
        (1.2, 2, "TIMEOUT"),       # too slow: exact timeout, the late answer dropped
        (1.3, 3, "TIMEOUT")]       # None: lost


def test_function_transport_turns_a_crash_into_a_500() -> None:
    def crash(a: Attempt):
        raise RuntimeError("boom")

    async def crash_later(a: Attempt):
        await asyncio.sleep(0.1)
        raise KeyError(a.uid)

    assert run_sends(lambda: FunctionTransport(crash), [(0.0, 0)]) == [(0.0, 0, "ERROR")]
    assert run_sends(lambda: FunctionTransport(crash_later), [(0.0, 0)]) == [(0.1, 0, "ERROR")]


def test_function_transport_keeps_attempts_and_rejects_other_results() -> None:
    async def main() -> None:
        t = FunctionTransport(lambda a: Response(Status.OK))
        first, second = attempt(0), attempt(1)
        t.send(first, 1.0, lambda r: None)
        t.send(second, 1.0, lambda r: None)
        assert t.attempts == [first, second] and first.done and second.done
        with pytest.raises(TypeError, match="expected a Response"):
            FunctionTransport(lambda a: 200).send(attempt(2), 1.0, lambda r: None)  # type: ignore

    run_virtual(main())


class _NotNative:
    """The sim's transport behind a plain object (not a TransportBase): the client then sends
    through the bound `send` with its request's `on_response` as the callback, live's path."""

    def __init__(self, target) -> None:
        self.real = InProcessTransport(target)

    def send(self, attempt: Attempt, timeout_s: float, on_done) -> None:
        self.real.send(attempt, timeout_s, on_done)

    def clear(self) -> None:
        self.real.clear()


@pytest.mark.parametrize("design", ["naive", "hardened"])
def test_a_request_that_owns_its_attempts_records_what_the_callback_path_records(design, monkeypatch) -> None:
    """On the sim's transport a request owns its attempts (their answers, and their timeouts, are
    native calls of its `on_response`); through any other transport they carry a callback. An
    overloaded run (naive's retry storm after timeouts; hardened shedding) records the same either way."""
    from harness.engine import sim
    from harness.engine.sim import run_sim
    from targets.spec import resolve_target
    from workloads.loader import load_workload

    cfg, wl = resolve_target(design, {"gpus": 4}), load_workload("spike").at_rate(6000, 2)
    owned = run_sim(cfg, wl, seed=3).summary
    monkeypatch.setattr(sim, "InProcessTransport", _NotNative)
    called = run_sim(cfg, wl, seed=3).summary
    r = owned.requests
    assert r.attempts > 1.2 * r.unique if design == "naive" else r.shed > 0  # overloaded: a retry storm, shedding
    assert owned.model_dump(exclude={"wall_s"}) == called.model_dump(exclude={"wall_s"})
