"""The host of a live target: proxy, API servers and GPU workers on one event loop.

A `TargetHost` builds one ServingTarget (the same policy code as sim) whose
GPU pool runs real torch models (targets.gpu.worker), puts N aiohttp API
servers in front of it (targets.http.server) and a balancer in front of those:
the project's layer-4 round-robin proxy (targets.http.l4proxy, `balancer`
"python") or HAProxy in a child process of the host (targets.http.haproxy,
"haproxy": started after the API servers, stopped with the host, and told by
Linux to stop if the host dies). `harness serve` runs one in the foreground;
live runs run one in a child process (`python -m harness.live.host`) that the
driver's process controls over a pipe:

- the first line on stdin is the HostSpec as JSON; the child warms its models
  and HTTP path (harness.live.host_warmup), then answers one JSON line on
  stdout: `{"ready": true, "proxy_port", "api_ports", ..., "warmup"}` (what it
  warmed and how long that took) or `{"error"}`;
- then one JSON request per line (`{"op": "sample" | "stats" | "kill" |
  "revive" | "slowdown" | "canary" | "stop", "id": N, ...}`), one JSON answer
  per line, in order, carrying the request's id (`canary`: a rollout's weight,
  harness.live.canary_host);
- end of stdin (the parent died or closed it), SIGTERM or "stop" shut it down.

`harness.live.host_process.HostProcess` is the parent's handle on such a child. The child ignores
SIGINT (a terminal's Ctrl-C goes to the parent, which stops it) and asks Linux
to SIGTERM it if the parent dies, so no host outlives its run.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from harness.live.host_warmup import warm_http, warm_models
from targets.config import Batching, CacheMode, CostModel, Routing, TargetConfig

WARM_REQUESTS_PER_SERVER = 4
WARM_REQUESTS_MAX = 1024
WARM_CONTENT = 1 << 30
# The host's garbage collector: young collections every 50,000 allocations (CPython: 700), the
# older generations 50 and 1,000 times rarer. With the defaults the front end's loop stopped for
# a gen-1 collection (5-8 ms) about 3 times a second and a full one every 2.5-5 s, growing with
# the heap from 29 to 160 ms over a 40 s spike run: each trips the proxy's guard (a twentieth of
# the SLO, 15 ms) and refuses a second's worth of requests at base load (spike at --scale 0.2:
# 233-605 shed in windows after the spike, recovery 3-5 s). With these: 7 pauses over 2 ms in
# the run, recovery 1 s, goodput 77% against 66-70% (the models and app are frozen first, so a
# full collection scans only the requests' objects). Instagram's servers do the same.
GC_THRESHOLDS = (50_000, 50, 1000)


@dataclass(frozen=True)
class HostSpec:
    """Everything a host needs, as plain JSON-able data.

    `pad_to_s`: hold each batch to this many seconds; None holds it to the
    cost model's time when that model is constant (the doc's 100 ms at the
    reference length), 0 turns padding off. `proxy_port` 0 picks a free port.
    """

    config: dict[str, Any]
    model: str = "mlp"
    device: str = "auto"
    pad_to_s: float | None = None
    proxy_host: str = "127.0.0.1"
    proxy_port: int = 0
    tenants: list[str] | None = None
    seed: int = 0
    threads: int = 1
    max_body_bytes: int = 256 * 1024
    expose: bool = False                   # the proxy may bind beyond loopback (targets.http.limits.check_exposure)
    token: str | None = None               # bearer token /predict and /metrics require, if set
    limits: dict[str, Any] | None = None   # targets.http.limits.EdgeLimits fields; None: its defaults
    canary: dict[str, Any] | None = None   # harness.live.canary_host.LiveCanarySpec fields: a second version
    balancer: str = "python"               # targets.http.haproxy.Balancer: the project's proxy or HAProxy
    # GPU workers are threads beside the API servers' event loop: with Python's
    # default 5 ms GIL switch interval a busy loop delays each of a batch's many
    # GIL re-acquisitions by up to 5 ms, stretching a padded 100 ms batch.
    switch_interval_s: float = 0.0005

    def effective_pad_s(self, cfg: TargetConfig) -> float | None:
        if self.pad_to_s is not None:
            return self.pad_to_s or None
        return cfg.batch_time_s if cfg.cost_model is CostModel.CONSTANT else None


@dataclass
class TargetHost:
    spec: HostSpec
    ports: list[int] = field(default_factory=list)
    proxy_port: int = 0

    async def start(self) -> dict[str, Any]:
        """Build and start everything; returns the ready message."""
        from targets.executors import cost_function
        from targets.http.l4proxy import L4Proxy
        from targets.http.haproxy import Balancer, HaproxyPolicy
        from targets.http.haproxy_proc import HaproxyBalancer
        from targets.http.limits import EdgeLimits
        from targets.http.api_servers import ApiServers
        from targets.http.server import ApiMetrics, FrontDoor
        from targets.accounting import live_computed_bound
        from targets.target import ServingTarget
        from targets.gpu.worker import torch_gpus

        spec = self.spec
        sys.setswitchinterval(spec.switch_interval_s)
        cfg = self.config = TargetConfig.model_validate(spec.config)
        cost = cost_function(cfg)
        # Unless told a fixed pad, hold each batch to the cost model's time (with
        # the constant model: the doc's 100 ms, longer for inputs past the reference).
        fixed = spec.pad_to_s is not None
        self.gpus = torch_gpus(cfg.fleet_gpus, spec.model, cost, spec.device, spec.pad_to_s if fixed else None,
                               spec.threads, spec.seed, pad_to_cost=not fixed and spec.effective_pad_s(cfg) is not None)
        warmed = await warm_models(self.gpus, cfg.batch_size)
        self.target = ServingTarget(cfg, random.Random(spec.seed), executor_for=lambda i: self.gpus[i],
                                    computed_bound=live_computed_bound(cfg))
        for gpu, worker in zip(self.gpus, self.target.pool.workers):
            gpu.dispatched_s = lambda w=worker: w.started_s  # hold batches from the pool's own start
        if spec.canary is not None:
            from harness.live.canary_host import LiveCanary

            self.canary = await LiveCanary.attach(self, spec.canary)
        handle = self.gpus[0].executor.model
        ref = cfg.reference_length
        size_of = (lambda x: len(x)) if handle.variable_length else (lambda x: ref)
        tenants = frozenset(spec.tenants) if spec.tenants else None
        metrics = ApiMetrics(self.target, tenants)
        l4 = cfg.routing is Routing.L4_ROUND_ROBIN
        limits = EdgeLimits(**(spec.limits or {}))
        doors = [FrontDoor(self.target, i if l4 else None, handle.validate, size_of, metrics, tenants,
                           spec.max_body_bytes, cache_keys=None if cfg.cache is CacheMode.OFF
                           else "exact" if cfg.cache is CacheMode.EXACT else "normalized",
                           limits=limits, token=spec.token)
                 for i in range(cfg.api_servers)]
        self.servers = ApiServers(doors)
        self.ports = await self.servers.start()
        backends = [("127.0.0.1", p) for p in self.ports]
        if Balancer.parse(spec.balancer) is Balancer.HAPROXY:
            # On this thread: Linux signals HAProxy when the thread that started it ends.
            self.haproxy = HaproxyBalancer(HaproxyPolicy.for_target(cfg, limits), backends, spec.proxy_host,
                                           spec.proxy_port, expose=spec.expose, name=cfg.name)
            self.proxy_port = self.haproxy.start()
            metrics.watch_balancer(self.haproxy)
        else:
            self.proxy = L4Proxy(backends, spec.proxy_host, spec.proxy_port, limits=limits, expose=spec.expose)
            metrics.watch_proxy(self.proxy)
            self.servers.behind(self.proxy)  # each request's age at its handler (targets.http.overload.AgeGuard)
            self.proxy_port = await self.proxy.start()
        warmed.update(await warm_http(self.proxy_port, self._warm_bodies(cfg), spec.token))
        warmed["total_s"] = warmed["model_s"] + warmed["http_s"]
        return {"ready": True, "proxy_port": self.proxy_port, "api_ports": self.ports, "gpus": len(self.gpus),
                "device": str(self.gpus[0].executor.device), "model": spec.model,
                "pad_to_s": spec.effective_pad_s(cfg), "pid": os.getpid(), "warmup": warmed,
                "balancer": self.balancer_stats()}

    def _warm_bodies(self, cfg: TargetConfig) -> list[bytes]:
        """A handful of requests per API server; a full batch per server where only full
        batches dispatch. Content ids far above the workloads' (no cache entry they could hit)."""
        from harness.live.payloads import Payloads

        per_server = cfg.batch_size if cfg.batching is Batching.FULL else WARM_REQUESTS_PER_SERVER
        n = min(WARM_REQUESTS_MAX, per_server * cfg.api_servers)
        payloads = Payloads(self.spec.model, seed=self.spec.seed)
        tenant = self.spec.tenants[0] if self.spec.tenants else "warmup"
        return [payloads.body(tenant, WARM_CONTENT + i, cfg.reference_length, f"warmup-host-{i}", None)
                for i in range(n)]

    def sample(self) -> dict[str, Any]:
        pool = self.target.pool
        return {"queue_depth": self.target.queue_depth(), "busy_gpu_s": pool.busy_gpu_seconds(),
                "alive": pool.alive_gpus()}

    def stats(self) -> dict[str, Any]:
        """Everything the result document needs from the target side: the target's
        snapshot (`TargetSnapshot.to_dict()`, on this process's clock) and the host's own parts."""
        ex = [g.executor for g in self.gpus]
        return {
            "snapshot": self.target.snapshot().to_dict(),
            "proxy": self._proxy_figures(),
            "balancer": self.balancer_stats(),
            # compute_s: time in the worker threads (collate, forward, copy back), pads excluded.
            "executors": {"batches": sum(e.batches_run for e in ex), "overruns": sum(g.overruns for g in self.gpus),
                          "compute_s": sum(e.busy_s for e in ex)},
        }

    def _proxy_figures(self) -> dict[str, Any] | None:
        if not hasattr(self, "proxy"):
            return None
        s = self.proxy.stats
        return {"accepted": s.accepted, "failed": s.failed, "per_api_server": s.per_backend}

    def balancer_stats(self) -> dict[str, Any]:
        """The result's `live.balancer`: which balancer ran and its figures (HAProxy's from its stats
        socket, targets.http.haproxy_proc.stat_figures; the project's proxy's own counters)."""
        if hasattr(self, "haproxy"):
            return self.haproxy.stats()
        if not hasattr(self, "proxy"):
            return {"kind": "python"}
        s = self.proxy.stats
        return {"kind": "python", "connections": s.accepted, "own_5xx": s.refused_overload,
                "per_api_server": list(s.per_backend)}

    def command(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "sample":
            return self.sample()
        if op == "stats":
            return self.stats()
        if op == "kill":
            return {"gpus": self.target.kill_gpus(float(msg["fraction"]))}
        if op == "revive":
            self.target.revive_gpus(msg.get("gpus"))
            return {"alive": self.target.pool.alive_gpus()}
        if op == "canary" and hasattr(self, "canary"):
            return self.canary.command(msg)
        if op == "slowdown":
            self.target.set_slowdown(float(msg["factor"]))
            return {"factor": float(msg["factor"])}
        return {"error": f"unknown op {op!r}"}

    async def stop(self) -> None:
        if hasattr(self, "haproxy"):  # first: no new connection reaches the servers as they close
            self.haproxy.stop()
        for part in ("proxy", "servers"):
            if hasattr(self, part):
                await getattr(self, part).stop()
        if hasattr(self, "target"):
            self.target.pool.cancel_all()
        if hasattr(self, "canary"):
            self.canary.close()
        for g in getattr(self, "gpus", []):
            g.close()


# -- the child process ---------------------------------------------------------------------------

def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent dies (no orphaned hosts)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _read_line(fd: int) -> bytes:
    """One line from `fd`, unbuffered (so nothing after it is swallowed)."""
    out = bytearray()
    while True:
        ch = os.read(fd, 1)
        if not ch or ch == b"\n":
            return bytes(out)
        out += ch


async def _child(spec: HostSpec, ctl: int) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    def reply(obj: dict[str, Any]) -> None:
        os.write(ctl, (json.dumps(obj) + "\n").encode())

    host = TargetHost(spec)
    try:
        ready = await host.start()
        gc.collect()
        gc.freeze()  # the models and the app stay: keep full collections from scanning them
        gc.set_threshold(*GC_THRESHOLDS)
        reply(ready)
    except Exception as exc:  # noqa: BLE001 - tell the parent why, then exit
        reply({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        await host.stop()
        return
    reader = asyncio.StreamReader()
    stdin = open(0, "rb", buffering=0, closefd=False)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)

    async def serve() -> None:
        while True:
            line = await reader.readline()
            if not line:
                break
            msg = json.loads(line)
            if msg.get("op") == "stop":
                reply({"stopping": True, "id": msg.get("id")})
                break
            try:
                answer = host.command(msg)
            except Exception as exc:  # noqa: BLE001 - a bad command must not kill the host
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            reply({**answer, "id": msg.get("id")})
        stop.set()

    task = loop.create_task(serve())
    await stop.wait()
    task.cancel()
    await host.stop()


def main() -> None:
    ctl = os.dup(1)
    os.dup2(2, 1)  # stray prints go to stderr; fd `ctl` carries only replies
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    spec = HostSpec(**json.loads(_read_line(0)))
    from harness.live.driver_loop import new_loop
    from harness.live.fd_limit import raise_fd_limit

    raise_fd_limit()

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(_child(spec, ctl))


if __name__ == "__main__":  # pragma: no cover
    main()
    sys.exit(0)
