"""A live fleet of tiny-decoder replicas behind a router on 127.0.0.1: `harness serve llm-fleet:...`.

`parse_live_fleet("llm-fleet:router=prefix,replicas=3")` reads the sim fleet's spec
(`targets.llm.fleet`, engine knobs over `LIVE_ENGINE`, prefix caching on) plus the
live-only router forms of a router that ships (`harness.live.llm_fleet_external`), as HAProxy stands
beside the project's layer-4 proxy: `router=sglang:POLICY` (sglang-router, `pip install
'inference-harness[sglang]'`) and `router=vllm:POLICY` (vllm-router, `[vllm]`), each with
the policies it has that serve these replicas.

`start_fleet(live, host, port)` starts `replicas` processes of `harness serve
llm-continuous` (each on its own free loopback port, torch on one thread, the fleet's
engine knobs as `--set`), waits until each answers `GET /health`, then the front:
the project's router (`targets.http.llm_router`, in this process, asking the same
policy object the sim asks) or the shipped router's process, whose readiness is its
first completion answered. `fleet.figures()` reads every replica's
`/get_server_info` (prefix hit rate by tokens, tokens saved, evictions) and, for
the project's router, its own cost (`/router_stats`). `await fleet.switch_front(other)`
puts another fleet's front before the same replicas, their prefix caches flushed first
(`POST /flush_cache`; `fleet.flush_caches()` alone), when it has the same replicas and engine
(`fleet.serves(other)`).
`await fleet.close()` stops
the front, then the replicas (SIGTERM, then SIGKILL after 5 s). Every process binds
127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any

import aiohttp
from aiohttp import web

from harness.live.llm_fleet_external import (EXTERNAL_ROUTERS, START_TIMEOUT_S, free_port, start_external_front,
                                             until_ok)
from harness.live.llm_profile import LIVE_ENGINE
from harness.live.llm_serve import MAX_LEN, MODEL_NAME
from targets.llm import LlmEngineSpec
from targets.llm.fleet import FleetSpec, parse_fleet

__all__ = ["LiveFleet", "RunningFleet", "parse_live_fleet", "start_fleet"]

_SERVING = re.compile(r"at http://127\.0\.0\.1:(\d+)/v1/completions")


@dataclass(frozen=True)
class LiveFleet:
    fleet: FleetSpec
    external: str | None = None           # an EXTERNAL_ROUTERS name; None: the project's router (fleet.router)
    external_policy: str | None = None    # that router's --policy
    label: str = ""

    @property
    def router_name(self) -> str:
        return f"{self.external}:{self.external_policy}" if self.external else self.fleet.router


def parse_live_fleet(text: str) -> LiveFleet:
    """A live fleet spec; ValueError naming the bad key or value (and the valid policies of a shipped router)."""
    external = policy = None
    parts = []
    for pair in text.partition(":")[2].split(","):
        key, _, raw = pair.partition("=")
        name, colon, rest = raw.partition(":")
        if key == "router" and colon and name in EXTERNAL_ROUTERS:
            ext = EXTERNAL_ROUTERS[name]
            if rest not in ext.policies:
                raise ValueError(f"llm-fleet router: {name} policy '{rest}' is not one of {', '.join(ext.policies)}")
            external, policy = name, rest
            continue
        if key == "router" and colon:
            raise ValueError(f"llm-fleet router: '{raw}': a shipped router is one of "
                             f"{', '.join(n + ':POLICY' for n in EXTERNAL_ROUTERS)}")
        if pair:
            parts.append(pair)
    head = "llm-fleet" + (":" + ",".join(parts) if parts else "")
    fleet = parse_fleet(head, base=replace(LIVE_ENGINE, prefix_caching=True))
    if fleet.replicas > 8:
        raise ValueError(f"llm-fleet replicas: a live fleet runs each replica as a process here, at most 8 "
                         f"(got {fleet.replicas}; the sim takes dozens)")
    return LiveFleet(fleet, external, policy, text)


def _engine_args(engine: LlmEngineSpec) -> list[str]:
    """`--set` pairs for every engine knob that differs from LIVE_ENGINE's (cost knobs are the sim's)."""
    args = []
    for f in fields(LlmEngineSpec):
        if f.name in ("policy", "cost"):
            continue
        value = getattr(engine, f.name)
        if value != getattr(LIVE_ENGINE, f.name):
            if f.name == "tenant_priority":
                text = ",".join(f"{n}:{c}" for n, c in value)
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            args += ["--set", f"{f.name}={text}"]
    return args


@dataclass
class RunningFleet:
    live: LiveFleet
    url: str                                   # the front's /v1/completions
    replica_urls: list[str]                    # base URLs
    procs: list[subprocess.Popen] = field(default_factory=list)
    front_proc: subprocess.Popen | None = None
    runner: web.AppRunner | None = None
    started_s: float = 0.0

    async def figures(self) -> dict[str, Any]:
        """Each replica's prefix figures (their sum: hit rate by tokens), its engine's busy seconds and
        steps (`busy_s`, `steps`: one per replica) and the project's router's cost."""
        out: dict[str, Any] = {"router": self.live.router_name, "replicas": []}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            for base in self.replica_urls:
                async with http.get(base + "/get_server_info") as resp:
                    info = await resp.json()
                out["replicas"].append(info["prefix_cache"])
                out.setdefault("busy_s", []).append(float(info.get("busy_s", 0.0)))
                out.setdefault("steps", []).append(int(info.get("steps", 0)))
            if self.runner is not None:
                async with http.get(self.url.rsplit("/v1/", 1)[0] + "/router_stats") as resp:
                    out["router_cost"] = await resp.json()
        reps = [r for r in out["replicas"] if r]
        hit, prompt = sum(r["hit_tokens"] for r in reps), sum(r["prompt_tokens"] for r in reps)
        out.update(hit_tokens=hit, prompt_tokens=prompt, hit_rate=hit / prompt if prompt else None,
                   evictions=sum(r["evictions"] for r in reps), lookups=[r["lookups"] for r in reps])
        return out

    async def replica_times(self) -> list[dict[str, dict[str, float]]]:
        """Each replica's `/request_times`, one dict per replica (ids repeat when fleets share replicas)."""
        out = []
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            for base in self.replica_urls:
                async with http.get(base + "/request_times") as resp:
                    out.append(dict(await resp.json()))
        return out

    async def request_times(self) -> dict[str, dict[str, float]]:
        """Every replica's `/request_times`, merged (request ids are the driver's, unique over the fleet)."""
        merged: dict[str, dict[str, float]] = {}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            for base in self.replica_urls:
                async with http.get(base + "/request_times") as resp:
                    merged.update(await resp.json())
        return merged

    async def step_logs(self, since: list[int]) -> list[list[tuple[int, int, int, float, float]]]:
        """Every replica's `/step_log` from its step `since[r]` on (prefill, decode rows, context, wall s,
        idle s before it)."""
        logs = []
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            for base, n in zip(self.replica_urls, since):
                async with http.get(base + "/step_log", params={"since": str(n)}) as resp:
                    logs.append([tuple(row) for row in await resp.json()])
        return logs

    def serves(self, live: LiveFleet) -> bool:
        """These replicas can serve `live` too (the same number, the same engine): `switch_front` to it."""
        return live.fleet.replicas == len(self.replica_urls) and live.fleet.engine == self.live.fleet.engine

    async def switch_front(self, live: LiveFleet, port: int = 0, token: str | None = None) -> None:
        """Stop the front, flush every replica's prefix cache (each waits until idle, `POST /flush_cache`),
        start `live`'s front: the next fleet's day starts as cold as on fresh replicas. RuntimeError when
        a replica stays busy or the front does not come up within START_TIMEOUT_S."""
        if not self.serves(live):
            raise ValueError(f"{live.label or live.router_name}: not the replicas' shape (replicas, engine)")
        await self._stop_front()
        deadline = time.monotonic() + START_TIMEOUT_S
        async with aiohttp.ClientSession() as http:
            await self._flush(http, deadline)
            self.live = live
            if live.external is None:
                await _start_ours(self, port)
            else:
                await _start_external(self, port, http, deadline, token)

    async def flush_caches(self) -> None:
        """Flush every replica's prefix cache (each once idle); RuntimeError when one stays busy START_TIMEOUT_S."""
        async with aiohttp.ClientSession() as http:
            await self._flush(http, time.monotonic() + START_TIMEOUT_S)

    async def _flush(self, http: aiohttp.ClientSession, deadline: float) -> None:
        for base in self.replica_urls:
            await until_ok(http, "POST", base + "/flush_cache", deadline)

    async def _stop_front(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        if self.front_proc is not None:
            if self.front_proc.poll() is None:
                os.killpg(self.front_proc.pid, signal.SIGTERM)
                try:
                    self.front_proc.wait(5.0)
                except subprocess.TimeoutExpired:
                    os.killpg(self.front_proc.pid, signal.SIGKILL)
                    self.front_proc.wait()
            self.front_proc = None

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        for p in ([self.front_proc] if self.front_proc else []) + self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5.0
        for p in ([self.front_proc] if self.front_proc else []) + self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


async def _read_port(proc: subprocess.Popen, deadline: float) -> int:
    """The port a `harness serve llm-continuous --port 0` child prints it serves on."""
    loop = asyncio.get_running_loop()
    assert proc.stdout is not None
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = await asyncio.wait_for(loop.run_in_executor(None, proc.stdout.readline),
                                      max(0.1, deadline - time.monotonic()))
        if not line:
            break
        seen.append(line.decode(errors="replace").rstrip())
        m = _SERVING.search(seen[-1])
        if m:
            return int(m.group(1))
    raise RuntimeError(f"a replica did not start: {' | '.join(seen[-3:]) or 'no output'}")


async def start_fleet(live: LiveFleet, port: int = 0, token: str | None = None) -> RunningFleet:
    """Start the replicas and the front on 127.0.0.1 (`port` 0: any free); RuntimeError (with every process
    stopped) when one does not come up in START_TIMEOUT_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    cmd = [sys.executable, "-c", "from harness.cli import app; app()", "serve", "llm-continuous", "--port", "0",
           *_engine_args(live.fleet.engine), *(["--token", token] if token else [])]
    env = {**os.environ, "COLUMNS": "200"}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True, env=env) for _ in range(live.fleet.replicas)]
    fleet = RunningFleet(live, "", [], procs, started_s=time.monotonic())
    try:
        ports = [await _read_port(p, deadline) for p in procs]
        for p in procs:  # the rest of their output is not read: send it nowhere so a full pipe never blocks
            assert p.stdout is not None
            p.stdout.close()
        fleet.replica_urls = [f"http://127.0.0.1:{p}" for p in ports]
        async with aiohttp.ClientSession() as http:
            for base in fleet.replica_urls:
                await until_ok(http, "GET", base + "/health", deadline)
            if live.external is None:
                await _start_ours(fleet, port)
            else:
                await _start_external(fleet, port, http, deadline, token)
    except BaseException:
        await fleet.close()
        raise
    return fleet


async def _start_ours(fleet: RunningFleet, port: int) -> None:
    from targets.http.llm_router import create_router_app

    spec = fleet.live.fleet
    app = create_router_app(fleet.replica_urls, spec.new_router(), spec.engine.block_size, MODEL_NAME, MAX_LEN,
                            kv_blocks=spec.engine.kv_blocks)
    runner = fleet.runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # an asyncio.Server once started
    fleet.url = f"http://127.0.0.1:{bound}/v1/completions"


async def _start_external(fleet: RunningFleet, port: int, http: aiohttp.ClientSession, deadline: float,
                         token: str | None) -> None:
    live = fleet.live
    assert live.external is not None and live.external_policy is not None
    fleet.front_proc, fleet.url = await start_external_front(live.external, fleet.replica_urls, live.external_policy,
                                                             port, token, http, deadline)
