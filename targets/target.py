"""A reference serving target, composed from the components by its config.

Request path: cache (in front of the servers) -> balancer -> API server
[dedupe, tenant limit, admission] -> queue (the server's own, or the shared
one) -> batcher -> GPU pool -> answer (dedupe waiters, cache fill).

The target is transport-free: `submit(attempt)` answers through the
attempt's future, so the same object serves the in-process transport (sim)
and the aiohttp front doors (live).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Callable, Protocol, Sequence

from targets.accounting import TargetStats
from targets.admission import TenantBuckets
from targets.balancer import Balancer, create_balancer
from targets.batcher import DEADLINE_EXCEEDED, Batcher, BatchPolicy
from targets.bounded import Bound, RecentSet, SeenSet
from targets.bucketed_queue import BucketedQueue
from targets.cache import ResponseCache
from targets.canary_fleet import CanaryFleet
from targets.config import Batching, CacheMode, TargetConfig, Topology
from targets.dedupe import DEADLINE_PASSED, ORPHANED, Deduper
from targets.delayline import Alarm, DelayLine, DueHandler, clock_of
from targets.dispatch_policy import per_gpu_rps
from targets.executors import ModeledExecutor, cost_function
from targets.frontend_cpu import FrontendCpu
from targets.gpu_pool import Executor, GpuPool
from targets.latency_forecast import AdmissionForecast
from targets.protocol import OK, OK_RESPONSE, UNAVAILABLE, Attempt, DeadlineCheck, Response, Status
from targets.queues import FairQueue, FifoQueue
from targets.slowness import Slowness
from targets.snapshot import CacheSnapshot, DedupeSnapshot, PoolSnapshot, TargetSnapshot, WastedSnapshot
from targets.versions import CanaryRouting, CanarySplit, ModelVersion


def _always(_: Attempt) -> bool:
    return True


class SlowableExecutor(Protocol):
    """An executor whose batches fault injection can slow down (modeled and
    torch executors are; a test's plain executor need not be)."""

    slowdown: float


class ServingTarget:
    def __init__(
        self,
        config: TargetConfig,
        rng: random.Random,
        executor_for: Callable[[int], Executor] | None = None,
        computed_bound: Bound | None = None,
    ) -> None:
        self.config = config
        self.loop = asyncio.get_running_loop()
        self.cost = cost_function(config)
        self.stats = TargetStats()
        self.gpus = config.fleet_gpus
        self.batch_s = self.cost(config.batch_size, config.reference_length)
        # Deadline propagation: a queued request that a batch started now would finish too late is dropped.
        self._expiry = DeadlineCheck(self.batch_s) if config.propagate_deadline else None
        self._slowness = Slowness(tau_s=max(1.0, 10 * self.batch_s))
        modeled = ModeledExecutor(self.cost)
        self.modeled = modeled if executor_for is None else None
        self.pool = GpuPool(
            self.gpus,
            executor_for or (lambda i: modeled),
            on_done=self._batch_done,
            failure_handling=config.failure_handling,
            batch_timeout_factor=config.batch_timeout_factor,
            redispatch=self._redispatch,
            on_lost=self._lost,
            expired=self._expiry,
            on_drop=self._dropped,
        )
        n = config.api_servers
        self.balancer: Balancer = create_balancer(config.routing, n, rng)
        self.inflight = [0] * n
        rate = config.batching is Batching.RATE
        policy = BatchPolicy(config.batching, config.batch_size, config.effective_max_wait_s,
                             reserve_gpus=int(config.reserve_fraction * self.gpus),
                             per_gpu_rps=per_gpu_rps(lambda q: self.cost(q, config.reference_length),
                                                     config.batch_size) if rate else (),
                             utilization=config.batch_utilization, rate_horizon_s=self.batch_s)
        expired = self._expiry
        shared = config.topology is Topology.SHARED
        queues = 1 if shared else n
        self.batchers = [
            Batcher(self._new_queue(), policy, self.pool, pull=shared, expired=expired, on_drop=self._dropped,
                    gpu_share=1 / queues, slowness=self._slowness)
            for _ in range(queues)
        ]
        self._per_server = queues > 1
        self.cache: ResponseCache | None = None
        if config.cache is not CacheMode.OFF:
            break_even = max(0.01, config.cache_hop_s / self.batch_s)
            self.cache = ResponseCache(config.cache, config.cache_entries, config.model_version, break_even)
            self._cache_hop = DelayLine(config.cache_hop_s, _CacheHop(self), self.loop)
        self.dedupe = Deduper(ttl_s=config.client_timeout_s * (config.client_retries + 1)) if config.dedupe else None
        self._dedupe_alarm = Alarm(self.loop, self._dedupe_expire)  # the dedupe's next due attempt
        tenant_rate = config.tenant_limit_share * config.peak_qps
        self._buckets = TenantBuckets(tenant_rate, max(1.0, tenant_rate * config.tenant_burst_s))
        self._admission = (AdmissionForecast(config, self.cost, self.batch_s, self.pool, self.batchers, policy,
                                             self._slowness) if config.admission else None)
        # Read on every request: plain attributes rather than the pydantic config's.
        self._clock = clock_of(self.loop)  # the loop's time, read natively (targets.delayline)
        self._tenant_limits = config.tenant_limits
        # uids computed so far (duplicate-work accounting). A sim run is finite, so by
        # default it remembers every uid and the duplicate/abandoned split is exact; a
        # server that runs for days passes `computed_bound` (see live_computed_bound).
        self._computed: RecentSet[int] | SeenSet = RecentSet(computed_bound) if computed_bound else SeenSet()
        self.canary: CanaryFleet | None = None  # attach_canary: a rollout's second version
        # Modeled GPUs, modeled front end (targets.frontend_cpu); real servers pay real CPU.
        self.frontend = FrontendCpu.for_config(config, n) if executor_for is None else None

    # -- construction helpers ------------------------------------------------------
    def _new_queue(self):
        c = self.config
        make = (lambda: FairQueue(quantum=c.reference_length)) if c.tenant_limits else FifoQueue
        return BucketedQueue(make, c.reference_length) if c.length_bucketing else make()

    def _batcher_for(self, server: int) -> Batcher:
        return self.batchers[server if self._per_server else 0]

    # -- observation -----------------------------------------------------------------
    def queue_depth(self) -> int:
        return sum(len(b.queue) for b in self.batchers) + self.pool.backlog_items()

    def clear(self) -> None:
        """Forget every request still queued or parked (a finished simulation: what is
        left at the horizon is then freed at once by reference counting, not walked by
        the cyclic collector, which costs a second or more after an overloaded run)."""
        for b in self.batchers:
            b.queue.drop_if(_always)
        self.pool.clear()
        self._computed.clear()
        if self.dedupe is not None:
            self.dedupe.clear()
        self._dedupe_alarm.cancel()
        if self.cache is not None:
            self.cache.clear()
        if self.canary is not None:
            self.canary.batcher.queue.drop_if(_always)
            self.canary.pool.clear()

    def set_slowdown(self, factor: float) -> None:
        for ex in {id(e): e for e in self.pool.executors}.values():
            if hasattr(ex, "slowdown"):  # a SlowableExecutor (mypyc has no runtime_checkable)
                ex.slowdown = factor

    def snapshot(self) -> TargetSnapshot:
        """The target's figures now, as plain data (what a run's summary reads)."""
        pool, st = self.pool, self.stats
        ps = pool.stats
        cache = self.cache.stats if self.cache is not None else None
        dedupe = self.dedupe.stats if self.dedupe is not None else None
        return TargetSnapshot(
            pool=PoolSnapshot(
                gpus=self.gpus, alive=pool.alive_gpus(), batches=ps.batches, items=ps.items,
                largest_batch=max(ps.batch_sizes, default=0), busy_gpu_s=pool.busy_gpu_seconds(),
                finished_busy_s=ps.busy_s, last_done_s=ps.last_done_s, lost_attempts=ps.lost_attempts,
                redispatched=ps.redispatched, killed_batches=ps.killed_batches),
            wasted=WastedSnapshot(st.wasted_duplicate_s, st.wasted_abandoned_s, st.wasted_padding_s),
            received=st.received, lost=st.lost, shed_tenant=st.shed_tenant, shed_overload=st.shed_overload,
            expired=st.expired,
            cache=None if cache is None else CacheSnapshot(cache.lookups, cache.hits, cache.bypassed,
                                                           cache.evictions, cache.hit_rate),
            dedupe=None if dedupe is None else DedupeSnapshot(dedupe.coalesced, dedupe.replayed,
                                                              dedupe.conflicts, dedupe.refused),
        )

    def kill_gpus(self, fraction: float) -> list[int]:
        return self.pool.kill(max(1, round(self.pool.alive_gpus() * fraction)))

    def revive_gpus(self, indices: list[int] | None = None) -> None:
        self.pool.revive(indices)

    # -- the request path ------------------------------------------------------------------
    def submit(self, a: Attempt, server: int | None = None) -> None:
        """Accept an attempt at the front of the fleet (cache, then balancer).

        `server`: the API server a real layer-4 balancer already chose (live
        mode); None lets the target's own balancer choose.
        """
        self.stats.received += 1
        if server is not None:
            a.server = server
        cache = self.cache
        if cache is not None and cache.should_lookup():
            self._cache_hop.push(a)
        elif self.frontend is None:
            # _route(a) with no front end to pass, inline: this runs for every attempt
            self.submit_to(a.server if a.server >= 0 else self.balancer.route(a.tenant, a.conn, self.inflight), a)
        else:
            self._route(a)

    def attach_canary(self, version: ModelVersion, routing: CanaryRouting, gpus: int,
                      executor_for: Callable[[int], Executor] | None = None, salt: int = 0) -> CanarySplit:
        """Serve `version` on `gpus` replicas of its own beside the baseline; the
        returned split's `weight` (0 until set) is the share the rollout sends it.
        `executor_for`: the replicas' executors (live: torch workers); None: modeled.
        `salt`: which requests the split's hash picks (the sim passes its seed)."""
        policy = dataclasses.replace(self.batchers[0].policy, reserve_gpus=int(self.config.reserve_fraction * gpus))
        self.canary = CanaryFleet(version, routing, gpus, self.cost, policy, self._batch_done,
                                  executor_for=executor_for, salt=salt)
        return self.canary.split

    def _after_cache(self, a: Attempt) -> None:
        canary, cache = self.canary, self.cache
        assert cache is not None  # called only with a cache (compiled: then a native call, its tuple unpacked natively)
        hit, output = cache.get(a, None if canary is None else canary.version_of(a).name)
        if hit:
            if canary is not None:
                canary.check_cached(a, output)
            a.answer(Response(OK, cached=True, output=output))
        else:
            self._route(a)

    def _route(self, a: Attempt) -> None:
        server = a.server if a.server >= 0 else self.balancer.route(a.tenant, a.conn, self.inflight)
        fe = self.frontend
        if fe is None:
            self.submit_to(server, a)
            return
        got = fe.admit(server, self._clock.now())
        if got.shed:
            self.stats.shed_overload += 1
            self.loop.call_at(got.done_s, self._reply, a, Response(
                Status.UNAVAILABLE, retry_after_s=max(0.05, got.wait_s), reason="front end overloaded"))
        else:
            self.loop.call_at(got.done_s, self.submit_to, server, a)

    def submit_to(self, server: int, a: Attempt) -> None:
        """An API server's handling of one attempt (after cache and balancer)."""
        now = self._clock.now()
        a.server = server
        dedupe = self.dedupe
        if dedupe is not None and not dedupe.offer(a, now):
            # Answered here, or attached to the key's work: then due by its own deadline.
            due = dedupe.next_expiry()
            if due is not None:
                self._dedupe_alarm.at(due)
            return
        if self._tenant_limits:
            bucket = self._buckets.bucket(a.tenant, now)
            if not bucket.try_take(now):
                self.stats.shed_tenant += 1
                self._reply(a, Response(Status.TOO_MANY, retry_after_s=max(0.05, bucket.wait_s(now)), reason="tenant over its limit"))
                return
        index = server if self._per_server else 0
        batcher = self.batchers[index]
        admission = self._admission
        if admission is not None:
            retry_after_s = admission.retry_after_s(batcher, a, now, index)
            if retry_after_s is not None:
                self.stats.shed_overload += 1
                self._reply(a, Response(UNAVAILABLE, retry_after_s=retry_after_s, reason="overloaded"))
                return
        # (not `+=`: compiled, an augmented store into a list item is a generic
        # PyNumber_InPlaceAdd on the boxed item; this is a native add)
        self.inflight[server] = self.inflight[server] + 1
        if self.canary is not None and self.canary.takes(a):
            batcher = self.canary.batcher
        batcher.enqueue(a, now)

    def _dropped(self, a: Attempt) -> None:
        self.stats.expired += 1
        self.inflight[a.server] = self.inflight[a.server] - 1
        self._reply(a, DEADLINE_EXCEEDED)

    def _dedupe_expire(self) -> None:
        """Answer each attempt that waits on another's work past its own deadline."""
        dedupe = self.dedupe
        if dedupe is None:
            return
        for a in dedupe.expire(self._clock.now()):
            a.answer(DEADLINE_PASSED)
        due = dedupe.next_expiry()
        if due is not None:
            self._dedupe_alarm.at(due)

    def _reply(self, a: Attempt, response: Response) -> None:
        others = self.dedupe.settle(a, response, self._clock.now()) if self.dedupe is not None else None
        a.answer(response)
        if others is not None:
            for w in others:
                w.answer(response)

    # -- completion -------------------------------------------------------------------------
    def _batch_done(self, batch: list[Attempt], outputs: list | None, seconds: float,
                    version: ModelVersion | None = None) -> None:
        """`version`: the canary's, for a batch its replicas ran (slow by its own
        cost factor, which the baseline's admission must not read as a slowdown)."""
        share = seconds / len(batch)
        longest = 0  # max(a.size for a in batch): compiled, a native loop over unboxed ints
        for a in batch:
            if a.size > longest:
                longest = a.size
        nominal = self.cost(len(batch), longest)
        if nominal > 0 and version is None:
            self._slowness.observe(self._clock.now(), seconds, nominal)
        stats, computed, dedupe, cache = self.stats, self._computed, self.dedupe, self.cache
        if longest > self.config.reference_length:
            tokens = sum(max(a.size, self.config.reference_length) for a in batch)
            stats.wasted_padding_s += seconds * (1 - tokens / (len(batch) * longest))
        now, inflight, canary = self._clock.now(), self.inflight, self.canary
        for i, a in enumerate(batch):
            inflight[a.server] = inflight[a.server] - 1
            if not computed.add(a.uid, now):
                stats.wasted_duplicate_s += share
            elif a.done and not (dedupe and any(not w.done for w in dedupe.waiters(a))):
                stats.wasted_abandoned_s += share
            if canary is None and outputs is None:
                # A modeled batch's answer, through _reply inline (this runs for every request).
                if cache is not None:
                    cache.put(a, None)
                if dedupe is None:
                    a.answer(OK_RESPONSE)
                else:  # called on the Deduper (a native call; a bound method kept is a Python call)
                    others = dedupe.settle(a, OK_RESPONSE, now)
                    a.answer(OK_RESPONSE)
                    if others is not None:
                        for w in others:
                            w.answer(OK_RESPONSE)
                continue
            output = outputs[i] if outputs is not None else None
            served = None
            if canary is not None:
                served = version or canary.baseline
                output, failed = canary.answer(a, served, output)
                if failed:  # the output says which version failed (the server's version label)
                    self._reply(a, Response(Status.ERROR, output=output, reason=f"model {served.name} failed"))
                    continue
            response = OK_RESPONSE if output is None else Response(OK, output=output)
            if cache is not None:
                cache.put(a, output, None if served is None else served.name)
            self._reply(a, response)

    def _redispatch(self, batch: list[Attempt]) -> None:
        by_batcher: dict[int, list[Attempt]] = {}
        for a in batch:
            by_batcher.setdefault(0 if len(self.batchers) == 1 else a.server, []).append(a)
        for idx, items in by_batcher.items():
            self.batchers[idx].requeue_front(items)

    def _lost(self, a: Attempt) -> None:
        self.stats.lost += 1
        self.inflight[a.server] = self.inflight[a.server] - 1
        if self.dedupe is not None:
            # The server never learns the answer; forget the ID so a retry runs, and tell the
            # attempts that waited on this one (they would otherwise wait for nothing).
            for w in self.dedupe.orphan(a, self._clock.now()):
                w.answer(ORPHANED)


class _CacheHop(DueHandler):
    """The end of the cache's network hop: the target's lookup (compiled: a native call)."""

    def __init__(self, target: ServingTarget) -> None:
        self.target = target

    def due(self, attempt: Attempt) -> None:
        self.target._after_cache(attempt)
