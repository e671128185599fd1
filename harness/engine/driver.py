"""The open-loop driver: every request starts at its scheduled time.

Requests do not wait for earlier ones (open loop), so a slow target faces the
full offered load, as in production. Each tenant's requests are spread round
robin over its keep-alive connections, which is what the layer-4 balancer
sees. The loop is bounded: it ends when every scheduled request has its final
answer, and each request is bounded by its client policy's timeouts. Cancelling
`run` stops the arrivals; the requests already started end on their own.
"""

from __future__ import annotations

import asyncio
import random

import numpy as np

from harness.engine.clock import VirtualTimeLoop
from targets.client import Client, ClientPolicy, Transport
from targets.delayline import clock_of
from workloads.arrivals import Schedule


class Driver:
    def __init__(self, schedule: Schedule, policy: ClientPolicy, transport: Transport, sink, rng: random.Random,
                 uids: list[int] | None = None) -> None:
        """`uids`: the number each request is known by (request IDs, the sink's index),
        when this driver drives a share of a larger schedule (harness.live.driver_procs);
        default its position in `schedule`."""
        self.schedule = schedule
        self.uids = uids
        self.policy = policy
        self.transport = transport
        self.sink = sink
        self.rng = rng
        self.started = 0
        self.finished = 0

    @property
    def outstanding(self) -> int:
        """Requests started and not yet finished."""
        return self.started - self.finished

    async def run(self, t0: float | None = None) -> None:
        """Drive the whole schedule; returns when every request has finished."""
        loop = asyncio.get_running_loop()
        t0 = loop.time() if t0 is None else t0
        s = self.schedule
        n = len(s.sched_s)
        if n == 0:
            return
        # Everything a request is started with, per request, in bulk (numpy), so that an
        # arrival costs one call: its send time, tenant name and connection.
        # Typed lists: compiled, each `at[i]` in `feed` is then a native list read with an
        # unboxed answer, where an untyped one is a generic item lookup (six a request).
        at: list[float] = (t0 + s.sched_s).tolist()
        names = s.tenants
        tenant_index: list[int] = s.tenant.tolist()  # (typed: each names[t] below a native tuple read)
        tenant: list[str] = [names[t] for t in tenant_index]
        conn: list[int] = connections(s).tolist()
        content: list[int] = s.content.tolist()
        variant: list[int] = s.variant.tolist()
        size: list[int] = s.size.tolist()
        uid: list[int] = self.uids if self.uids is not None else list(range(n))
        done = loop.create_future()

        def finished() -> None:
            self.finished += 1
            if self.finished == n and not done.done():  # a cancelled run's last answers end nothing
                done.set_result(None)

        # The client itself, not its bound `start`: compiled, `client.start(...)` is a native
        # call, where a bound method kept in a variable is a Python one (once per request).
        client = Client(self.policy, self.transport, self.sink, self.rng, on_finished=finished)
        # The virtual-time loop keeps the next arrival in a slot of its own (no timer handle),
        # called on the loop typed as one (compiled: a native call, once an arrival time).
        virtual = loop if isinstance(loop, VirtualTimeLoop) else None
        arm = getattr(loop, "feed_at", loop.call_at)
        clock = clock_of(loop)

        def feed() -> None:
            if done.cancelled():  # the run was cancelled (a sweep step cut short): start no more
                return
            i = self.started
            horizon = clock.now() + 1e-9
            while i < n and at[i] <= horizon:
                client.start(uid[i], tenant[i], conn[i], content[i], variant[i], size[i])
                i += 1
            self.started = i
            if i < n:
                if virtual is not None:
                    virtual.feed_at(at[i], feed)
                else:
                    arm(at[i], feed)

        arm(at[0], feed)
        try:
            await done
        finally:
            # `feed` names itself, so the closure and the scope it keeps (these lists) are a
            # cycle that only the collector frees: its next pass, when a run's collector is
            # restored, walked every request's boxed numbers (5 ms a run of 100,000). Emptied
            # here, they go at once by reference counting. (A cancelled run's `feed`, if still
            # armed, starts nothing: it reads no column.)
            for column in (at, tenant_index, tenant, conn, content, variant, size):
                column.clear()
            if self.uids is None:
                uid.clear()


def connections(s: Schedule) -> np.ndarray:
    """The keep-alive connection of each request: each tenant's requests round robin
    over its connections, in schedule order."""
    tenant = s.tenant
    counts = np.bincount(tenant, minlength=len(s.tenants))
    order = np.argsort(tenant, kind="stable")
    rank = np.empty(len(tenant), dtype=np.int64)
    rank[order] = np.arange(len(tenant)) - np.repeat(np.cumsum(counts) - counts, counts)
    return rank % np.asarray(s.connections, dtype=np.int64)[tenant]
