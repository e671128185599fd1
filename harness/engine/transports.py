"""Transports: how a client's attempt reaches a target.

`InProcessTransport` calls the target object directly (sim mode): no sockets,
so it runs on the virtual clock. The HTTP transport (live mode) implements the
same `send(attempt, timeout_s, on_done)` contract over aiohttp.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable, Final

from targets.protocol import TIMEOUT_RESPONSE, Attempt, Response


# Client timeouts fire within 1 ms of their deadline (real loops have such
# timer slack too); batching them saves a loop iteration per attempt.
TIMEOUT_RESOLUTION_S: Final = 0.001


class InProcessTransport:
    def __init__(self, target) -> None:
        self.target = target
        self.loop = asyncio.get_running_loop()
        self._time = self.loop.time
        self._lines: dict[float, _TimeoutLine] = {}

    def clear(self) -> None:
        """Forget the pending timeouts (a finished simulation; see ServingTarget.clear)."""
        for line in self._lines.values():
            line._items.clear()

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        attempt.on_answer = on_done
        line = self._lines.get(timeout_s)
        if line is None:
            line = self._lines[timeout_s] = _TimeoutLine(timeout_s, self.loop)
        # The line's push, inline: this runs for every attempt.
        line._items.append((self._time() + timeout_s, attempt))
        if not line._armed:
            line.arm()
        self.target.submit(attempt)


class _TimeoutLine:
    """The client's timeouts for one timeout value: attempts expire in the order they
    were sent, so one FIFO and one armed timer serve them all (a delay line, as in
    `targets.delayline`, specialised: most attempts are answered long before their
    timeout, and this skips them without a call)."""

    def __init__(self, timeout_s: float, loop: asyncio.AbstractEventLoop) -> None:
        self.timeout_s = timeout_s
        self.loop = loop
        self._items: deque[tuple[float, Attempt]] = deque()
        self._armed = False

    def arm(self) -> None:
        """Wake at the first expiry (the transport appends `(expires_s, attempt)` to `_items`)."""
        self._armed = True
        self.loop.call_at(self._items[0][0], self._fire)

    def _fire(self) -> None:
        items = self._items
        now = self.loop.time()
        horizon = now + 1e-9
        while items and items[0][0] <= horizon:
            attempt = items.popleft()[1]
            if not attempt.done:
                # The client gives up; the target may still work on it (nothing tells it).
                attempt.give_up()
                attempt.on_answer(TIMEOUT_RESPONSE)  # type: ignore[misc]  # set until answered
        if items:
            self.loop.call_at(max(items[0][0], now + TIMEOUT_RESOLUTION_S), self._fire)
        else:
            self._armed = False
