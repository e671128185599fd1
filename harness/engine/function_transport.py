"""A transport whose server is a plain function: tests pass a function, not a target.

httpx's ``MockTransport(handler)`` for our ``send(attempt, timeout_s, on_done)`` seam
(``targets.client.Transport``). ``handler(attempt)`` is the whole server; it returns

- a ``Response``: the answer, delivered at once (inside ``send``, as an in-process target
  that answers from ``submit`` does: an admission shed, a cache hit);
- ``None``: the attempt is lost, never answered (a dead GPU), so the client times out;
- an awaitable of either: answered when it completes, so ``await asyncio.sleep(0.2)``
  inside an ``async def`` handler is a server that takes 0.2 s.

A handler that raises answers ``Status.ERROR`` with the exception in ``reason``: a server
that crashes on a request returns 500, and the test sees it in its log.

Timeouts are exact, with no timer slack (unlike ``InProcessTransport``'s 1 ms): exactly
``timeout_s`` after ``send``, ``on_done`` gets ``TIMEOUT_RESPONSE`` unless the answer came
first; an answer after that is dropped, as a client drops a late reply. ``on_done`` is
called exactly once per attempt. Works on any loop; on ``harness.engine.clock``'s
virtual-time loop the event times of a test are exact.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Union

from targets.protocol import TIMEOUT_RESPONSE, Attempt, Response, Status

__all__ = ["FunctionTransport", "Handler"]

Handler = Callable[[Attempt], Union[Response, None, Awaitable[Union[Response, None]]]]


class FunctionTransport:
    """``send`` hands each attempt to ``handler``; ``attempts`` keeps them in send order."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.attempts: list[Attempt] = []

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        loop = asyncio.get_running_loop()
        attempt.on_answer = on_done
        self.attempts.append(attempt)
        try:
            result = self.handler(attempt)
        except Exception as exc:  # a crashing server answers 500
            result = _error(exc)
        if isinstance(result, Response):
            attempt.answer(result)
            return
        timer = loop.call_later(timeout_s, _expire, attempt)
        if result is None:
            return  # lost: only the timeout will answer
        if not inspect.isawaitable(result):
            timer.cancel()
            raise TypeError(f"handler returned {type(result).__name__}; "
                            "expected a Response, None, or an awaitable of either")
        task = asyncio.ensure_future(result)
        task.add_done_callback(lambda t: _finish(t, attempt, timer))


def _finish(task: asyncio.Future, attempt: Attempt, timer: asyncio.TimerHandle) -> None:
    if task.cancelled():
        return  # the loop is shutting down: leave the attempt to its timeout
    exc = task.exception()
    response = _error(exc) if exc is not None else task.result()
    if response is None:
        return  # lost
    timer.cancel()
    attempt.answer(response)  # a no-op if the client already timed out


def _expire(attempt: Attempt) -> None:
    on_done = attempt.on_answer
    if attempt.give_up():
        on_done(TIMEOUT_RESPONSE)  # type: ignore[misc]  # give_up() is true only while on_answer is set


def _error(exc: BaseException) -> Response:
    return Response(Status.ERROR, reason=f"handler raised {exc!r}")
