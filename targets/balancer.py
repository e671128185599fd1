"""Load balancers: which API server gets a request.

The doc's layer-4 balancer assigns *connections*, round robin, when they open;
every request on a keep-alive connection then goes to the same server, however
busy it is. Layer-7 policies choose per request from the servers' loads.
Policies are pure: loads and randomness are passed in.
"""

from __future__ import annotations

import random

from targets.config import Routing


class Balancer:
    """Chooses an API server per request from the servers' outstanding loads (the layer-4
    round robin ignores them). A base class rather than a Protocol: compiled (targets.native),
    the target's call of `route`, per request, is then a native call."""

    def route(self, tenant: str, conn: int, loads: list[int]) -> int:
        raise NotImplementedError


class L4RoundRobin(Balancer):
    """Connection -> server, assigned round robin at first use, then sticky."""

    def __init__(self, servers: int) -> None:
        self.servers = servers
        self._next = 0
        # Per tenant, its connections' servers by connection number (-1: not opened yet):
        # a request costs a lookup by the tenant's name and a list read, no key tuple.
        self._assigned: dict[str, list[int]] = {}

    def route(self, tenant: str, conn: int, loads: list[int] | None = None) -> int:
        servers = self._assigned.get(tenant)
        if servers is None:
            servers = self._assigned[tenant] = []
        if conn < 0 or conn >= len(servers):
            if conn < 0:
                raise ValueError(f"connection number {conn} < 0")
            servers.extend([-1] * (conn + 1 - len(servers)))
        server = servers[conn]
        if server < 0:
            server = servers[conn] = self._next
            self._next = (self._next + 1) % self.servers
        return server

    def connections_per_server(self) -> list[int]:
        out = [0] * self.servers
        for servers in self._assigned.values():
            for s in servers:
                if s >= 0:
                    out[s] += 1
        return out


class LeastLoaded(Balancer):
    """Per request: the server with the least outstanding work; ties rotate."""

    needs_loads = True

    def __init__(self, servers: int) -> None:
        self.servers = servers
        self._tie = 0

    def route(self, tenant: str, conn: int, loads: list[int]) -> int:
        # The first least-loaded server from `start` on, wrapping round.
        start = self._tie
        n = self.servers
        self._tie = (start + 1) % n
        if len(loads) == n:
            # One pass in that order (compiled: a native loop over unboxed ints, as a
            # simulation routes every request); the first strictly smaller load wins.
            best, least = start, loads[start]
            for j in range(start + 1, n):
                if loads[j] < least:
                    best, least = j, loads[j]
            for j in range(start):
                if loads[j] < least:
                    best, least = j, loads[j]
            return best
        least = min(loads)
        best = loads.index(least)
        if best < start and least in loads[start:]:
            return loads.index(least, start)
        return best


class PowerOfTwo(Balancer):
    """Per request: the less loaded of two servers drawn at random."""

    needs_loads = True

    def __init__(self, servers: int, rng: random.Random) -> None:
        self.servers = servers
        self.rng = rng

    def route(self, tenant: str, conn: int, loads: list[int]) -> int:
        if self.servers == 1:
            return 0
        a, b = self.rng.sample(range(self.servers), 2)
        return a if loads[a] <= loads[b] else b


def create_balancer(kind: Routing, servers: int, rng: random.Random) -> Balancer:
    if kind is Routing.L4_ROUND_ROBIN:
        return L4RoundRobin(servers)
    if kind is Routing.LEAST_LOADED:
        return LeastLoaded(servers)
    if kind is Routing.POWER_OF_TWO:
        return PowerOfTwo(servers, rng)
    raise ValueError(f"unknown routing '{kind}': valid are {', '.join(r.value for r in Routing)}")
