"""GPU workers and the pool that runs batches on them.

A worker runs one batch at a time through its executor (a cost model in sim,
a torch model in live mode). Batches pushed while every GPU is busy wait in a
FIFO backlog. Pull-mode batchers register as listeners and are called each
time a GPU frees up.

Failures: `kill(k)` takes k workers down at once, cancelling their batches in
flight; an executor whose `run_batch` raises `WorkerDied` (a live worker that
died by itself) is taken down the same way. Without failure handling (the
doc) those requests are simply lost: nobody answers them and their clients
find out by timing out. With it, the
batch timeout (`batch_timeout_factor` x the expected batch time) detects the
death and the batch is re-dispatched, once per request.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from targets.delayline import clock_of
from targets.native import mypyc_attr
from targets.protocol import Attempt, DeadlineCheck


class Executor(Protocol):
    def expected_s(self, batch: list[Attempt]) -> float: ...
    async def run_batch(self, batch: list[Attempt]) -> list | None: ...


class _Pending(Protocol):
    """A scheduled call (an asyncio handle, a virtual-time loop's timer)."""
    def cancel(self) -> None: ...


def _nothing() -> None:
    pass


def _only_sleeps(executor: Executor) -> bool:
    """Whether `executor.run_batch` only sleeps `expected_s(batch)` and answers None (a cost
    model's, `targets.executors.ModeledExecutor.only_sleeps`)."""
    return bool(getattr(executor, "only_sleeps", False))


@mypyc_attr(native_class=False)
class WorkerDied(RuntimeError):
    """The worker's GPU died with the batch in flight."""


@dataclass
class PoolStats:
    batches: int = 0
    items: int = 0
    busy_s: float = 0.0          # GPU-seconds of completed batches
    lost_attempts: int = 0       # in flight on a dead GPU, never answered
    redispatched: int = 0
    killed_batches: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    last_done_s: float = 0.0


class Worker:
    def __init__(self, index: int) -> None:
        self.index = index
        self.alive = True
        self.task: asyncio.Task | None = None
        self.timer: _Pending | None = None     # a timed batch's next step (see GpuPool._start)
        self.asleep = False                    # ... and that step is the end of its sleep
        self.batch: list[Attempt] | None = None
        self.started_s = 0.0


class GpuPool:
    """`on_done(batch, outputs, seconds)` is called for every completed batch;
    `redispatch(batch)` (when failure handling is on) puts a dead worker's
    batch back at the front of its queue. With deadline propagation,
    `expired(attempt, now)` is checked again when a parked batch finally gets
    a GPU (it may have waited long in the backlog); `on_drop` gets each one
    removed, before it costs any GPU time."""

    def __init__(
        self,
        gpus: int,
        executor_for: Callable[[int], Executor],
        on_done: Callable[[list[Attempt], list | None, float], None],
        failure_handling: bool = False,
        batch_timeout_factor: float = 2.0,
        redispatch: Callable[[list[Attempt]], None] | None = None,
        on_lost: Callable[[Attempt], None] | None = None,
        expired: DeadlineCheck | None = None,
        on_drop: Callable[[Attempt], None] | None = None,
    ) -> None:
        self._expired = expired
        self._on_drop = on_drop
        self.workers = [Worker(i) for i in range(gpus)]
        self.executors = [executor_for(i) for i in range(gpus)]
        # Read-only outside the pool (as are `alive` and `backlog_count`): a batcher and
        # admission read them per request, where a method call costs more than the read.
        self.idle: deque[Worker] = deque(self.workers)
        self.alive = gpus
        self._backlog: deque[list[Attempt]] = deque()
        self.backlog_count = 0
        self._listeners: list[Callable[[], None]] = []
        self._on_done = on_done
        self._on_lost = on_lost
        self.failure_handling = failure_handling
        self.batch_timeout_factor = batch_timeout_factor
        self._redispatch = redispatch
        self.stats = PoolStats()
        self._loop = asyncio.get_running_loop()
        self._clock = clock_of(self._loop)
        self._next_listener = 0
        # Workers whose executor only sleeps (a cost model) run a batch on timers rather than
        # in a task (see _start); `soon` is the loop's call_soon (a virtual-time loop's lean one).
        self._timed = [_only_sleeps(ex) for ex in self.executors]
        self._soon: Callable[..., Any] = getattr(self._loop, "soon", None) or self._loop.call_soon

    # -- state -----------------------------------------------------------------
    def free_gpus(self) -> int:
        return len(self.idle)

    def alive_gpus(self) -> int:
        return self.alive

    def backlog_batches(self) -> int:
        return len(self._backlog)

    def backlog_items(self) -> int:
        return self.backlog_count

    def busy_gpu_seconds(self) -> float:
        """GPU-seconds busy so far, running batches included."""
        now = self._clock.now()
        running = sum(now - w.started_s for w in self.workers if w.batch is not None)
        return self.stats.busy_s + running

    def busy_gpus(self) -> int:
        return sum(1 for w in self.workers if w.batch is not None)

    def add_listener(self, fn: Callable[[], None]) -> None:
        self._listeners.append(fn)

    def expected_s(self, batch: list[Attempt]) -> float:
        return self.executors[0].expected_s(batch)

    # -- running batches ------------------------------------------------------------
    def submit(self, batch: list[Attempt]) -> None:
        """Run `batch` on a free GPU now, or park it in the FIFO backlog."""
        if self.idle:
            self._start(self.idle.popleft(), batch)
        else:
            self._backlog.append(batch)
            self.backlog_count += len(batch)

    def _start(self, worker: Worker, batch: list[Attempt]) -> None:
        worker.batch = batch
        worker.started_s = self._clock.now()
        if self._timed[worker.index]:
            # The task's steps, without the task: its first step (`_begin`) runs where
            # create_task's would, the sleep is the timer asyncio.sleep makes, and the end
            # (`_end`) runs where the task's wake-up would, one call_soon after the timer.
            # The same callbacks at the same instants in the same order, so the same run;
            # a batch costs three calls instead of a task, a future and a coroutine's frames.
            worker.timer = self._soon(self._begin, worker, batch)
        else:
            worker.task = self._loop.create_task(self._run(worker, batch))

    def _begin(self, worker: Worker, batch: list[Attempt]) -> None:
        seconds = self.executors[worker.index].expected_s(batch)
        if seconds <= 0:  # asyncio.sleep(0): one turn of the loop
            worker.timer = self._soon(self._end, worker, batch)
        else:
            worker.timer = self._loop.call_later(seconds, self._wake, worker, batch)
            worker.asleep = True

    def _wake(self, worker: Worker, batch: list[Attempt]) -> None:
        worker.asleep = False
        worker.timer = self._soon(self._end, worker, batch)

    def _end(self, worker: Worker, batch: list[Attempt]) -> None:
        worker.timer = None
        self._done(worker, batch, None)

    async def _run(self, worker: Worker, batch: list[Attempt]) -> None:
        try:
            outputs = await self.executors[worker.index].run_batch(batch)
        except WorkerDied:
            self._died(worker, batch)
            return
        self._done(worker, batch, outputs)

    def _done(self, worker: Worker, batch: list[Attempt], outputs: list | None) -> None:
        seconds = self._clock.now() - worker.started_s
        stats = self.stats
        stats.batches += 1
        stats.items += len(batch)
        stats.busy_s += seconds
        stats.batch_sizes.append(len(batch))
        stats.last_done_s = self._clock.now()
        worker.batch, worker.task = None, None
        self._on_done(batch, outputs, seconds)
        self._release(worker)

    def _release(self, worker: Worker) -> None:
        if not worker.alive:
            return
        while self._backlog:
            batch = self._backlog.popleft()
            self.backlog_count -= len(batch)
            if self._expired is not None:
                batch = self._drop_expired(batch)
                if not batch:
                    continue
            self._start(worker, batch)
            return
        self.idle.append(worker)
        # Offer the free GPU to pull-mode batchers, rotating who asks first.
        n = len(self._listeners)
        for i in range(n):
            if not self.idle:
                break
            self._listeners[(self._next_listener + i) % n]()
        if n:
            self._next_listener = (self._next_listener + 1) % n

    def _drop_expired(self, batch: list[Attempt]) -> list[Attempt]:
        now = self._clock.now()
        kept = []
        for a in batch:
            if self._expired.expired(a, now):  # type: ignore[union-attr]  # called only when set
                if self._on_drop is not None:
                    self._on_drop(a)
            else:
                kept.append(a)
        return kept

    # -- failures ---------------------------------------------------------------------
    def kill(self, count: int) -> list[int]:
        """Take `count` live workers down now (lowest indices first); returns them."""
        victims = [w for w in self.workers if w.alive][:count]
        for w in victims:
            w.alive = False
            self.alive -= 1
            if w in self.idle:
                self.idle.remove(w)
            if w.batch is not None and (w.task is not None or w.timer is not None):
                if w.task is not None:
                    w.task.cancel()
                if w.timer is not None:
                    w.timer.cancel()
                    if w.asleep:  # a sleeping task, cancelled, takes one more turn of the loop
                        w.asleep = False
                        self._soon(_nothing)
                batch, w.batch, w.task, w.timer = w.batch, None, None, None
                self.stats.killed_batches += 1
                self.stats.busy_s += self._clock.now() - w.started_s
                self._orphan(batch)
        return [w.index for w in victims]

    def _died(self, worker: Worker, batch: list[Attempt]) -> None:
        """The executor reported its own death mid-batch (live mode: a real
        worker fails rather than being cancelled). Handled exactly as kill():
        the worker is down until revive(); the batch is lost, or re-dispatched
        once with failure handling."""
        if worker.batch is not batch:
            return  # kill() already took this worker down and orphaned the batch
        if worker.alive:
            worker.alive = False
            self.alive -= 1
        worker.batch, worker.task = None, None
        self.stats.killed_batches += 1
        self.stats.busy_s += self._clock.now() - worker.started_s
        self._orphan(batch)

    def _orphan(self, batch: list[Attempt]) -> None:
        if not self.failure_handling or self._redispatch is None:
            for a in batch:
                self.stats.lost_attempts += 1
                if self._on_lost:
                    self._on_lost(a)
            return
        # The batch timeout notices the death; each request gets one more try.
        retry = [a for a in batch if not a.redispatched]
        for a in batch:
            if a.redispatched:
                self.stats.lost_attempts += 1
                if self._on_lost:
                    self._on_lost(a)
        for a in retry:
            a.redispatched = True
        if retry:
            delay = self.batch_timeout_factor * self.expected_s(retry)
            self.stats.redispatched += len(retry)
            self._loop.call_later(delay, self._redispatch, retry)

    def revive(self, indices: list[int] | None = None) -> None:
        """Bring dead workers (all, or `indices`) back into service."""
        for w in self.workers:
            if not w.alive and (indices is None or w.index in indices):
                w.alive = True
                self.alive += 1
                self._release(w)

    def clear(self) -> None:
        """Drop the parked batches and forget the running ones (nothing is answered)."""
        self._backlog.clear()
        self.backlog_count = 0
        for w in self.workers:
            w.batch, w.task, w.timer, w.asleep = None, None, None, False

    def cancel_all(self) -> None:
        for w in self.workers:
            if w.task is not None:
                w.task.cancel()
            if w.timer is not None:
                w.timer.cancel()
