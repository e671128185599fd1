"""The API servers' CPU in a modeled target: a FIFO queue for CPU in front of the policies.

Live API servers have finite CPU: past some rate their event loop falls behind
and requests queue before any policy sees them (admission control predicts GPU
queueing only). A sim target whose GPUs are modeled models that front end too
(`FrontendCpu.for_config`; real servers, live, pay their real CPU):

- ``cost_s`` (TargetConfig.frontend_cost_s): the seconds of front-end time one
  request holds a CPU, the proxy's relaying, HTTP, JSON and the policies
  included. For a live host, `harness profile frontend` measures it as the
  loop's wall-clock occupancy per request near saturation: its CPU time plus the time it was runnable but waiting for a core
  (the driver, the GPU threads and anything else on the machine take turns
  on the same cores), which on a shared 2-core machine (load 8-11) was two
  to four times the CPU time alone.
- ``cores`` (frontend_cores): None gives each API server its own CPU (a fleet
  of machines); k makes every server share k CPUs, taken in arrival order (a
  live host runs its proxy and all its servers on one event loop: 1).
- ``shed_cost_s`` (frontend_shed_cost_s): the CPU time of a refusal, answered
  before the body is read.
- ``proxy_shed_cost_s`` (frontend_proxy_shed_cost_s): the time of a refusal the
  L4 proxy answers itself (`harness profile frontend` measures it with
  frontend_proxy_share = 0), a small fraction of a handler's.

A request is refused by the proxy at its cost while the front end's
``PROXY_QUORUM``-th oldest admitted request still in it has waited
``proxy_limit_s`` or more: the live proxy's guard (frontend_proxy_share of the
SLO, targets.http.overload.ProxyGuard) judges that very signal. It is an age,
so it lags the queue behind it: while it is under the limit, arrivals keep
being admitted and the requests at the back wait longer than the limit (about
the overload times it). (The first model refused on the wait a request
arriving then would see; on live spikes both predict 12-13 points more shed
than live measures: past its knee the live loop serves more per second than
its profile near saturation says.) Else one whose wait is over ``limit_s`` is
refused at the handler's shed cost: the live servers' age guard
(frontend_age_share of the SLO, since a request's age at its handler is this
wait) or lag guard (frontend_lag_limit_s), whichever is tighter. Either way the
refusal takes its turn on the CPU: the live proxy runs on the servers' loop.
``FrontendCpu.admit`` is the pure rule.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

from targets.config import TargetConfig

__all__ = ["Admitted", "FrontendCpu", "PROXY_QUORUM"]

PROXY_QUORUM = 3  # as targets.http.overload.ProxyGuard.quorum (a test holds them equal)


@dataclass(frozen=True)
class Admitted:
    """When the handler (or the proxy's refusal) is done (loop seconds), whether it shed, the wait it
    saw (s), and whether the proxy refused it."""

    done_s: float
    shed: bool
    wait_s: float
    by_proxy: bool = False


class FrontendCpu:
    """``servers`` API servers on their own CPU each, or sharing ``cores`` CPUs; ``cost_s`` CPU seconds
    a request, ``shed_cost_s`` a refusal; a request that would wait over ``limit_s`` is refused, one
    that would wait over ``proxy_limit_s`` (when set) at ``proxy_shed_cost_s``."""

    def __init__(self, servers: int, cost_s: float, shed_cost_s: float = 0.0, limit_s: float | None = None,
                 cores: int | None = None, proxy_limit_s: float | None = None,
                 proxy_shed_cost_s: float = 0.0) -> None:
        if servers < 1 or cost_s < 0 or shed_cost_s < 0 or proxy_shed_cost_s < 0 \
                or (cores is not None and cores < 1):
            raise ValueError("servers and cores must be >= 1 and costs >= 0")
        self.cost_s, self.shed_cost_s, self.limit_s = cost_s, shed_cost_s, limit_s
        self.proxy_limit_s, self.proxy_shed_cost_s = proxy_limit_s, proxy_shed_cost_s
        self.shared = cores is not None
        self._inside: deque[tuple[float, float]] = deque()  # admitted, in arrival order: (arrival, done)
        self.free_at = [0.0] * (cores if cores is not None else servers)  # a heap when shared

    @classmethod
    def for_config(cls, config: TargetConfig, servers: int) -> "FrontendCpu | None":
        """The front end a TargetConfig's front-end knobs ask for (None when frontend_cost_s is 0: free);
        its shares are of the design's slo_s."""
        if config.frontend_cost_s <= 0:
            return None
        limits = [x for x in (config.frontend_lag_limit_s,
                              None if config.frontend_age_share is None else config.frontend_age_share * config.slo_s)
                  if x is not None]
        proxy = config.frontend_proxy_share
        return cls(servers, config.frontend_cost_s, config.frontend_shed_cost_s, min(limits, default=None),
                   config.frontend_cores, None if proxy is None else proxy * config.slo_s,
                   config.frontend_proxy_shed_cost_s)

    def admit(self, server: int, now_s: float) -> Admitted:
        """Queue one request from ``server`` at ``now_s``."""
        free = heapq.heappop(self.free_at) if self.shared else self.free_at[server]
        start = max(now_s, free)
        wait = start - now_s
        by_proxy = self.proxy_limit_s is not None and self.proxy_signal(now_s) >= self.proxy_limit_s
        shed = by_proxy or (self.limit_s is not None and wait > self.limit_s)
        done = start + (self.proxy_shed_cost_s if by_proxy else self.shed_cost_s if shed else self.cost_s)
        if self.shared:
            heapq.heappush(self.free_at, done)
        else:
            self.free_at[server] = done
        if not shed and self.proxy_limit_s is not None:
            self._inside.append((now_s, done))
        return Admitted(done, shed, wait, by_proxy)

    def proxy_signal(self, now_s: float) -> float:
        """What the live proxy's guard reads at ``now_s``: how long the ``PROXY_QUORUM``-th oldest
        admitted request still in the front end has waited (0 when fewer are in it). Exact for one
        shared CPU (the live host: its front end finishes requests in arrival order)."""
        inside = self._inside
        while inside and inside[0][1] <= now_s:
            inside.popleft()
        return now_s - inside[PROXY_QUORUM - 1][0] if len(inside) >= PROXY_QUORUM else 0.0
