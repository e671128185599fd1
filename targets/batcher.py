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
- RATE: a free GPU takes a partial batch once the fleet, running batches that
  small, would still serve the measured arrival rate at `utilization`
  (targets.dispatch_policy); DYNAMIC otherwise. Unlike ADAPTIVE's idle-share
  threshold it keeps full batches on a tight fleet at peak and goes at once
  at low traffic, whatever the fleet size.

`Batcher` is the thin asyncio shell around it: it re-evaluates on every
enqueue, on every GPU that frees up (pull mode) and on a timer when the policy
asks to be woken, and hands batches to the GPU pool.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable, Final

from targets.bucketed_queue import BucketedQueue
from targets.config import Batching
from targets.delayline import Alarm, clock_of
from targets.dispatch_policy import ArrivalRate, worth_dispatching
from targets.gpu_pool import GpuPool
from targets.native import mypyc_attr
from targets.protocol import Attempt, DeadlineCheck, Response, Status
from targets.queues import FairQueue, FifoQueue, Queue
from targets.slowness import Slowness

# Plain names for the kinds `decide` tests on every call (an Enum member lookup costs
# about 0.5 us in CPython 3.11; see targets.protocol).
_RATE: Final = Batching.RATE
_ADAPTIVE: Final = Batching.ADAPTIVE
_FULL: Final = Batching.FULL
_GREEDY: Final = Batching.GREEDY

DEADLINE_EXCEEDED = Response(Status.UNAVAILABLE, reason="deadline exceeded before dispatch")


@mypyc_attr(free_list_len=1)  # compiled: one freed Decision is kept for the next (a wait makes one per enqueue)
class Decision:
    """What `decide` says: put `take` requests in a batch now, or (take 0) wake me after
    `recheck_after_s`, if nothing else does first. A plain class, not a NamedTuple: compiled
    (targets.native), making one is a native call, where a tuple subclass's is a Python-level
    one; the DYNAMIC policy's wait makes one on every enqueue. Treat it as immutable."""

    def __init__(self, take: int = 0, recheck_after_s: float | None = None) -> None:
        self.take = take                        # requests to put in a batch now
        self.recheck_after_s = recheck_after_s  # wake me then, if nothing else does

    def __repr__(self) -> str:
        return f"Decision(take={self.take}, recheck_after_s={self.recheck_after_s})"


WAIT: Final = Decision()


@dataclass(frozen=True)
class BatchPolicy:
    kind: Batching
    max_batch: int
    max_wait_s: float = 0.0
    reserve_gpus: int = 0
    # RATE: requests/s one GPU serves at each batch size q (index q, 0..B; see
    # dispatch_policy.per_gpu_rps), the fleet utilisation partial batches may
    # keep, and the horizon the arrival rate is measured over.
    per_gpu_rps: tuple[float, ...] = ()
    utilization: float = 0.7
    rate_horizon_s: float = 0.1

    # Decision(take=q) for q = 0..B, made once: `decide` runs on every enqueue. A field set
    # in __post_init__, not a cached_property: compiled (targets.native), that one would
    # make all B + 1 of them again on every call.
    _takes: tuple[Decision, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind is Batching.RATE and len(self.per_gpu_rps) != self.max_batch + 1:
            raise ValueError(f"rate batching needs per_gpu_rps for batch sizes 0..{self.max_batch}")
        object.__setattr__(self, "_takes", tuple(Decision(take=q) for q in range(self.max_batch + 1)))

    def decide(self, queued: int, oldest_wait_s: float, gpu_free: bool, free_gpus: int | None = None,
               rate_rps: float = 0.0, gpus: float = 0.0) -> Decision:
        """What to do now. `oldest_wait_s` is ignored when `queued` is 0;
        `free_gpus` (pull mode) defaults to 1 if `gpu_free` else 0. RATE reads
        `rate_rps` (this queue's measured arrivals) and `gpus` (its share of
        the live fleet)."""
        if queued <= 0:
            return WAIT
        b, kind = self.max_batch, self.kind
        if kind is _RATE:
            if gpu_free and queued < b and worth_dispatching(queued, rate_rps, gpus, self.utilization, self.per_gpu_rps):
                return self._takes[queued]
        elif kind is _ADAPTIVE:
            free = (1 if gpu_free else 0) if free_gpus is None else free_gpus
            if gpu_free and free > self.reserve_gpus:
                return self._takes[min(b, queued)]
        elif kind is _FULL:
            return self._takes[b] if queued >= b else WAIT
        elif kind is _GREEDY:
            return self._takes[min(b, queued)] if gpu_free else WAIT
        # DYNAMIC
        if not gpu_free:
            return WAIT  # a GPU freeing up re-evaluates
        if queued >= b:
            return self._takes[b]
        max_wait_s = self.max_wait_s
        if oldest_wait_s >= max_wait_s - 1e-12:
            return self._takes[queued]
        return Decision(0, max_wait_s - oldest_wait_s)


class Batcher:
    """Feeds one queue's batches to a GPU pool.

    `pull=True`: a batch is formed only when the pool has a free GPU (the
    shared-queue design); `pull=False`: batches are pushed to the pool, which
    parks them until a GPU frees (the doc's per-server queues).
    `expired(a, now)` says whether a queued request can no longer be useful
    (deadline propagation); such requests are dropped before dispatch.
    `gpu_share`: this queue's share of the pool's GPUs (1/N for N queues),
    what a RATE policy weighs this queue's arrival rate against; `slowness()`
    (measured / expected batch time) shrinks that share in a slowdown, when
    the fleet can afford fewer partial batches than its nominal cost says.
    `queue` and `pool` are typed as the classes they are (a `Queue`, a `GpuPool`), not as
    Protocols: compiled, what the batcher calls on them per request is then a native call.
    """

    def __init__(
        self,
        queue: Queue,
        policy: BatchPolicy,
        pool: GpuPool,
        pull: bool,
        expired: DeadlineCheck | None = None,
        on_drop: Callable[[Attempt], None] | None = None,
        gpu_share: float = 1.0,
        slowness: Slowness | None = None,
    ) -> None:
        self.queue = queue
        self.policy = policy
        self.pool = pool
        self.pull = pull
        self._expired = expired
        self._on_drop = on_drop
        self._loop = asyncio.get_running_loop()
        self._alarm = Alarm(self._loop, self.pump)  # the next recheck
        self._clock = clock_of(self._loop)  # read per request
        self._rate = ArrivalRate(policy.rate_horizon_s) if policy.kind is Batching.RATE else None
        self.gpu_share = gpu_share
        self._slowness = slowness
        # Pull mode: every policy but FULL waits while no GPU is free (see decide), so an
        # enqueue then changes nothing: skipping its pump saves most of a busy fleet's work.
        self._waits_for_gpu = pull and policy.kind is not Batching.FULL
        # A BucketedQueue typed as one (its sub-queues), for native calls of what only it has.
        self._buckets: BucketedQueue | None = queue if isinstance(queue, BucketedQueue) else None
        self._full_only, self._max_batch = policy.kind is Batching.FULL, policy.max_batch
        if pull:
            pool.add_listener(self.pump)

    def enqueue(self, attempt: Attempt, now: float | None = None) -> None:
        """`now`: the loop's time, when the caller has it."""
        attempt.enqueued_s = now = self._clock.now() if now is None else now
        if self._rate is not None:
            self._rate.observe(now)
        self.queue.push(attempt)
        if self._waits_for_gpu and not self.pool.idle:
            return  # every such policy decides WAIT now, and a GPU freeing up pumps
        if self._full_only and len(self.queue) < self._max_batch:
            return  # FULL waits for B, with no timer (nor can any length bucket hold B)
        self._pump(now)

    def requeue_front(self, attempts: list[Attempt]) -> None:
        for a in reversed(attempts):
            self.queue.push_front(a)
        self.pump()

    def pump(self) -> None:
        """Form and hand over every batch the policy allows right now."""
        self._pump(self._clock.now())

    def _pump(self, now: float) -> None:
        # policy.decide called on the policy itself: compiled, a native call with unboxed
        # arguments, where a bound method kept in an attribute is a Python call.
        pool, queue, policy = self.pool, self.queue, self.policy
        rate = gpus = 0.0
        if self._rate is not None:
            rate, gpus = self._rate.rps(now), pool.alive * self.gpu_share
            s = self._slowness
            if s is not None:  # s.at(now), its answer of this instant read without a call
                gpus /= s.value if now == s.asked_s else s.at(now)
        while True:
            # Push mode can always hand a batch over (the pool parks it), but
            # ADAPTIVE still needs the real count of idle GPUs to judge slack.
            free = len(pool.idle)
            gpu_free = free > 0 or not self.pull
            buckets = self._buckets
            source: Queue | None = None
            if buckets is not None:
                decision = WAIT
                for sub in buckets.sub_queues():
                    head = sub.oldest_s()  # never None: the sub-queues are the non-empty ones
                    d = policy.decide(len(sub), now - head if head is not None else 0.0, gpu_free, free, rate, gpus)
                    if d.take:
                        decision, source = d, sub
                        break
                    if d.recheck_after_s is not None and (decision.recheck_after_s is None or d.recheck_after_s < decision.recheck_after_s):
                        decision = d
            else:
                oldest = queue.oldest_s()
                decision = policy.decide(len(queue), now - oldest if oldest is not None else 0.0, gpu_free, free, rate, gpus)
            take = decision.take
            if not take:
                recheck = decision.recheck_after_s
                if recheck is not None and self._alarm.at_s > now + recheck + 1e-12:
                    self._alarm.at(now + recheck)  # (the test: Alarm.at's own, done here to skip the call)
                return
            batch = self._take(take, now, source)
            if batch:
                pool.submit(batch)
            # else: everything taken had expired: decide again

    def _take(self, n: int, now: float, source: Queue | None = None) -> list[Attempt]:
        """Pop up to n requests, dropping any whose deadline makes them useless
        (checked here, at the head, rather than by scanning the whole queue);
        `source`: the sub-queue of a BucketedQueue to take them from."""
        q, expired, buckets = self.queue, self._expired, self._buckets
        got = buckets.pop_from(source, n) if source is not None and buckets is not None else q.pop(n)
        if expired is None:
            return got
        kept: list[Attempt] = []
        while got:
            for a in got:
                if expired.expired(a, now):
                    if self._on_drop:
                        self._on_drop(a)
                else:
                    kept.append(a)
            if len(kept) >= n:
                break
            got = (buckets.pop_from(source, n - len(kept)) if source is not None and buckets is not None
                   else q.pop(n - len(kept)))
        return kept

