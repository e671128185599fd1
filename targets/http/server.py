"""The API servers of a live target: aiohttp apps in front of one ServingTarget.

The package targets.http is the live front end; with harness.live and the LLM
server it is all that imports aiohttp (a contract in pyproject.toml holds it):
the target and its policies only see `Attempt` and `Response`. Parsing lives in
targets.http.parse, metrics in targets.http.metrics, the HTTP edge (parser
limits, JSON for aiohttp's own refusals) in targets.http.edge, binding N servers
and their guards in targets.http.api_servers.

HTTP API (JSON bodies, UTF-8)::

    POST /predict    Content-Type: application/json
                     Authorization: Bearer TOKEN   (only when the server has a token)
      {"tenant": "t0",          required: 1-64 of [A-Za-z0-9_.-], a known tenant
                                 when the server was given a tenant list
       "request_id": "t0-17",   optional: 1-128 printable ASCII, or null (dedupe key)
       "deadline_ms": 1000,     optional: the caller's remaining budget, 1..600000 ms, or null
       "input": [...]}          required: the model's input (mlp: 512 numbers;
                                 cnn: 3x32x32 numbers; transformer: 1..128 token ids)
      200 {"output": {"label", "score", "logits"}, "cached": bool, "request_id": ...,
           "version": the model version that computed it (also X-Model-Version; a
           canary rollout serves two, a 5xx its model failed says which too)}
      429 tenant over its limit, 503 overloaded / deadline passed / not answered:
          {"error", "reason", "retry_after_s"} with Retry-After (whole seconds)
          and X-Retry-After-Ms (exact)
      400 malformed body (empty, not UTF-8, not JSON) or malformed HTTP (bad
      request line, header too long, too many headers, broken framing);
      401 missing or wrong bearer token; 408 body not received within the body
      timeout (the connection is closed); 409 request ID reused with another
      input (below); 413 body over the size limit; 415 not application/json;
      422 valid JSON that breaks the schema (not an object, unknown or missing
      fields, wrong types, unknown tenant, absurd deadline, an input of the
      wrong shape). Every error body is {"error": KIND, "reason": TEXT}, the
      reason at most 200 characters and never echoing the request; no input
      yields a 500.
    GET /healthz     200 {"status": "ok", ...}; 503 when no GPU worker is alive
    GET /metrics     Prometheus text (bearer token as /predict): request latency,
                     queue depth, batch size, GPU busy, shed and retry counters
                     per tenant (answers and latency per model version too); the size, limit and TTL of every bounded
                     structure; the proxy's connections, limits and refusals, and the
                     front door's latency by outcome (each request from its first byte
                     at the proxy to its answer, refusal or its client giving up)

Request IDs and dedupe (targets with ``dedupe = true``): the dedupe key is
(tenant, request_id), and the input's digest is remembered with it. A request
whose key is in flight, or was answered within the dedupe window (client
timeout x tries), with the same input is a retry: it shares that computation
or gets that answer (``"cached"`` stays false). The same key with a different
input is answered 409 ``request-id-conflict``, never with the other input's
answer; the same ID from another tenant is a different key and never meets
this one. At most 256 requests wait on one key; more get 429.

Connections (limits in targets.http.limits.EdgeLimits): an idle keep-alive
connection is closed after `idle_timeout_s`, which also bounds the wait for a
request's head here (the L4 proxy in front enforces `header_timeout_s`); a
body not complete `body_timeout_s` after its head is answered 408 and the
connection closed. A client that drops before its answer is counted
(``harness_client_drops``) and logged in one line, a few lines a window.

Optional harness headers (accounting only, never read by policies):
``X-Harness-Uid`` (the user request's number) and ``X-Harness-Attempt`` (0 = first try).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import http_exceptions as hx
from aiohttp import web

from targets.admission import answer_within_s
from targets.dedupe import Conflict, input_digest
from targets.http.limits import EdgeLimits, LogBudget, bearer_ok
from targets.http.metrics import NO_VERSION, ApiMetrics
from targets.http.overload import AgeGuard, LagGuard, LoopLag, relay_key
from targets.http.parse import (FIELDS, MAX_DEADLINE_MS, BadRequest, PredictRequest, clip,  # noqa: F401 - re-exported
                                parse_predict)
from targets.protocol import Attempt, Response, Status
from targets.versions import version_of

__all__ = ["ApiMetrics", "BadRequest", "FrontDoor", "PredictRequest", "create_app", "parse_predict"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 256 * 1024


@dataclass
class FrontDoor:
    """What one API server needs: the target, and how to read requests for it.

    `server`: the API server index passed to `target.submit` (the real L4
    proxy chose this server); None lets the target's own (L7) balancer choose.
    `size_of(input)`: the input's length in tokens for the cost model.
    `hold_s`: longest a request is held unanswered, whatever its deadline (a
    lost request would otherwise pin its handler forever); then 503. Most are
    held less (targets.admission.answer_within_s): until their deadline, or
    ten SLOs without one. `token`: when set,
    /predict and /metrics need ``Authorization: Bearer <token>`` (else 401).
    """

    target: Any
    server: int | None
    validate: Callable[[Any], Any]  # raises ValueError; returns the input as the model takes it (or None)
    size_of: Callable[[Any], int]
    metrics: ApiMetrics
    tenants: frozenset[str] | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    hold_s: float = 300.0
    cache_keys: str | None = None  # "exact": the body's bytes; "normalized": the input's value; None: no cache
    limits: EdgeLimits = field(default_factory=EdgeLimits)
    token: str | None = None
    log_budget: LogBudget = field(default_factory=LogBudget)
    overload: LagGuard | None = None  # shed while `lag` is over its limit (targets.http.overload)
    lag: LoopLag | None = None
    age_guard: AgeGuard | None = None  # shed a request older than its limit at its handler (server_overload)
    arrival: Callable[[Any], float | None] | None = None  # relay key -> its request's first byte (proxy)
    to_gpu: Callable[[Any], Callable[[], None] | None] | None = None  # the proxy's guard's signal (L4Proxy.to_gpu)
    _uids: Any = field(default_factory=lambda: itertools.count(-1, -1))


_DOOR = web.AppKey("door", FrontDoor)
_HTTP = {Status.OK: 200, Status.BAD_REQUEST: 400, Status.TOO_MANY: 429, Status.ERROR: 500,
         Status.UNAVAILABLE: 503, Status.TIMEOUT: 503}
_GUARDED = frozenset({"/predict", "/metrics"})
_COMPUTED = frozenset({Status.OK, Status.ERROR})  # answers a model computed (or failed computing)


def _error(status: int, kind: str, reason: str, retry_after_s: float | None = None,
           close: bool = False, headers: dict[str, str] | None = None) -> web.Response:
    body: dict[str, Any] = {"error": kind, "reason": clip(reason)}
    headers = dict(headers or {})
    if retry_after_s is not None:
        body["retry_after_s"] = round(retry_after_s, 3)
        headers.update({"Retry-After": str(max(1, math.ceil(retry_after_s))),
                        "X-Retry-After-Ms": str(max(1, round(retry_after_s * 1000)))})
    resp = web.json_response(body, status=status, headers=headers or None)
    if close:
        resp.force_close()
    return resp


def _header_int(request: web.Request, name: str) -> int | None:
    raw = request.headers.get(name)
    if raw is None or not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        return None
    return int(raw)


def _relay_key(request: web.Request) -> tuple | None:
    """The proxy's name for this request's connection (targets.http.overload.relay_key)."""
    transport = request.transport
    if transport is None:
        return None
    return relay_key(transport.get_extra_info("peername"), transport.get_extra_info("sockname"))


def _age_s(request: web.Request, arrival: Callable[[Any], float | None]) -> float | None:
    """Seconds since the request's first byte reached the proxy in front (None: not known)."""
    started = arrival(_relay_key(request))
    return None if started is None else asyncio.get_running_loop().time() - started


def _received_s(request: web.Request, door: FrontDoor, now: float) -> float:
    """When the request reached this host: its first byte at the proxy in front when known (so a
    deadline counts the time it queued before its handler), else now."""
    started = door.arrival(_relay_key(request)) if door.arrival is not None else None
    return now if started is None or started > now else started


def _back_from_gpu(to_gpu: Callable[[Any], Callable[[], None] | None], key: Any,
                   done: asyncio.Future) -> Callable[[Response], None]:
    """Tell the proxy the request went to the GPUs now, and when it is back; the answer goes to ``done``."""
    back = to_gpu(key)

    def answered(r: Response) -> None:
        if not done.done():
            if back is not None:
                back()
            done.set_result(r)

    return answered


def _dropped(door: FrontDoor, when: str) -> None:
    door.metrics.drops.inc()
    suppressed = door.log_budget.allow(asyncio.get_running_loop().time())
    if suppressed is not None:
        more = f" ({suppressed} more since the last line)" if suppressed else ""
        log.info("client dropped its connection %s%s", when, more)


async def _read_body(request: web.Request, door: FrontDoor) -> bytes | web.Response:
    """The body, or the error response that ends the request (408, 413, 400)."""
    m = door.metrics
    try:
        async with asyncio.timeout(door.limits.body_timeout_s):
            return await request.read()
    except TimeoutError:
        m.bad.labels("body-timeout").inc()
        return _error(408, "body-timeout", f"the body did not arrive within {door.limits.body_timeout_s:g} s",
                      close=True)
    except web.HTTPRequestEntityTooLarge:
        m.bad.labels("too-large").inc()
        return _error(413, "too-large", f"body is over the {door.max_body_bytes}-byte limit", close=True)
    except hx.HttpProcessingError:
        m.bad.labels("bad-framing").inc()
        return _error(400, "bad-framing", "the body's framing is malformed", close=True)
    except (ConnectionError, asyncio.CancelledError):  # the client went away mid-body
        _dropped(door, "while sending its body")
        raise


async def _predict(request: web.Request) -> web.Response:
    door = request.app[_DOOR]
    m = door.metrics
    ctype = request.headers.get("Content-Type", "")
    if ctype.split(";", 1)[0].strip().lower() != "application/json":
        m.bad.labels("wrong-content-type").inc()
        return _error(415, "wrong-content-type", "Content-Type must be application/json")
    if door.age_guard is not None and door.arrival is not None:
        age = _age_s(request, door.arrival)
        wait = door.age_guard.decide(age)
        if wait is not None and age is not None:  # before the body is read or parsed
            m.shed.labels("-", "front-end-overloaded").inc()
            return _error(503, "overloaded", f"front end overloaded: this request waited {age * 1000:.0f} ms "
                          "for its handler", wait)
    if door.overload is not None and door.lag is not None:
        wait = door.overload.decide(door.lag.lag_s)
        if wait is not None:  # before the body is read or parsed: the cheapest answer there is
            m.shed.labels("-", "front-end-overloaded").inc()
            return _error(503, "overloaded", f"front end overloaded: its event loop is "
                          f"{door.lag.lag_s * 1000:.0f} ms behind", wait)
    if request.content_length is not None and request.content_length > door.max_body_bytes:
        m.bad.labels("too-large").inc()
        return _error(413, "too-large", f"body of {request.content_length} bytes is over the "
                      f"{door.max_body_bytes}-byte limit", close=True)
    body = await _read_body(request, door)
    if isinstance(body, web.Response):
        return body
    try:
        req = parse_predict(body, door.tenants, door.validate)
        # The response cache keys on (content, variant) when exact, on content otherwise.
        content, variant = 0, 0
        if door.cache_keys == "exact":
            variant = hash(body)
        elif door.cache_keys is not None:
            content = int.from_bytes(input_digest(req.input)[:8], "big")
    except BadRequest as exc:
        m.bad.labels(exc.kind).inc()
        return _error(exc.status, exc.kind, exc.reason)
    except (ValueError, TypeError, RecursionError):
        m.bad.labels("bad-input").inc()
        return _error(422, "bad-input", "'input' cannot be read as the model's input")
    loop = asyncio.get_running_loop()
    now = loop.time()
    tenant = m.tenant_label(req.tenant)
    attempt_no = _header_int(request, "X-Harness-Attempt") or 0
    if attempt_no:
        m.retries.labels(tenant).inc()
    uid = _header_int(request, "X-Harness-Uid")
    a = Attempt(
        uid=next(door._uids) if uid is None else uid, tenant=req.tenant, conn=0, content=content,
        variant=variant, size=door.size_of(req.input), sent_s=now, attempt_no=attempt_no,
        request_id=req.request_id,
        deadline_s=None if req.deadline_ms is None else _received_s(request, door, now) + req.deadline_ms / 1000.0,
        payload=req.input,
    )
    done: asyncio.Future[Response] = loop.create_future()

    def answered(r: Response) -> None:
        if not done.done():
            done.set_result(r)

    a.on_answer = answered
    if door.to_gpu is not None:  # the GPUs' time is not the front end's
        a.on_answer = _back_from_gpu(door.to_gpu, _relay_key(request), done)
    door.target.submit(a, door.server)
    # Held until its deadline, or a few SLOs without one (targets.admission.answer_within_s): a
    # request the target cannot answer in time (lost with a GPU, queued while none is alive) is
    # answered 503 here, never left to the client's own timeout.
    deadline_s = None if a.deadline_s is None else max(0.0, a.deadline_s - now)
    within_s = answer_within_s(deadline_s, getattr(getattr(door.target, "config", None), "slo_s", None), door.hold_s)
    try:
        async with asyncio.timeout(within_s):
            response = await done
    except TimeoutError:
        a.give_up()
        response = (Response(Status.UNAVAILABLE, reason="deadline passed before an answer")
                    if deadline_s is not None and within_s == deadline_s else
                    Response(Status.UNAVAILABLE, retry_after_s=1.0, reason=f"not answered within {within_s:g} s"))
    except asyncio.CancelledError:  # the client went away (aiohttp cancels its handler)
        a.give_up()
        _dropped(door, "while waiting for its answer")
        raise
    if isinstance(response, Conflict):
        m.requests.labels(tenant, "409", NO_VERSION).inc()
        return _error(409, "request-id-conflict", response.reason)
    code = _HTTP[response.status]
    # The version that computed the answer: its own tag (a canary rollout), else the lone one.
    version = version_of(response.output) or (m.version if response.status in _COMPUTED else NO_VERSION)
    m.requests.labels(tenant, str(code), version).inc()
    if response.status is Status.OK:
        m.latency.labels(tenant, version).observe(loop.time() - now)
        return web.json_response({"output": response.output, "cached": response.cached,
                                  "request_id": req.request_id, "version": version},
                                 headers={"X-Model-Version": version})
    if response.status.shed:
        m.shed.labels(tenant, response.reason or str(code)).inc()
    return _error(code, response.status.name.lower(), response.reason or response.status.name,
                  response.retry_after_s if response.status.shed else None,
                  headers=None if version == NO_VERSION else {"X-Model-Version": version})


async def _healthz(request: web.Request) -> web.Response:
    t = request.app[_DOOR].target
    alive = t.pool.alive_gpus()
    body = {"status": "ok" if alive else "no-gpu", "gpus_alive": alive, "gpus": len(t.pool.workers),
            "queue_depth": t.queue_depth()}
    return web.json_response(body, status=200 if alive else 503)


async def _metrics(request: web.Request) -> web.Response:
    return web.Response(body=request.app[_DOOR].metrics.render(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


@web.middleware
async def _auth(request: web.Request, handler):
    """/predict and /metrics need the bearer token when the server has one."""
    door = request.app[_DOOR]
    if door.token is not None and request.path in _GUARDED:
        if not bearer_ok(request.headers.get("Authorization", ""), door.token):
            door.metrics.bad.labels("unauthorized").inc()
            return _error(401, "unauthorized", "this server needs 'Authorization: Bearer <token>'",
                          headers={"WWW-Authenticate": 'Bearer realm="harness"'})
    return await handler(request)


def _refusal(exc: web.HTTPException) -> tuple[int, str, str]:
    """An aiohttp refusal as (status, kind, reason): the kind is its reason, lower-case, dashed."""
    return exc.status, exc.reason.lower().replace(" ", "-"), exc.reason


# What aiohttp's router and body limit refuse; `_json_errors` answers them in the JSON contract
# (the docs generator lists them from here).
AIOHTTP_REFUSALS: tuple[tuple[int, str, str], ...] = tuple(_refusal(exc) for exc in (
    web.HTTPNotFound(), web.HTTPMethodNotAllowed("GET", ["POST"]),
    web.HTTPRequestEntityTooLarge(max_size=1, actual_size=2)))


@web.middleware
async def _json_errors(request: web.Request, handler):
    """aiohttp's own refusals (404, 405, 413) as JSON; a bug as a logged JSON 500."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(*_refusal(exc))
    except (asyncio.CancelledError, ConnectionError):
        raise
    except Exception:  # pragma: no cover - a bug, not a bad request
        log.exception("internal error on %s %s", request.method, request.path[:100])
        return _error(500, "internal", "internal server error")


def create_app(door: FrontDoor) -> web.Application:
    """One API server's aiohttp application."""
    app = web.Application(middlewares=[_json_errors, _auth], client_max_size=door.max_body_bytes)
    app[_DOOR] = door
    app.router.add_post("/predict", _predict)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    return app
