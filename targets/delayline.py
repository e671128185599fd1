"""Loop timers that keep the event loop's timer heap small, which is most of the cost of a
large simulation. Work on any asyncio loop (virtual or wall clock).

`DelayLine`: hand each attempt pushed to `on_due` a constant delay later. With one delay
for everything (a client timeout, a cache hop), expiries come in push order, so one FIFO
and one armed timer replace a heap entry per attempt. `DelayLines`: one line per delay,
made on first use (client timeouts: one per client policy, usually).

`Alarm`: one callback at the earliest of the times it was asked for (a batcher's next
recheck, the dedupe's next expiry): a later ask while it is armed changes nothing, an
earlier one moves it.

`Clock` (`clock_of(loop)`): a loop's time as the hot path reads it, several times a request.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from targets.bounded import drop_front
from targets.protocol import Attempt, Keeper


class Clock:
    """A loop's time: `now()` is `loop.time()`. Compiled (targets.native), `clock.now()` is a
    native call with an unboxed answer, where `loop.time()` is a Python call of a bound method;
    a simulated request reads the time about eight times. `clock_of(loop)` gives the loop's own
    clock where it keeps one (the virtual-time loop moves a `VirtualClock`), else this, which
    asks the loop (live)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop

    def now(self) -> float:
        return self._loop.time()  # type: ignore[union-attr]  # set, in every clock that asks a loop


class VirtualClock(Clock):
    """A clock that says what its owner set: `t` (the virtual-time loop's, which it moves)."""

    def __init__(self, t: float = 0.0) -> None:
        super().__init__()
        self.t = t
        # Whether the loop that moves this clock was asked to stop (harness.engine.clock:
        # its `stop` sets it, its iterations read it natively).
        self.stopping = False

    def now(self) -> float:
        return self.t


def clock_of(loop: asyncio.AbstractEventLoop) -> Clock:
    """`loop`'s own clock (`loop.clock`) where it keeps one, else a clock that asks `loop.time()`."""
    clock = getattr(loop, "clock", None)
    return clock if isinstance(clock, Clock) else Clock(loop)


class Due:
    """What a virtual-time loop runs from its own timers and slots (harness.engine.clock: a
    timer, a Wakeup), as a base class: compiled, the loop's reads of `_cancelled` and calls of
    `_run` are native, where asyncio's ready queue of handles is untyped. Here, beside `Wakeup`,
    so that a delay line arms its loop's slot by a native call."""

    _cancelled: bool

    def _run(self) -> None:
        raise NotImplementedError


class Wakeup(Due):
    """A loop's slot for one pending call, `arm(when)`: the base class of the virtual-time
    loop's (harness.engine.clock.Wakeup), which a delay line arms by a native call."""

    def arm(self, when: float) -> None:
        raise NotImplementedError


class DueHandler:
    """What a DelayLine hands each attempt to as it falls due, as a base class: compiled, that
    is a native call per attempt, where a callable's is a Python-level call. A line given a
    plain callable wraps it in one (`_CallDue`)."""

    def due(self, attempt: Attempt) -> None:
        raise NotImplementedError


class _CallDue(DueHandler):
    def __init__(self, fn: Callable[[Attempt], None]) -> None:
        self.fn = fn

    def due(self, attempt: Attempt) -> None:
        self.fn(attempt)


class DelayLine(Keeper):
    """Calls `on_due(attempt)` `delay_s` after each `push(attempt)`, in push order.

    `pending_only` skips attempts already done when they fall due, without a call: a
    line of client timeouts, where most attempts are answered long before theirs. Such a
    line is each attempt's `keeper`: it lets go of an attempt at its answer (`release`), so
    that the line holds only the attempts still waiting, not a timeout's worth of traffic.
    `resolution_s` > 0 lets attempts due within that much of each other go together
    (late by at most `resolution_s`): timer slack, as real event loops have, which saves
    a loop iteration per attempt."""

    def __init__(self, delay_s: float, on_due: Callable[[Attempt], None] | DueHandler,
                 loop: asyncio.AbstractEventLoop | None = None, resolution_s: float = 0.0,
                 pending_only: bool = False) -> None:
        if delay_s < 0 or resolution_s < 0:
            raise ValueError("delay_s and resolution_s must be >= 0")
        self.delay_s = delay_s
        self.resolution_s = resolution_s
        self.pending_only = pending_only
        self.loop = loop or asyncio.get_running_loop()
        self._clock = clock_of(self.loop)
        self._on_due: DueHandler = on_due if isinstance(on_due, DueHandler) else _CallDue(on_due)
        # The attempts on the line and when each falls due, in push order: two typed lists
        # read from `_head` on (compiled: native appends and reads, no tuple an attempt,
        # where a deque's are method calls). `_fire` drops the consumed front in bulk
        # (targets.bounded.drop_front).
        self._due: list[float] = []
        self._items: list[Attempt | None] = []  # None: released at its answer (pending_only)
        self._head = 0
        self._base = 0  # slots dropped from the lists' front so far (slot i is at position _base + i)
        self._armed = False
        # Where the loop offers one (the virtual-time loop's `wakeup`), the line's one pending
        # expiry waits in a slot of the loop's own: no timer handle, no heap entry per arm, in
        # the order call_at would give it. Elsewhere (live), a plain call_at.
        make = getattr(self.loop, "wakeup", None)
        self._wake: Wakeup | None = make(self._fire) if make is not None else None

    def __len__(self) -> int:
        return len(self._items) - self._head

    def push(self, attempt: Attempt) -> None:
        """Hand `attempt` to `on_due` after `delay_s`."""
        due = self._clock.now() + self.delay_s
        self._due.append(due)
        if self.pending_only:
            attempt.keeper = self
            attempt.kept_at = self._base + len(self._items)
        self._items.append(attempt)
        if not self._armed:
            self._armed = True
            self._arm(self._due[self._head])

    def _arm(self, when: float) -> None:
        wake = self._wake
        if wake is not None:
            wake.arm(when)
        else:
            self.loop.call_at(when, self._fire)

    def held(self) -> int:
        """The attempts the line still holds (a pending-only line: those not yet answered)."""
        return sum(1 for a in self._items[self._head:] if a is not None)

    def release(self, a: Attempt) -> None:
        """Let go of `a` (answered: a pending-only line would skip it)."""
        items = self._items
        i = a.kept_at - self._base
        if 0 <= i < len(items) and items[i] is a:
            items[i] = None

    def clear(self) -> None:
        """Forget every attempt still on the line (a finished simulation); an armed timer
        still fires once, and finds nothing."""
        self._base += len(self._items)
        self._due.clear()
        self._items.clear()
        self._head = 0

    def _fire(self) -> None:
        due, items = self._due, self._items
        on_due = self._on_due
        now = self._clock.now()
        horizon = now + 1e-9
        pending_only = self.pending_only
        # `on_due` may push onto this line (a retry sent at once): the lists grow at their
        # end, behind `head`, and `_head` is kept current before each call.
        head = self._head
        while head < len(items) and due[head] <= horizon:
            attempt = items[head]
            head += 1
            self._head = head
            if attempt is not None and (not pending_only or not attempt.done):
                if pending_only:
                    attempt.keeper = None
                on_due.due(attempt)
            head = self._head
        drop_front(due, head)
        self._head = kept = drop_front(items, head)
        self._base += head - kept
        head = kept
        if not items:
            self._armed = False
            return
        self._arm(max(due[head], now + self.resolution_s))


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
    """One DelayLine per distinct delay, made on first use, all calling the same `on_due`
    (a transport's client timeouts: one timeout per client policy, usually)."""

    def __init__(self, on_due: Callable[[Attempt], None] | DueHandler, loop: asyncio.AbstractEventLoop | None = None,
                 resolution_s: float = 0.0, pending_only: bool = False) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.resolution_s = resolution_s
        self.pending_only = pending_only
        self._on_due = on_due
        self._lines: dict[float, DelayLine] = {}
        # The line of the last push: usually every push's (one timeout per client policy), and
        # then found by a float comparison rather than a hashed lookup.
        self._last: DelayLine | None = None

    def push(self, delay_s: float, attempt: Attempt) -> None:
        line = self._last
        if line is None or line.delay_s != delay_s:
            line = self._lines.get(delay_s)
            if line is None:
                line = self._lines[delay_s] = DelayLine(delay_s, self._on_due, self.loop, self.resolution_s,
                                                        self.pending_only)
            self._last = line
        line.push(attempt)

    def clear(self) -> None:
        """Forget every attempt still on a line (see `DelayLine.clear`)."""
        for line in self._lines.values():
            line.clear()
