"""A virtual-time asyncio event loop: the simulator's clock.

`VirtualTimeLoop.time()` returns a virtual clock that only moves when nothing is
ready to run: the loop then jumps straight to the next timer, so
`await asyncio.sleep(0.1)` costs no wall time and advances `loop.time()` by
exactly 0.1. The same asyncio code therefore runs unchanged in sim mode (this
loop) and in live mode (the ordinary loop, wall clock).

Lean by design: a simulation schedules several timers per request, so timers are
not asyncio TimerHandles (whose Python-level `__lt__` the heap calls ~10 times a
push) but `(when, seq, timer)` tuples compared in C; equal times run in the order
they were scheduled (FIFO), and the loop never consults a selector. One call of
`_run_once` runs every iteration until the loop stops (asyncio calls it once per
iteration), and a driver's next arrival waits in a slot of its own beside the heap
(`feed_at`): most iterations of a simulation are arrivals, and each then costs no
handle, no heap push and pop, and no Python call of the loop's own.

Contract:
- Deterministic: with no threads, sockets or wall-clock reads, the order of
  callbacks depends only on the program, so one seed gives one result.
- Loud: if tasks are still waiting but no timer is left (the simulation can
  never progress), `run_until_complete` raises `SimulationStalled`. Threads,
  executors, sockets and subprocesses raise `SimulationError` at once, since
  they would tie virtual time to the wall clock.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections import deque
from heapq import heappop, heappush
from typing import Any, Callable, Coroutine, TypeVar

from harness.engine.collector import fewer_collections
from targets.delayline import Due, VirtualClock
from targets.delayline import Wakeup as Slot
from targets.native import mypyc_attr

T = TypeVar("T")


@mypyc_attr(native_class=False)
class SimulationError(RuntimeError):
    """Code tried something a virtual-time simulation cannot do."""


@mypyc_attr(native_class=False)
class SimulationStalled(SimulationError):
    """Tasks are waiting, yet no timer is left that could ever wake them."""


@mypyc_attr(free_list_len=1)  # compiled: one freed timer is kept for the next
class _Timer(Due):
    """A scheduled callback: what `call_at` returns (`cancel()`, `when()`, `cancelled()`)."""

    def __init__(self, when: float, callback: Callable[..., Any], args: tuple, context: contextvars.Context | None) -> None:
        self._when = when
        self._callback = callback
        self._args = args
        self._context = context
        self._cancelled = False

    def when(self) -> float:
        return self._when

    def cancel(self) -> None:
        self._cancelled = True
        self._callback = self._args = None  # type: ignore[assignment]  # let go; a cancelled timer never runs

    def cancelled(self) -> bool:
        return self._cancelled

    def _run(self) -> None:
        # An exception propagates and ends the run (loud), rather than being logged
        # and skipped as asyncio's handles do: a simulation with a failed callback is wrong.
        if self._context is None:
            self._callback(*self._args)
        else:
            self._context.run(self._callback, *self._args)


def _nothing() -> None:
    pass


class Wakeup(Slot):
    """A call a `VirtualTimeLoop` holds in a slot of its own, beside its timer heap
    (`VirtualTimeLoop.wakeup`, `feed_at`): `arm(when)` costs no handle and no heap push
    and pop, and takes the sequence number `call_at` would, so the order of events is
    the same as through `call_at`. `when` is inf while unarmed."""

    def __init__(self, loop: "VirtualTimeLoop", callback: Callable[[], Any]) -> None:
        self._loop = loop
        self._callback = callback
        self._cancelled = False  # as a handle's, for the ready queue: never set
        self.when = math.inf
        self.seq = 0

    def arm(self, when: float) -> None:
        """Call the callback at `when` (replacing a pending call)."""
        loop = self._loop
        loop._seq = seq = loop._seq + 1
        self.when = when
        self.seq = seq

    def _run(self) -> None:
        self._callback()


def _order(w: Wakeup) -> tuple[float, int]:
    return w.when, w.seq


class VirtualTimeLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose `time()` is virtual seconds starting at `start_s`."""

    def __init__(self, start_s: float = 0.0) -> None:
        super().__init__()
        # The virtual time, in a clock the loop moves and the hot path reads natively
        # (targets.delayline.clock_of): `time()` is `clock.t`.
        self.clock = VirtualClock(float(start_s))
        self._timers: list[tuple[float, int, _Timer]] = []
        self._seq = 0
        # Wakeups (see `wakeup`): calls held in slots of their own beside the heap; the
        # first is the feed slot (see feed_at).
        self._feed = Wakeup(self, _nothing)
        self._wakeups: list[Wakeup] = [self._feed]
        # Timers due within this much of now run together; keep it tiny so
        # that distinct virtual instants stay distinct.
        self._clock_resolution = 1e-9

    # -- the clock ---------------------------------------------------------
    def time(self) -> float:
        return self.clock.t

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]  # a _Timer, no TimerHandle
                context: contextvars.Context | None = None) -> _Timer:
        timer = _Timer(when, callback, args, context)
        self._seq = seq = self._seq + 1
        heappush(self._timers, (when, seq, timer))
        return timer

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]  # as call_at
                   context: contextvars.Context | None = None) -> _Timer:
        # call_at's body, not a call of it: compiled, passing *args on was a generic call (a
        # client's retry after a pause, a batch's timeout: thousands a run).
        when = self.clock.t + delay
        timer = _Timer(when, callback, args, context)
        self._seq = seq = self._seq + 1
        heappush(self._timers, (when, seq, timer))
        return timer

    def soon(self, callback: Callable[..., Any], *args: Any) -> _Timer:
        """`call_soon(callback, *args)` with no context: called in the next iteration, in the
        order asyncio's would (behind what is ready now), through a `_Timer` rather than a
        Handle made by Python-level asyncio code. A callback that raises ends the run, as a
        timer's does. Returns what `cancel()` stops."""
        timer = _Timer(self.clock.t, callback, args, None)
        self._ready.append(timer)  # type: ignore[attr-defined]  # BaseEventLoop's, untyped in typeshed
        return timer

    def feed_at(self, when: float, callback: Callable[[], Any]) -> None:
        """Call `callback()` at `when`, exactly as `call_at(when, callback)` made now would
        (the same sequence number, so the same order among equal times), but through the
        loop's one feed slot (a `Wakeup`): no handle, no heap entry. For a caller that always
        has exactly one wake-up pending, such as a driver's next arrival; arming the slot
        again before it fired replaces the pending call. Nothing can cancel it."""
        feed = self._feed
        feed._callback = callback
        feed.arm(when)

    def wakeup(self, callback: Callable[[], Any]) -> "Wakeup":
        """A slot of this loop's own for `callback`: `arm(when)` has it called at `when`,
        in the order `call_at(when, callback)` made at that moment would (the same sequence
        number), with no handle and no heap entry. For a caller with at most one call of
        `callback` pending at a time (a delay line's next expiry); arming it again before it
        fired replaces the pending call. Each wakeup costs every loop iteration a look, so a
        caller makes one for its life, not one per call."""
        w = Wakeup(self, callback)
        self._wakeups.append(w)
        return w

    def _run_once(self) -> None:
        """Iterations until the loop is stopped. Each: if nothing is ready, jump the
        clock to the next timer (or wakeup); move the timers and wakeups now due onto the
        ready queue in (time, sequence) order; run what was ready at the start.

        asyncio's `run_forever` calls this once per iteration and then checks
        `_stopping`; looping here, in one frame, does the same iterations in the same
        order and returns as soon as one of them stopped the loop."""
        ready: deque = self._ready  # type: ignore[attr-defined]  # BaseEventLoop's, untyped in typeshed
        timers = self._timers
        resolution = self._clock_resolution
        wakeups = self._wakeups
        clock = self.clock
        inf = math.inf
        # The timers and wakeups due this iteration, run after the handles that were ready
        # before them (asyncio's order: `ready` then held them behind those handles).
        due_now: list[Due] = []
        # `_stopping` (BaseEventLoop's) mirrored on the clock, a native flag (see `stop`).
        clock.stopping = bool(self._stopping)  # type: ignore[attr-defined]  # as _ready
        while True:
            if not ready and not clock.stopping:
                while timers and timers[0][2]._cancelled:
                    heappop(timers)
                # The earliest wakeup by (time, sequence), and the earliest time of the others.
                first: Wakeup | None = None
                when = other = inf
                for w in wakeups:
                    t = w.when
                    if t == inf:
                        continue
                    if first is None or t < when or (t == when and w.seq < first.seq):
                        if when < other:
                            other = when
                        first, when = w, t
                    elif t < other:
                        other = t
                if first is not None:
                    # That wakeup alone is due next (no timer nor other wakeup within the
                    # clock's resolution of it, nothing ready): the whole iteration is one call.
                    now = when if when > clock.t else clock.t
                    horizon = now + resolution
                    if other > horizon and (not timers or timers[0][0] > horizon):
                        clock.t = now
                        first.when = inf
                        first._callback()
                        if clock.stopping:
                            return
                        continue
                if timers:
                    if timers[0][0] < when:
                        when = timers[0][0]
                elif when == inf:
                    # Nothing ready and no timer: only an external event could wake
                    # anything, and a simulation has none.
                    raise SimulationStalled(
                        f"simulation stalled at t={clock.t:.6f}s: "
                        f"{len(asyncio.all_tasks(self))} task(s) waiting and no timer left "
                        "(a future that is never resolved, or a queue nobody feeds)"
                    )
                if when > clock.t:
                    clock.t = when
            horizon = clock.t + resolution
            due: Wakeup | None = None
            several = False
            for w in wakeups:
                if w.when <= horizon:
                    if due is None:
                        due = w
                    else:
                        several = True
            if due is not None:
                # Each wakeup goes among the due timers where its (time, sequence) puts it.
                for w in (sorted([w for w in wakeups if w.when <= horizon], key=_order) if several else (due,)):
                    fed, seq = w.when, w.seq
                    w.when = inf
                    while timers and timers[0][0] <= horizon and (
                            timers[0][0] < fed or (timers[0][0] == fed and timers[0][1] < seq)):
                        timer = heappop(timers)[2]
                        if not timer._cancelled:
                            due_now.append(timer)
                    due_now.append(w)
            while timers and timers[0][0] <= horizon:
                timer = heappop(timers)[2]
                if not timer._cancelled:
                    due_now.append(timer)
            for _ in range(len(ready)):
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
            if due_now:
                ran = 0
                try:
                    for d in due_now:
                        ran += 1
                        if not d._cancelled:
                            d._run()
                except BaseException:  # (an interrupt): what was due and did not run stays ready
                    ready.extend(due_now[ran:])
                    raise
                finally:
                    due_now.clear()
            if clock.stopping:
                return

    def stop(self) -> None:
        super().stop()
        self.clock.stopping = True  # read by `_run_once` (BaseEventLoop's `_stopping` is untyped)

    def close(self) -> None:
        """Close the loop and drop what it still holds: timers left at the horizon
        reference the simulation's objects (queues of requests), which would otherwise
        stay in reference cycles for the cyclic collector to walk (see `run_virtual`)."""
        super().close()
        self._timers.clear()
        for w in self._wakeups:  # let go; a closed loop runs nothing
            w._callback = _nothing
            w.when = math.inf

    # -- hooks BaseEventLoop needs ------------------------------------------
    def _process_events(self, event_list: list) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # -- things that would tie virtual time to the wall clock ----------------
    def _forbidden(self, what: str) -> SimulationError:
        return SimulationError(
            f"{what} is not allowed in sim mode: it would tie virtual time to the "
            "wall clock (use live mode for real threads, sockets and processes)"
        )

    def run_in_executor(self, executor: Any, func: Callable, *args: Any) -> Any:  # type: ignore[override]  # refuses, whatever the arguments
        raise self._forbidden("run_in_executor (threads)")

    def set_default_executor(self, executor: Any) -> None:
        raise self._forbidden("set_default_executor (threads)")

    def call_soon_threadsafe(self, callback: Callable, *args: Any, context: Any = None) -> Any:  # type: ignore[override]  # refuses, whatever the arguments
        raise self._forbidden("call_soon_threadsafe (threads)")

    async def getaddrinfo(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("getaddrinfo (sockets)")

    async def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_connection (sockets)")

    async def create_server(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_server (sockets)")

    async def create_datagram_endpoint(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_datagram_endpoint (sockets)")

    async def subprocess_exec(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("subprocess_exec (processes)")

    async def subprocess_shell(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("subprocess_shell (processes)")

    def add_reader(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # refuses, whatever the arguments
        raise self._forbidden("add_reader (file descriptors)")

    def add_writer(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # refuses, whatever the arguments
        raise self._forbidden("add_writer (file descriptors)")

    def add_signal_handler(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # refuses, whatever the arguments
        raise self._forbidden("add_signal_handler (signals)")

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        return None


def run_virtual(main: Coroutine[Any, Any, T], start_s: float = 0.0) -> T:
    """Run `main` to completion on a fresh virtual-time loop and close it.

    Tasks still pending when `main` returns are cancelled, so a simulation that
    stops at its horizon leaves nothing behind. The cyclic collector runs less
    often meanwhile (`fewer_collections`).
    """
    loop = VirtualTimeLoop(start_s)
    try:
        with fewer_collections():
            asyncio.set_event_loop(loop)
            return loop.run_until_complete(main)
    finally:
        _cancel_pending(loop)
        asyncio.set_event_loop(None)
        loop.close()


def _cancel_pending(loop: VirtualTimeLoop) -> None:
    """Cancel what is left (a run stops at its horizon, or failed) and let the
    cancellations run, so nothing touches the loop after it is closed."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        try:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        except SimulationError:
            pass


__all__ = [
    "SimulationError",
    "SimulationStalled",
    "VirtualTimeLoop",
    "Wakeup",
    "run_virtual",
]
