"""Transports: how a client's attempt reaches a target.

`InProcessTransport` calls the target object directly (sim mode): no sockets,
so it runs on the virtual clock. The HTTP transport (live mode) implements the
same `send(attempt, timeout_s, on_done)` contract over aiohttp.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from targets.delayline import DelayLines
from targets.protocol import TIMEOUT_RESPONSE, Attempt, Response


# Client timeouts fire within 1 ms of their deadline (real loops have such
# timer slack too); batching them saves a loop iteration per attempt.
TIMEOUT_RESOLUTION_S = 0.001


class InProcessTransport:
    def __init__(self, target) -> None:
        self.target = target
        self.loop = asyncio.get_running_loop()
        self._timeouts = DelayLines(self.loop, TIMEOUT_RESOLUTION_S)

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        attempt.on_answer = on_done
        self._timeouts.push(timeout_s, _expire, attempt)
        self.target.submit(attempt)


def _expire(attempt: Attempt) -> None:
    # The client gives up; the target may still work on it (nothing tells it).
    on_done = attempt.on_answer
    if attempt.give_up():
        on_done(TIMEOUT_RESPONSE)
