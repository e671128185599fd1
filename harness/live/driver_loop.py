"""The live driver's event loop (uvloop with a precise clock), a quiet collector, and a higher CPU priority."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import time
from contextlib import contextmanager
from contextvars import Context
from typing import Callable, Iterator, TypeVarTuple, Unpack

__all__ = ["DRIVER_NICE", "RealtimeGuard", "driver_priority", "new_loop", "quiet_gc"]

DRIVER_NICE = -10   # the driver's nice value where the realtime class is not taken
PRIORITY_ENV = "HARNESS_DRIVER_PRIORITY"  # "normal": never raise the driver's priority
RT_MAX_SHARE = 0.5  # a realtime driver using more of a core than this drops back to normal
_Ts = TypeVarTuple("_Ts")  # a timer callback's arguments


def new_loop() -> asyncio.AbstractEventLoop:
    """The driver's event loop: uvloop where available, with a precise clock.

    uvloop's own `time()` has millisecond resolution and its timers fire up to
    a millisecond early, which makes an open-loop scheduler spin; this one
    reads time.monotonic() and rounds timer delays up to whole milliseconds.
    """
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()

    class _PreciseLoop(uvloop.Loop):
        def time(self) -> float:
            return time.monotonic()

        def call_at(self, when: float, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                    context: Context | None = None) -> asyncio.TimerHandle:
            delay = when - time.monotonic()
            return self.call_later(math.ceil(delay * 1000.0) / 1000.0 if delay > 0 else 0.0,
                                   callback, *args, context=context)

    return _PreciseLoop()


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Keep the collector's full passes off the send path while driving.

    A run holds hundreds of thousands of long-lived objects (the schedule as
    lists, histograms); a full collection that scans them all stalls the loop
    for tens of milliseconds, which shows as send lag. Freezing what exists now
    moves it out of the collector's sight; new garbage is still collected.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def driver_priority(realtime: bool = True, nice: int = DRIVER_NICE) -> Iterator[str]:
    """Run the block at a higher CPU priority where the process may take one (root or
    CAP_SYS_NICE), else as it is; yields what it got ("realtime", "nice -10", "normal").

    Why: the driver needs little CPU but needs it on time. Measured on a 2-core machine
    at load 9-12, 200 req/s: send lag p99 10-21 ms at normal priority, 1.5-1.7 ms under
    the realtime round-robin class; nice alone did not help, as the kernel weighs nice only
    within a session (autogroup), not against other users' processes. The realtime class
    is the lowest (SCHED_RR 1); a `RealtimeGuard` on the process's loop drops it once the
    driver keeps over half a core busy, so a saturated driver cannot starve the target (the
    kernel also keeps 5% of each core for others, sched_rt_runtime_us). `realtime` False
    asks for nice only. The old priority is restored after, so
    processes started later (a sweep's next host) do not inherit it; processes started
    inside the block (driver processes) do: start the target before it.
    `HARNESS_DRIVER_PRIORITY=normal` in the environment leaves the priority alone (for
    machines where a raised priority is not wanted); the result's `live.driver_priority`
    says what a run got."""
    if os.environ.get(PRIORITY_ENV, "").strip().lower() == "normal":
        yield "normal"
        return
    try:
        before = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        yield "normal"
        return
    got = "normal"
    try:
        if before > nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
            got = f"nice {nice}"
    except OSError:
        pass
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
            got = "realtime"
        except (AttributeError, OSError):
            pass
    try:
        yield got
    finally:
        try:
            if got == "realtime":
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, 0, before)
        except OSError:
            pass


class RealtimeGuard:
    """Every `every_s`, look at the share of a core this process used since the last look;
    after two looks in a row over `max_share`, drop it out of the realtime class (`dropped`
    then says so). Two, so a one-off burst (a garbage collection before a drive, opening
    connections) does not count. A process not in the realtime class is left alone."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_share: float = RT_MAX_SHARE,
                 every_s: float = 1.0) -> None:
        self.loop, self.max_share, self.every_s = loop, max_share, every_s
        self.dropped = False
        self._over = 0
        self._cpu, self._at = time.process_time(), time.monotonic()
        self._timer = loop.call_later(every_s, self._check)

    def _check(self) -> None:
        cpu, at = time.process_time(), time.monotonic()
        share = (cpu - self._cpu) / max(1e-9, at - self._at)
        self._cpu, self._at = cpu, at
        self._over = self._over + 1 if share > self.max_share else 0
        try:
            if os.sched_getscheduler(0) == os.SCHED_RR and self._over >= 2:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                self.dropped = True
                return
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            return
        self._timer = self.loop.call_later(self.every_s, self._check)

    def cancel(self) -> None:
        self._timer.cancel()
