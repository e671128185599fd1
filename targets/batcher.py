"""Batching: when a queue becomes a batch.

`BatchPolicy.decide` is the whole policy, a pure function of the queue's
length, how long its oldest request has waited and whether a GPU is free:

- FULL (the doc): take exactly B once B are queued; otherwise wait forever.
- DYNAMIC: take B when B are queued, or whatever is queued once the oldest has
  waited `max_wait_s`; in pull mode only when a GPU is free to run it (forming
  a batch early only to park it behind busy GPUs would freeze it small).
- GREEDY (work-conserving): a free GPU takes whatever is queued, up to B.
- ADAPTIVE: greedy while more than `reserve_gpus` GPUs are free (capacity is
  plentiful, so a partial batch costs nobody anything and waiting only adds
  latency), DYNAMIC otherwise (capacity is scarce: full batches are what keep
  the fleet's throughput at B per batch time). Under a constant batch time,
  pure greedy at peak keeps every GPU busy on small batches in phase-locked
  waves; the reserve stops that (see benchmarks/batching_policies.py).

`Batcher` is the thin asyncio shell around it: it re-evaluates on every
enqueue, on every GPU that frees up (pull mode) and on a timer when the policy
asks to be woken, and hands batches to the GPU pool.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Protocol

from targets.config import Batching
from targets.protocol import Attempt, Response, Status
from targets.queues import BucketedQueue, Queue

DEADLINE_EXCEEDED = Response(Status.UNAVAILABLE, reason="deadline exceeded before dispatch")


@dataclass(frozen=True)
class Decision:
    take: int = 0                      # requests to put in a batch now
    recheck_after_s: float | None = None  # wake me then, if nothing else does


WAIT = Decision()


@dataclass(frozen=True)
class BatchPolicy:
    kind: Batching
    max_batch: int
    max_wait_s: float = 0.0
    reserve_gpus: int = 0

    def decide(self, queued: int, oldest_wait_s: float, gpu_free: bool, free_gpus: int | None = None) -> Decision:
        """What to do now. `oldest_wait_s` is ignored when `queued` is 0;
        `free_gpus` (pull mode) defaults to 1 if `gpu_free` else 0."""
        if queued <= 0:
            return WAIT
        b = self.max_batch
        if self.kind is Batching.ADAPTIVE:
            free = (1 if gpu_free else 0) if free_gpus is None else free_gpus
            if gpu_free and free > self.reserve_gpus:
                return Decision(take=min(b, queued))
        if self.kind is Batching.FULL:
            return Decision(take=b) if queued >= b else WAIT
        if self.kind is Batching.GREEDY:
            return Decision(take=min(b, queued)) if gpu_free else WAIT
        # DYNAMIC
        if not gpu_free:
            return WAIT  # a GPU freeing up re-evaluates
        if queued >= b:
            return Decision(take=b)
        if oldest_wait_s >= self.max_wait_s - 1e-12:
            return Decision(take=queued)
        return Decision(recheck_after_s=self.max_wait_s - oldest_wait_s)


class Batcher:
    """Feeds one queue's batches to a GPU pool.

    `pull=True`: a batch is formed only when the pool has a free GPU (the
    shared-queue design); `pull=False`: batches are pushed to the pool, which
    parks them until a GPU frees (the doc's per-server queues).
    `expired(a, now)` says whether a queued request can no longer be useful
    (deadline propagation); such requests are dropped before dispatch.
    """

    def __init__(
        self,
        queue: Queue,
        policy: BatchPolicy,
        pool: "GpuPoolLike",
        pull: bool,
        expired: Callable[[Attempt, float], bool] | None = None,
        on_drop: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.queue = queue
        self.policy = policy
        self.pool = pool
        self.pull = pull
        self._expired = expired
        self._on_drop = on_drop
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._loop = asyncio.get_running_loop()
        if pull:
            pool.add_listener(self.pump)

    def enqueue(self, attempt: Attempt) -> None:
        attempt.enqueued_s = self._loop.time()
        self.queue.push(attempt)
        self.pump()

    def requeue_front(self, attempts: list[Attempt]) -> None:
        for a in reversed(attempts):
            self.queue.push_front(a)
        self.pump()

    def pump(self) -> None:
        """Form and hand over every batch the policy allows right now."""
        now = self._loop.time()
        while True:
            # Push mode can always hand a batch over (the pool parks it), but
            # ADAPTIVE still needs the real count of idle GPUs to judge slack.
            free = self.pool.free_gpus()
            gpu_free = free > 0 or not self.pull
            if isinstance(self.queue, BucketedQueue):
                decision, source = WAIT, None
                for sub in self.queue.sub_queues():
                    d = self.policy.decide(len(sub), now - sub.oldest_s(), gpu_free, free)
                    if d.take:
                        decision, source = d, sub
                        break
                    if d.recheck_after_s is not None and (decision.recheck_after_s is None or d.recheck_after_s < decision.recheck_after_s):
                        decision = d
                batch = self._take(decision.take, now, source) if decision.take else []
            else:
                oldest = self.queue.oldest_s()
                wait = now - oldest if oldest is not None else 0.0
                decision = self.policy.decide(len(self.queue), wait, gpu_free, free)
                batch = self._take(decision.take, now) if decision.take else []
            if not batch:
                if decision.take:
                    continue  # everything taken had expired: decide again
                if decision.recheck_after_s is not None:
                    self._wake_at(now + decision.recheck_after_s)
                return
            self.pool.submit(batch)

    def _take(self, n: int, now: float, source=None) -> list[Attempt]:
        """Pop up to n requests, dropping any whose deadline makes them useless
        (checked here, at the head, rather than by scanning the whole queue)."""
        q, expired, kept = self.queue, self._expired, []
        while len(kept) < n:
            want = n - len(kept)
            got = q.pop_from(source, want) if source is not None else q.pop(want)
            if not got:
                break
            for a in got:
                if expired is not None and expired(a, now):
                    if self._on_drop:
                        self._on_drop(a)
                else:
                    kept.append(a)
            if expired is None:
                break
        return kept

    def _wake_at(self, when: float) -> None:
        if self._timer is not None and self._timer_at <= when + 1e-12:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        self.pump()


class GpuPoolLike(Protocol):
    """What a Batcher needs of a pool (see targets.gpu_pool.GpuPool)."""

    def free_gpus(self) -> int: ...
    def submit(self, batch: list[Attempt]) -> None: ...
    def add_listener(self, fn: Callable[[], None]) -> None: ...
