"""Transports: how a client's attempt reaches a target.

`InProcessTransport` calls the target object directly (sim mode): no sockets,
so it runs on the virtual clock. The HTTP transport (live mode) implements the
same `send(attempt, timeout_s, on_done)` contract over aiohttp.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Final

from targets.delayline import DelayLines, DueHandler
from targets.client import TransportBase
from targets.protocol import TIMEOUT_RESPONSE, Attempt, Response
from targets.target import ServingTarget


# Client timeouts fire within 1 ms of their deadline (real loops have such
# timer slack too); batching them saves a loop iteration per attempt.
TIMEOUT_RESOLUTION_S: Final = 0.001


class InProcessTransport(TransportBase):
    def __init__(self, target) -> None:
        self.target = target
        # The reference target, typed as such: compiled, its `submit` (once per attempt) is then
        # a native call. Any other object with a `submit` (a test's) is called as it is.
        self._serving: ServingTarget | None = target if isinstance(target, ServingTarget) else None
        self.loop = asyncio.get_running_loop()
        # The client's timeouts, one delay line per timeout value; an attempt answered
        # before its timeout is skipped there without a call.
        self._timeouts = DelayLines(_TimeOut(), self.loop, TIMEOUT_RESOLUTION_S, pending_only=True)

    def clear(self) -> None:
        """Forget the pending timeouts (a finished simulation; see ServingTarget.clear)."""
        self._timeouts.clear()

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        attempt.on_answer = on_done
        self.send_owned(attempt, timeout_s)

    def send_owned(self, attempt: Attempt, timeout_s: float) -> None:
        self._timeouts.push(timeout_s, attempt)
        serving = self._serving
        if serving is not None:
            serving.submit(attempt)
        else:
            self.target.submit(attempt)


class _TimeOut(DueHandler):
    """A client timeout: the client gives up; the target may still work on the attempt
    (nothing tells it). A handler, not a function: compiled, the line's call is native."""

    def due(self, attempt: Attempt) -> None:
        attempt.give_up()
        attempt.deliver(TIMEOUT_RESPONSE)
