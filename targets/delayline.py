"""Loop timers that keep the event loop's timer heap small, which is most of the cost of a
large simulation. Work on any asyncio loop (virtual or wall clock).

`DelayLine`: run callbacks a constant delay after they were pushed. With one delay for
everything (a client timeout, a cache hop), expiries come in push order, so one FIFO and
one armed timer replace a heap entry per item.

`Alarm`: one callback at the earliest of the times it was asked for (a batcher's next
recheck, the dedupe's next expiry): a later ask while it is armed changes nothing, an
earlier one moves it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Callable


class DelayLine:
    """`resolution_s` > 0 lets callbacks due within that much of each other
    run together (late by at most `resolution_s`): timer slack, as real event
    loops have, which saves a loop iteration per item."""

    def __init__(self, delay_s: float, loop: asyncio.AbstractEventLoop | None = None, resolution_s: float = 0.0) -> None:
        if delay_s < 0 or resolution_s < 0:
            raise ValueError("delay_s and resolution_s must be >= 0")
        self.delay_s = delay_s
        self.resolution_s = resolution_s
        self.loop = loop or asyncio.get_running_loop()
        self._items: deque[tuple[float, Callable[..., Any], Any]] = deque()
        self._armed = False

    def __len__(self) -> int:
        return len(self._items)

    def push(self, callback: Callable[[Any], Any], arg: Any) -> None:
        """Call `callback(arg)` after `delay_s` (cancel by making it a no-op)."""
        self._items.append((self.loop.time() + self.delay_s, callback, arg))
        if not self._armed:
            self._armed = True
            self.loop.call_at(self._items[0][0], self._fire)

    def _fire(self) -> None:
        items = self._items
        now = self.loop.time()
        horizon = now + 1e-9
        while items and items[0][0] <= horizon:
            _, callback, arg = items.popleft()
            callback(arg)
        if items:
            self.loop.call_at(max(items[0][0], now + self.resolution_s), self._fire)
        else:
            self._armed = False


class Alarm:
    """Call `fn()` once at the earliest time `at` was given since it last fired (or `cancel`).
    `at_s` is that time (inf when unarmed), `armed` whether it is set."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fn: Callable[[], None]) -> None:
        self._loop = loop
        self._fn = fn
        self._handle: asyncio.TimerHandle | None = None
        self.at_s = float("inf")

    @property
    def armed(self) -> bool:
        return self._handle is not None

    def at(self, when: float) -> None:
        if self._handle is not None:
            if self.at_s <= when + 1e-12:
                return
            self._handle.cancel()
        self.at_s = when
        self._handle = self._loop.call_at(when, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle, self.at_s = None, float("inf")

    def _fire(self) -> None:
        self._handle, self.at_s = None, float("inf")
        self._fn()


class DelayLines:
    """One DelayLine per distinct delay, made on first use: what a transport
    needs for client timeouts (one timeout per client policy, usually)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None, resolution_s: float = 0.0) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.resolution_s = resolution_s
        self._lines: dict[float, DelayLine] = {}

    def push(self, delay_s: float, callback: Callable[[Any], Any], arg: Any) -> None:
        line = self._lines.get(delay_s)
        if line is None:
            line = self._lines[delay_s] = DelayLine(delay_s, self.loop, self.resolution_s)
        line.push(callback, arg)
