"""The open-loop driver: every request starts at its scheduled time.

Requests do not wait for earlier ones (open loop), so a slow target faces the
full offered load, as in production. Each tenant's requests are spread round
robin over its keep-alive connections, which is what the layer-4 balancer
sees. The loop is bounded: it ends when every scheduled request has its final
answer, and each request is bounded by its client policy's timeouts.
"""

from __future__ import annotations

import asyncio
import random

from targets.client import Client, ClientPolicy, Transport
from workloads.arrivals import Schedule


class Driver:
    def __init__(self, schedule: Schedule, policy: ClientPolicy, transport: Transport, sink, rng: random.Random) -> None:
        self.schedule = schedule
        self.policy = policy
        self.transport = transport
        self.sink = sink
        self.rng = rng
        self.started = 0
        self.outstanding = 0

    async def run(self, t0: float | None = None) -> None:
        """Drive the whole schedule; returns when every request has finished."""
        loop = asyncio.get_running_loop()
        t0 = loop.time() if t0 is None else t0
        s = self.schedule
        sched = s.sched_s.tolist()
        tenant_idx = s.tenant.tolist()
        content = s.content.tolist()
        variant = s.variant.tolist()
        size = s.size.tolist()
        names = s.tenants
        conns = s.connections
        next_conn = [0] * len(names)
        n = len(sched)
        done = loop.create_future()
        state = {"i": 0}

        def finished() -> None:
            self.outstanding -= 1
            if self.outstanding == 0 and state["i"] >= n and not done.done():
                done.set_result(None)

        client = Client(self.policy, self.transport, self.sink, self.rng, on_finished=finished)
        start = client.start

        def feed() -> None:
            i = state["i"]
            horizon = loop.time() + 1e-9
            while i < n and t0 + sched[i] <= horizon:
                t = tenant_idx[i]
                conn = next_conn[t]
                next_conn[t] = (conn + 1) % conns[t]
                self.outstanding += 1
                start(i, names[t], conn, content[i], variant[i], size[i])
                i += 1
            state["i"] = i
            self.started = i
            if i < n:
                loop.call_at(t0 + sched[i], feed)
            elif self.outstanding == 0 and not done.done():
                done.set_result(None)

        if n == 0:
            return
        loop.call_at(t0 + sched[0], feed)
        await done
