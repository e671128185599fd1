"""An OpenAI-compatible completions server for the tiny decoder: `POST /v1/completions`, aiohttp.

Non-streaming answers are one JSON `text_completion` with `usage`; with
`stream: true` the answer is server-sent events: one `data: {...}` chunk per
token with `choices[0].text`, a chunk with `finish_reason: "length"` and empty
text, then, only when asked with `stream_options: {"include_usage": true}` (as
OpenAI does), a chunk with no choices and `usage`; then `data: [DONE]`. A malformed request gets a 4xx JSON error in OpenAI's
shape (`targets.llm.openai_request`), never a 500. The only module of
targets/llm that sees a web type.

A client may name its request with an `X-Request-Id` header (as vLLM's server
reads it): the answer's id is then `cmpl-<that id>` and the engine keeps the
request's engine-side times under it (`LiveEngine.seen`), which is how
`harness profile llm` measures the front end from the client's side.

`POST /flush_cache` (SGLang's name; `/reset_prefix_cache`, vLLM's) drops the prefix cache's
free blocks while the engine is idle (409 while requests are pending or running), so one
set of replicas can serve one fleet's day after another's cold; like the probes it needs no
token (the server binds loopback unless exposed).

A request's tenant, whose limits and priority class it takes, is OpenAI's `user`
field, else an `X-Tenant` header, else `DEFAULT_TENANT`; a malformed name in
either is a 400. A request its tenant's limits shed is a 429 in OpenAI's shape
with `Retry-After` (whole seconds, rounded up) and `retry-after-ms` (which
OpenAI's own clients read) saying when its bucket will have refilled for it;
none when it never will (it is larger than the burst).

Health and info, what a router probes before it sends a worker traffic (sglang-router
and its peers): `GET /health` (200 while the engine loop runs, else 503),
`GET /health_generate` (200 once a one-token generation went through the engine),
`GET /get_model_info` and `GET /get_server_info` (also as `/model_info`, `/server_info`; the model, its context, the
engine's knobs and its prefix cache's figures: hit rate by tokens, tokens saved,
evictions), beside `GET /v1/models`. None needs the token: a probe has none.

With a `token` (`harness serve llm-... --token`), every `/v1/` path needs
``Authorization: Bearer <token>``; without it the answer is a 401 in OpenAI's
shape (`invalid_api_key`) and the engine never sees the request.

`POST /v1/completions/render` (vLLM's) answers a completion request's body with the token ids
the engine would see, without generating: `[{"token_ids": [...], "sampling_params": {"max_tokens": N},
"model": ..., "request_id": "cmpl-..."}]`, a malformed body a 4xx as for completions. vllm-router's
`cache_aware` asks it for every request and keeps its prefix tree over those ids; without it, that
router routes by load alone (`benchmarks/router_probe.py`).

`GET /metrics` is the engine's state in Prometheus text under vLLM's names
(`targets.llm.engine_metrics`), outside /v1/ and so without the token, as vLLM serves it.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from typing import Any, AsyncIterator, Callable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from targets.http.limits import bearer_ok
from targets.llm.decoder import FIRST_PRINTABLE, VOCAB
from targets.llm.engine_metrics import EngineCollector
from targets.llm.live_engine import DEFAULT_TENANT, LiveEngine, RateLimited
from targets.llm.openai_request import BadCompletion, Completion, parse_completion, tenant_name

__all__ = ["MAX_BODY_BYTES", "PROBES", "create_llm_app"]

MAX_BODY_BYTES = 1 << 20
MAX_REQUEST_ID_CHARS = 128
HEALTH_GENERATE_TIMEOUT_S = 10.0
# What a router probes (path: what it answers); none needs the token. The docs' HTTP page lists these.
PROBES: dict[str, str] = {
    "/health": '200 {"status": "ok"} while the engine loop runs, else 503',
    "/health_generate": "200 once a one-token generation went through the engine; 503 after 10 s",
    "/get_model_info": "the model, its context (`max_model_len`), `is_generation` (also as `/model_info`)",
    "/get_server_info": "the engine's state (`steps`, `busy_s`: wall seconds of its steps) and its prefix cache's "
                        "figures: `prefix_cache.hit_rate` by tokens, "
                        "`tokens_saved`, `evictions`, `blocks_kept` (also as `/server_info`)",
    "/request_times": "per `X-Request-Id` the engine saw: `arrival_s`, `scheduled_s` (its first step), `first_token_s`, `finish_s` on the "
                      "replica's monotonic clock (one clock for every process of the machine)",
    "/step_log": "the engine's steps (first 100,000), each `[prefill_tokens, decode_rows, context_tokens, "
                 "wall_s, idle_s]` (idle_s: how long the engine sat idle before it): what a fleet's profile fits "
                 "the sim's step cost and its wake-up to; `?since=N` from step N on",
}
HEALTH_TENANT = "health-probe"   # a probe's generation is its own tenant's, not a client's
_ENGINE = web.AppKey("engine", LiveEngine)


def _error(exc: BadCompletion) -> web.Response:
    return web.json_response(exc.body(), status=exc.status)


def _rate_limited(exc: RateLimited) -> web.Response:
    headers = {}
    if exc.retry_after_s < math.inf:
        headers = {"Retry-After": str(math.ceil(exc.retry_after_s)),
                   "retry-after-ms": str(math.ceil(exc.retry_after_s * 1000))}
    body = BadCompletion(429, "rate_limit_exceeded", str(exc), kind="rate_limit_error").body()
    return web.json_response(body, status=429, headers=headers)


def _chunk(rid: str, created: int, model: str, text: str | None, finish: str | None,
           usage: dict[str, int] | None = None) -> bytes:
    """One SSE event: a token's text (`text` None: the usage chunk, with no choices)."""
    doc: dict[str, Any] = {"id": rid, "object": "text_completion", "created": created, "model": model,
                           "choices": [] if text is None else
                           [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}]}
    if usage is not None:
        doc["usage"] = usage
    return f"data: {json.dumps(doc)}\n\n".encode()


async def _read(request: web.Request, model: str, max_len: int) -> Completion:
    if request.content_type != "application/json":
        raise BadCompletion(415, "unsupported-media-type", "send the body as application/json")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadCompletion(413, "body-too-large", f"the body is over {MAX_BODY_BYTES} bytes") from None
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadCompletion(400, "invalid-json", "the body is not valid JSON") from None
    return parse_completion(body, model, max_len)


def _request_id(request: web.Request) -> str | None:
    rid = request.headers.get("X-Request-Id")
    if rid is not None and not (0 < len(rid) <= MAX_REQUEST_ID_CHARS and rid.isascii() and rid.isprintable()):
        raise BadCompletion(400, "invalid-request-id",
                            f"X-Request-Id must be 1-{MAX_REQUEST_ID_CHARS} printable ASCII characters")
    return rid


def _tenant(request: web.Request, req: Completion) -> str:
    """The `user` field, else the X-Tenant header (checked even when the field wins), else the default."""
    header = tenant_name(request.headers.get("X-Tenant"), "X-Tenant")
    return req.user or header or DEFAULT_TENANT


def _auth(token: str) -> Middleware:
    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/v1/") and not bearer_ok(request.headers.get("Authorization", ""), token):
            body = BadCompletion(401, "invalid_api_key", "this server needs 'Authorization: Bearer <token>'",
                                 kind="authentication_error").body()
            return web.json_response(body, status=401, headers={"WWW-Authenticate": 'Bearer realm="harness"'})
        return await handler(request)

    return auth


def create_llm_app(engine: LiveEngine, model: str = "tiny-llm", token: str | None = None,
                   count_tokens: Callable[[str], int] | None = None) -> web.Application:
    """The app; its engine loop starts and stops with it. `token`: the bearer token every /v1/ path
    needs (None: none). `count_tokens`: how `usage` counts a text prompt's and an answer's tokens (a
    tokenizer's count; None: the decoder's bytes); the decoder itself always runs on bytes."""
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_auth(token)] if token else [])
    app[_ENGINE] = engine

    async def completions(request: web.Request) -> web.StreamResponse:
        try:
            named = _request_id(request)
            req = await _read(request, model, engine.model.max_len)
            tenant = _tenant(request, req)
        except BadCompletion as exc:
            return _error(exc)
        rid, created = f"cmpl-{named or uuid.uuid4().hex[:24]}", int(time.time())
        prompt_tokens = len(req.prompt) if count_tokens is None or req.prompt_text is None else \
            count_tokens(req.prompt_text)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": req.max_tokens,
                 "total_tokens": prompt_tokens + req.max_tokens}
        try:
            tokens = engine.generate(req.prompt, req.max_tokens, named, tenant)
            if not req.stream:
                text = "".join([chr(t) async for t in tokens])
                if count_tokens is not None:
                    usage["completion_tokens"] = count_tokens(text)
                    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                return web.json_response({
                    "id": rid, "object": "text_completion", "created": created, "model": model,
                    "choices": [{"index": 0, "text": text, "finish_reason": "length", "logprobs": None}],
                    "usage": usage})
            first = await anext(tokens)
        except RateLimited as exc:
            return _rate_limited(exc)
        except ValueError as exc:  # it can never fit the engine's KV cache
            return _error(BadCompletion(400, "context-length-exceeded", str(exc), "max_tokens"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        made = [chr(first)]
        await resp.write(_chunk(rid, created, model, made[0], None))
        async for token in tokens:
            made.append(chr(token))
            await resp.write(_chunk(rid, created, model, made[-1], None))
        await resp.write(_chunk(rid, created, model, "", "length"))
        if count_tokens is not None:  # the answer's bytes as the tokenizer counts them
            usage["completion_tokens"] = count_tokens("".join(made))
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if req.include_usage:
            await resp.write(_chunk(rid, created, model, None, None, usage))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def render(request: web.Request) -> web.Response:
        try:
            named = _request_id(request)
            req = await _read(request, model, engine.model.max_len)
        except BadCompletion as exc:
            return _error(exc)
        return web.json_response([{"token_ids": list(req.prompt), "sampling_params": {"max_tokens": req.max_tokens},
                                   "model": model, "request_id": f"cmpl-{named or uuid.uuid4().hex[:24]}"}])

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "harness",
                                                              "max_model_len": engine.model.max_len}]})

    async def health(request: web.Request) -> web.Response:
        if not engine.running:
            return web.json_response({"status": "stopped"}, status=503)
        return web.json_response({"status": "ok"})

    async def health_generate(request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(HEALTH_GENERATE_TIMEOUT_S):
                made = [t async for t in engine.generate([FIRST_PRINTABLE], 1, tenant=HEALTH_TENANT)]
        except (TimeoutError, ValueError) as exc:
            return web.json_response({"status": "unhealthy", "reason": str(exc) or "timed out"}, status=503)
        return web.json_response({"status": "ok", "tokens": len(made)})

    async def model_info(request: web.Request) -> web.Response:
        return web.json_response({"model_path": model, "tokenizer_path": None, "is_generation": True,
                                  "max_model_len": engine.model.max_len, "vocab_size": VOCAB})

    async def server_info(request: web.Request) -> web.Response:
        return web.json_response(engine.info(model))

    async def request_times(request: web.Request) -> web.Response:
        return web.json_response({rid: {"arrival_s": s.arrival_s, "scheduled_s": s.scheduled_s,
                                        "first_token_s": s.first_token_s, "finish_s": s.finish_s}
                                  for rid, s in engine.seen.items()})

    async def step_log(request: web.Request) -> web.Response:
        try:
            since = max(0, int(request.query.get("since", "0")))
        except ValueError:
            return web.json_response({"error": "since: expected a step number"}, status=400)
        return web.json_response([[*row, idle] for row, idle in zip(engine.step_log[since:], engine.step_idle[since:])])

    async def flush_cache(request: web.Request) -> web.Response:
        dropped = engine.flush_cache()
        if dropped is None:
            return web.json_response({"error": "not flushed: requests are pending or running"}, status=409)
        return web.json_response({"flushed_blocks": dropped})

    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(engine.scheduler, model))

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        engine.start()
        yield
        await engine.stop()

    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/completions/render", render)   # vLLM's; vllm-router's cache_aware reads it
    app.router.add_get("/v1/models", models)
    probes = {"/health": health, "/health_generate": health_generate, "/get_model_info": model_info,
              "/get_server_info": server_info, "/request_times": request_times, "/step_log": step_log}
    assert probes.keys() == PROBES.keys()
    for path, handler in probes.items():
        app.router.add_get(path, handler)
    app.router.add_get("/model_info", model_info)       # sglang-router asks the new names first
    app.router.add_get("/server_info", server_info)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/flush_cache", flush_cache)          # SGLang's name ...
    app.router.add_post("/reset_prefix_cache", flush_cache)   # ... and vLLM's
    app.cleanup_ctx.append(lifecycle)
    return app
