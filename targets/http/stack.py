"""A served target without torch, for security tests and abuse benchmarks on loopback.

`start_stack` builds what `harness serve` builds (a ServingTarget, its API
servers, the L4 proxy in front, metrics watching both) but with a modeled GPU
whose output is the digest of each input (`DigestExecutor`), so a caller can
check that the answer it got was computed for its own input, and a light
input validator (a list of numbers). Run it as a process for benchmarks:
``python -m targets.http.stack --target hardened --limits '{"header_timeout_s": 10}'``
prints one JSON line (``{"port", "api_ports", "pid"}``) and serves until
SIGTERM or end of stdin.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import random
import signal
import sys
from dataclasses import dataclass
from typing import Any, Callable

from targets.config import CacheMode, Routing, TargetConfig
from targets.dedupe import input_digest
from targets.executors import ModeledExecutor, cost_function
from targets.http.l4proxy import L4Proxy
from targets.http.limits import EdgeLimits
from targets.protocol import Attempt
from targets.http.api_servers import ApiServers
from targets.http.server import ApiMetrics, FrontDoor
from targets.accounting import live_computed_bound
from targets.target import ServingTarget


class DigestExecutor(ModeledExecutor):
    """A modeled GPU (sleeps the cost model's time) answering each input with its digest."""

    async def run_batch(self, batch: list[Attempt]) -> list[dict[str, Any]]:
        await asyncio.sleep(self.expected_s(batch))
        return [{"digest": input_digest(a.payload).hex()} for a in batch]


def numbers(max_len: int = 1024) -> Callable[[Any], None]:
    """A validator: a list of 1..max_len finite numbers."""

    def validate(x: Any) -> None:
        if not isinstance(x, list) or not 1 <= len(x) <= max_len:
            raise ValueError(f"expected a list of 1..{max_len} numbers")
        for v in x:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise ValueError("expected finite numbers only")

    return validate


@dataclass
class Stack:
    target: ServingTarget
    metrics: ApiMetrics
    servers: ApiServers
    proxy: L4Proxy
    port: int
    api_ports: list[int]

    async def stop(self) -> None:
        await self.proxy.stop()
        await self.servers.stop()
        self.target.pool.cancel_all()


async def start_stack(config: TargetConfig, limits: EdgeLimits | None = None, token: str | None = None,
                      tenants: frozenset[str] | None = None, max_body_bytes: int = 64 * 1024,
                      hold_s: float = 30.0, guard: bool = False) -> Stack:
    """Start a served target on 127.0.0.1 (proxy on a free port). `guard`: wire the servers behind
    the proxy as `harness serve` does (each request's arrival; the proxy's own guard when the
    config sets frontend_proxy_share)."""
    limits = limits or EdgeLimits()
    executor = DigestExecutor(cost_function(config))
    target = ServingTarget(config, random.Random(0), executor_for=lambda i: executor,
                           computed_bound=live_computed_bound(config))
    metrics = ApiMetrics(target, tenants)
    l4 = config.routing is Routing.L4_ROUND_ROBIN
    cache_keys = None if config.cache is CacheMode.OFF else "exact" if config.cache is CacheMode.EXACT else "normalized"
    doors = [FrontDoor(target, i if l4 else None, numbers(), lambda x: config.reference_length, metrics, tenants,
                       max_body_bytes, hold_s, cache_keys, limits=limits, token=token)
             for i in range(config.api_servers)]
    servers = ApiServers(doors)
    ports = await servers.start()
    proxy = L4Proxy([("127.0.0.1", p) for p in ports], limits=limits)
    metrics.watch_proxy(proxy)
    if guard:
        servers.behind(proxy)
    port = await proxy.start()
    return Stack(target, metrics, servers, proxy, port, ports)


async def _main(args: argparse.Namespace) -> None:
    from targets.spec import resolve_target

    cfg = resolve_target(args.target, json.loads(args.set))
    stack = await start_stack(cfg, EdgeLimits(**json.loads(args.limits)), args.token, guard=args.guard)
    print(json.dumps({"port": stack.port, "api_ports": stack.api_ports, "pid": os.getpid(),
                      "limits": dataclasses.asdict(stack.proxy.limits)}), flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    eof = loop.create_task(reader.read())
    eof.add_done_callback(lambda _: stop.set())
    await stop.wait()
    await stack.stop()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="A torch-free served target on loopback (tests, benchmarks).")
    p.add_argument("--target", default="hardened")
    p.add_argument("--set", default='{"api_servers": 2, "gpus": 2, "batch_time_s": 0.005}',
                   help="knob overrides as a JSON object")
    p.add_argument("--limits", default="{}", help="EdgeLimits fields as a JSON object")
    p.add_argument("--token", default=None)
    p.add_argument("--guard", action="store_true", help="the proxy's guard and arrival stamps, as `harness serve`")
    args = p.parse_args(argv)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the soft limit up to the hard one
    asyncio.run(_main(args))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
