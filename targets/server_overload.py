"""Front-end overload: an API server that sheds when its own event loop falls behind.

Admission control (targets.admission) predicts GPU queueing; it cannot see a
front end whose CPU is the bottleneck, where requests queue in the socket and
the event loop before any handler runs (measured: `harness serve hardened
--pad-to-s 0` at 1,600 req/s answered at p50 2.4 s and shed nothing). The
loop's lag, how late a timer fires, is that hidden queue's delay: every ready
handler waits about as long. While the recent lag is over the limit a handler
answers 503 + Retry-After before reading or parsing the body, the cheapest
answer it has, so the CPU it keeps goes to the requests it admits.

``LagGuard.decide(lag_s)`` is the pure rule; ``LoopLag`` measures the sustained
lag (the least of the last few ticks) with one timer task on the servers' loop. Knob: TargetConfig.frontend_lag_limit_s
(None: never shed here).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

__all__ = ["LagGuard", "LoopLag"]


@dataclass(frozen=True)
class LagGuard:
    """Shed while the loop lags more than ``limit_s``; ask clients back after ``retry_after_s``
    at least (the lag itself when longer: the backlog takes about that long to clear)."""

    limit_s: float
    retry_after_s: float = 0.05

    def decide(self, lag_s: float) -> float | None:
        """Seconds to ask the client to wait (shed), or None (admit)."""
        return max(self.retry_after_s, lag_s) if lag_s > self.limit_s else None


class LoopLag:
    """The loop's sustained lag (s): each ``tick_s`` a timer measures how late it fired, and
    ``lag_s`` is the least lateness of the last ``window`` ticks. A backlog of ready work
    makes every tick late; a machine that descheduled the process for a moment (a busy
    host, a GC pause) makes one tick late, and that alone must not shed anything."""

    def __init__(self, tick_s: float = 0.005, window: int = 5) -> None:
        self.tick_s = tick_s
        self.lag_s = 0.0
        self.peak_s = 0.0
        self._recent: deque[float] = deque([0.0], maxlen=window)
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def observe(self, late_s: float) -> None:
        """One tick's lateness (s)."""
        self._recent.append(late_s)
        self.lag_s = min(self._recent)
        self.peak_s = max(self.peak_s, late_s)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.tick_s
            await asyncio.sleep(self.tick_s)
            self.observe(max(0.0, loop.time() - due))
