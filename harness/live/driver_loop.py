"""The live driver's event loop (uvloop with a precise clock) and a quiet collector."""

from __future__ import annotations

import asyncio
import gc
import math
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["new_loop", "quiet_gc"]


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

    class _PreciseLoop(uvloop.Loop):  # type: ignore[misc,name-defined]
        def time(self) -> float:
            return time.monotonic()

        def call_at(self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None):
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
