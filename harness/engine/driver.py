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
from targets.client import Client, ClientPolicy, Finished, Transport
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
        cols = _Columns(s, t0, self.uids)
        done = loop.create_future()

        finished = _Finished(self, n, done)
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
            # i's place in the columns' chunk, which holds request i whenever i < n (a chunk's
            # successor is made as soon as its last request has started)
            k = i - cols.base
            at = cols.at
            while i < n and at[k] <= horizon:
                client.start(cols.uid[k], cols.tenant[k], cols.conn[k], cols.content[k], cols.variant[k], cols.size[k])
                i += 1
                k += 1
                if k == len(at) and i < n:
                    cols.fill(i)
                    at, k = cols.at, 0
            self.started = i
            if i < n:
                if virtual is not None:
                    virtual.feed_at(at[k], feed)
                else:
                    arm(at[k], feed)

        cols.fill(0)
        arm(cols.at[0], feed)
        try:
            await done
        finally:
            # `feed` names itself, so the closure and the scope it keeps (the columns) are a
            # cycle that only the collector frees; emptied here, they go at once.
            cols.clear()


class _Finished(Finished):
    """The driver's count of finished requests (a Client's `on_finished`): the run is done when
    all `n` have finished. A Finished, not a closure: compiled, the client's call, once a
    request, is a native one."""

    def __init__(self, driver: Driver, n: int, done: asyncio.Future[None]) -> None:
        self.driver = driver
        self.n = n
        self.done = done

    def finished(self) -> None:
        driver = self.driver
        driver.finished += 1
        if driver.finished == self.n and not self.done.done():  # a cancelled run's last answers end nothing
            self.done.set_result(None)


CHUNK = 512  # requests whose start arguments the driver makes at a time (see _Columns)


class _Columns:
    """What each request is started with (its send time, uid, tenant name, connection, content,
    variant, size), as Python objects for a chunk of CHUNK requests at a time (`fill(start)`:
    requests start .. start + CHUNK - 1, from `base` on), made from the schedule's arrays as the
    driver reaches them. Typed lists: compiled, each `at[k]` in the driver's `feed` is a native
    list read with an unboxed answer. A chunk at a time, not the whole schedule at once: the
    objects of a whole run's requests, made at its start, were cold by the time their requests
    started (a cache miss each read, and again when freed at the end); a chunk's are made just
    before they are read and freed, hot, for the next chunk's."""

    def __init__(self, s: Schedule, t0: float, uids: list[int] | None) -> None:
        self.sched_s = s.sched_s
        self.t0 = t0
        self.names = s.tenants
        self.tenant_of = s.tenant
        self.conns = connections(s)
        self.contents = s.content
        self.variants = s.variant
        self.sizes = s.size
        self.uids = uids
        self.base = 0
        self.at: list[float] = []
        self.uid: list[int] = []
        self.tenant: list[str] = []
        self.conn: list[int] = []
        self.content: list[int] = []
        self.variant: list[int] = []
        self.size: list[int] = []

    def fill(self, start: int) -> None:
        end = start + CHUNK
        self.base = start
        self.at = (self.t0 + self.sched_s[start:end]).tolist()
        names = self.names
        tenant_index: list[int] = self.tenant_of[start:end].tolist()  # (typed: each names[t] a native tuple read)
        self.tenant = [names[t] for t in tenant_index]
        self.conn = self.conns[start:end].tolist()
        self.content = self.contents[start:end].tolist()
        self.variant = self.variants[start:end].tolist()
        self.size = self.sizes[start:end].tolist()
        uids = self.uids
        self.uid = uids[start:end] if uids is not None else list(range(start, min(end, len(self.sched_s))))

    def clear(self) -> None:
        self.at, self.uid, self.tenant, self.conn = [], [], [], []
        self.content, self.variant, self.size = [], [], []


def connections(s: Schedule) -> np.ndarray:
    """The keep-alive connection of each request: each tenant's requests round robin
    over its connections, in schedule order."""
    tenant = s.tenant
    counts = np.bincount(tenant, minlength=len(s.tenants))
    order = np.argsort(tenant, kind="stable")
    rank = np.empty(len(tenant), dtype=np.int64)
    rank[order] = np.arange(len(tenant)) - np.repeat(np.cumsum(counts) - counts, counts)
    return rank % np.asarray(s.connections, dtype=np.int64)[tenant]
