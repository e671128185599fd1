"""The project's HTTP router for a fleet of LLM replicas: it reads the prompt, asks a routing policy, streams through.

`create_router_app(replicas, router, block_size, model, max_len)` is an aiohttp app
on the fleet's front door. For each `POST /v1/completions` it parses the OpenAI
body as the replicas do (`targets.llm.openai_request`: a malformed request is the
same 4xx with a JSON reason, from the router, and no replica sees it), names the
prompt's full blocks (`prefix_cache.token_block_names`, the replicas' names), asks
the policy object (`targets.llm.routing`: the same clock-free `route(req, view)`
the sim fleet asks) for a replica, forwards the body unchanged and streams the
answer back chunk by chunk as it comes.

What the policy reads (`RouterView`) is the router's own: outstanding requests and
tokens it sent each replica and has not seen finish, which replicas answered their
last `GET /health` (probed every `health_every_s`), and for `kv-aware` the blocks it
sent each replica, an LRU of at most `kv_blocks` names per replica (the router's
estimate of the replica's cache, as sglang-router's approximate tree is, instead of
the engine's KV events that llm-d and Dynamo read).

Its own cost per request (`GET /router_stats`): the wall time from the request's
arrival to the forward (reading and parsing the body, naming blocks, routing) and
the router process's CPU seconds per request over all its work (the streaming
through included), beside the requests and tokens it sent each replica.
A replica that cannot be reached is a 502 in OpenAI's error shape, marked down until
its next healthy probe. `GET /health` is 200 while any replica is up.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable

import aiohttp
from aiohttp import web

from targets.llm.openai_request import BadCompletion, parse_completion
from targets.llm.prefix_cache import token_block_names
from targets.llm.routing import Routed, Router, touch

__all__ = ["RouterStats", "RouterView", "create_router_app"]

MAX_BODY_BYTES = 1 << 20
_STATE = web.AppKey("router_state", object)


class RouterView:
    """The fleet as the router counts it (`targets.llm.routing.FleetView`)."""

    def __init__(self, n: int, kv_blocks: int) -> None:
        self.alive = [True] * n
        self.outstanding_requests = [0] * n
        self.outstanding_tokens = [0] * n
        self.kv_blocks = kv_blocks
        self.sent: list[dict[int, None]] = [{} for _ in range(n)]   # block names sent, least recent first

    def cached_blocks(self, replica: int, names: tuple[int, ...]) -> int:
        sent, n = self.sent[replica], 0
        for name in names:
            if name not in sent:
                break
            n += 1
        return n

    def routed(self, replica: int, names: tuple[int, ...], tokens: int) -> None:
        self.outstanding_requests[replica] += 1
        self.outstanding_tokens[replica] += tokens
        touch(self.sent[replica], names, None, self.kv_blocks)

    def finished(self, replica: int, tokens: int) -> None:
        self.outstanding_requests[replica] -= 1
        self.outstanding_tokens[replica] -= tokens


@dataclass
class RouterStats:
    requests: int = 0
    errors: int = 0
    rejected: int = 0                                  # malformed: answered by the router itself
    clients_gone: int = 0                              # the client left mid-stream (its replica kept up)
    route_s: list[float] = field(default_factory=list)  # arrival to forward, per request (first 100,000)
    per_replica: list[int] = field(default_factory=list)
    cpu_start_s: float = field(default_factory=time.process_time)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.route_s)

        def q(p: float) -> float | None:
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1e6, 1) if ordered else None

        cpu = time.process_time() - self.cpu_start_s
        return {"requests": self.requests, "errors": self.errors, "rejected": self.rejected,
                "clients_gone": self.clients_gone,
                "routed_per_replica": self.per_replica, "route_us_p50": q(0.5), "route_us_p99": q(0.99),
                "cpu_s": round(cpu, 3), "cpu_us_per_request": round(cpu / self.requests * 1e6, 1)
                if self.requests else None}


@dataclass
class _State:
    replicas: list[str]        # base URLs, http://127.0.0.1:PORT
    router: Router
    view: RouterView
    stats: RouterStats
    block_size: int
    model: str
    max_len: int
    http: aiohttp.ClientSession | None = None
    probe_rounds: int = 0
    ids: itertools.count = field(default_factory=itertools.count)


async def _to_client(write: Awaitable[object]) -> bool:
    """Await a write to the client; False when the client has gone (its transport closing, which aiohttp
    raises as `ClientConnectionResetError`, a ClientError too). A client that left says nothing about the
    replica: caught here, it never reaches the handler's `except aiohttp.ClientError`, which marks the
    replica down (it did, until the next health probe: a driver closing its streams after [DONE] marked
    both replicas of a live fleet down and the next request found none alive)."""
    try:
        await write
    except ConnectionResetError:
        return False
    return True


def _json_error(exc: BadCompletion) -> web.Response:
    return web.json_response(exc.body(), status=exc.status)


async def _probe(state: _State, every_s: float) -> None:
    assert state.http is not None
    while True:
        for r, base in enumerate(state.replicas):
            try:
                async with state.http.get(base + "/health", timeout=aiohttp.ClientTimeout(total=2.0)) as resp:
                    state.view.alive[r] = resp.status == 200
            except (aiohttp.ClientError, TimeoutError):
                state.view.alive[r] = False
        state.probe_rounds += 1
        await asyncio.sleep(every_s)


def create_router_app(replicas: list[str], router: Router, block_size: int, model: str, max_len: int,
                      kv_blocks: int = 512, health_every_s: float = 1.0) -> web.Application:
    """The router over `replicas` (base URLs on loopback) asking `router`; see the module doc."""
    state = _State(list(replicas), router, RouterView(len(replicas), kv_blocks), RouterStats(per_replica=[0] * len(replicas)),
                   block_size, model, max_len)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[_STATE] = state

    async def completions(request: web.Request) -> web.StreamResponse:
        began = time.perf_counter()
        try:
            if request.content_type != "application/json":
                raise BadCompletion(415, "unsupported-media-type", "send the body as application/json")
            raw = await request.read()
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise BadCompletion(400, "invalid-json", "the body is not valid JSON") from None
            req = parse_completion(body, state.model, state.max_len)
        except BadCompletion as exc:
            state.stats.rejected += 1
            return _json_error(exc)
        names = token_block_names(req.prompt, state.block_size)
        rid = next(state.ids)
        conversation = hash(request.headers.get("X-Session-Id", rid))
        tokens = len(req.prompt) + req.max_tokens
        try:
            r = state.router.route(Routed(rid, conversation, names, len(req.prompt), req.max_tokens), state.view)
        except ValueError as exc:  # no replica alive
            return _json_error(BadCompletion(503, "no-replica", str(exc), kind="server_error"))
        state.view.routed(r, names, tokens)
        state.stats.requests += 1
        state.stats.per_replica[r] += 1
        if len(state.stats.route_s) < 100_000:
            state.stats.route_s.append(time.perf_counter() - began)
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "x-request-id", "x-tenant")}
        assert state.http is not None
        try:
            async with state.http.post(state.replicas[r] + "/v1/completions", data=raw,
                                       headers={**headers, "Content-Type": "application/json"}) as up:
                resp = web.StreamResponse(status=up.status, headers={
                    k: v for k, v in up.headers.items()
                    if k.lower() in ("content-type", "cache-control", "retry-after", "retry-after-ms")})
                resp.headers["X-Replica"] = str(r)
                if not await _to_client(resp.prepare(request)):
                    state.stats.clients_gone += 1
                    return resp
                async for chunk in up.content.iter_any():
                    if not await _to_client(resp.write(chunk)):
                        break
                else:
                    if await _to_client(resp.write_eof()):
                        return resp
                state.stats.clients_gone += 1
                return resp
        except aiohttp.ClientError as exc:   # the replica's side: refused, reset, cut short
            state.stats.errors += 1
            state.view.alive[r] = False
            return _json_error(BadCompletion(502, "replica-unreachable", f"replica {r}: {exc}", kind="server_error"))
        finally:
            state.view.finished(r, tokens)

    async def health(request: web.Request) -> web.Response:
        up = sum(state.view.alive)
        return web.json_response({"status": "ok" if up else "no-replica", "replicas_up": up,
                                  "replicas": len(state.replicas), "probe_rounds": state.probe_rounds},
                                 status=200 if up else 503)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": state.model, "object": "model",
                                                              "max_model_len": state.max_len}]})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(state.stats.summary())

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        state.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                           timeout=aiohttp.ClientTimeout(total=None))
        prober = asyncio.get_running_loop().create_task(_probe(state, health_every_s))
        state.stats.cpu_start_s = time.process_time()
        yield
        prober.cancel()
        await asyncio.gather(prober, return_exceptions=True)
        await state.http.close()

    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_get("/router_stats", stats)
    app.cleanup_ctx.append(lifecycle)
    return app
