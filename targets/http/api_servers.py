"""The API servers of a live target: N aiohttp apps (targets.http.server) on one event loop, each on its own port.

`ApiServers` binds them (through targets.http.edge's hardened socket), gives
each door the overload guards its target's config asks for (loop lag, request
age) and, behind the L4 proxy, the proxy's own guard and the requests' arrival
times; `stop` closes them all.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from targets.http.edge import serve_socket
from targets.http.limits import LogBudget, check_exposure
from targets.http.metrics import ApiMetrics
from targets.http.overload import AgeGuard, LagGuard, LoopLag, ProxyGuard
from targets.http.server import FrontDoor, create_app

__all__ = ["ApiServers"]


class ApiServers:
    """N aiohttp API servers on one event loop, each on its own port.

    `start` binds each to (host, 0) and returns the ports; `stop` closes
    them, waiting at most `shutdown_s` for requests in flight. A host beyond
    loopback needs `expose=True`. Handlers are cancelled when their client
    disconnects (the attempt is given up, not left to run for nobody).
    """

    def __init__(self, doors: list[FrontDoor], host: str = "127.0.0.1", shutdown_s: float = 1.0,
                 expose: bool = False) -> None:
        check_exposure(host, expose)
        self.doors = doors
        self.host = host
        self.shutdown_s = shutdown_s
        self.ports: list[int] = []
        self.log_budget = LogBudget(per_window=5, window_s=10.0)
        self._runners: list[web.AppRunner] = []
        self._servers: list[asyncio.AbstractServer] = []
        self.lag: LoopLag | None = None

    def _config(self) -> Any:
        """The target's config (None for a bare target in tests): the guards' knobs."""
        return getattr(self.doors[0].target, "config", None) if self.doors else None

    async def start(self) -> list[int]:
        cfg = self._config()
        limit = getattr(cfg, "frontend_lag_limit_s", None)
        share = getattr(cfg, "frontend_age_share", None)
        if limit is not None:  # one loop serves every door: one lag monitor for all
            self.lag = LoopLag()
            self.lag.start()
        for door in self.doors:
            if limit is not None and self.lag is not None and door.overload is None:
                door.overload, door.lag = LagGuard(limit), self.lag
            if share is not None and door.age_guard is None:
                door.age_guard = AgeGuard.for_slo(cfg.slo_s, share)
            door.log_budget = self.log_budget
            runner = web.AppRunner(create_app(door), access_log=None, handle_signals=False,
                                   shutdown_timeout=self.shutdown_s, handler_cancellation=True)
            await runner.setup()
            self._runners.append(runner)

            def on_error(kind: str, m: ApiMetrics = door.metrics) -> None:
                if kind == "client-dropped":
                    m.drops.inc()
                else:
                    m.bad.labels(kind).inc()

            server, port = await serve_socket(runner, self.host, door.limits, on_error, self.log_budget)
            self._servers.append(server)
            self.ports.append(port)
        return self.ports

    def behind(self, proxy: Any) -> None:
        """Read each request's arrival from ``proxy`` (a targets.http.l4proxy.L4Proxy on this loop,
        in front of these servers) for the age guard, and give the proxy its own guard
        (TargetConfig.frontend_proxy_share)."""
        for door in self.doors:
            door.arrival = proxy.request_started_s
        cfg = self._config()
        share = getattr(cfg, "frontend_proxy_share", None)
        if share is not None and proxy.guard is None:
            proxy.guard = ProxyGuard.for_slo(cfg.slo_s, share)
        if proxy.guard is not None:
            for door in self.doors:
                door.to_gpu = proxy.to_gpu

    async def stop(self) -> None:
        if self.lag is not None:
            self.lag.stop()
        servers, self._servers = self._servers, []
        for s in servers:
            s.close()
        runners, self._runners = self._runners, []
        await asyncio.gather(*(r.cleanup() for r in runners), return_exceptions=True)
