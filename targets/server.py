"""The API servers of a live target: aiohttp apps in front of one ServingTarget.

This module and harness.live.http_transport are the only ones that import aiohttp;
the target and its policies only see `Attempt` and `Response`.

HTTP API (JSON bodies, UTF-8)::

    POST /predict    Content-Type: application/json
      {"tenant": "t0",          required: 1-64 of [A-Za-z0-9_.-], a known tenant
                                 when the server was given a tenant list
       "request_id": "t0-17",   optional: 1-128 printable ASCII, or null (dedupe key)
       "deadline_ms": 1000,     optional: the caller's remaining budget, 1..600000 ms, or null
       "input": [...]}          required: the model's input (mlp: 512 numbers;
                                 cnn: 3x32x32 numbers; transformer: 1..128 token ids)
      200 {"output": {"label", "score", "logits"}, "cached": bool, "request_id": ...}
      429 tenant over its limit, 503 overloaded / deadline passed / not answered:
          {"error", "reason", "retry_after_s"} with Retry-After (whole seconds)
          and X-Retry-After-Ms (exact)
      400 malformed body (empty, not UTF-8, not JSON); 413 body over the size limit;
      415 not application/json; 422 valid JSON that breaks the schema (not an
      object, unknown or missing fields, wrong types, unknown tenant, absurd
      deadline, an input of the wrong shape). Every error body is
      {"error": KIND, "reason": TEXT}; malformed input never yields a 500.
    GET /healthz     200 {"status": "ok", ...}; 503 when no GPU worker is alive
    GET /metrics     Prometheus text: request latency, queue depth, batch size,
                     GPU busy, shed and retry counters, per tenant

Optional harness headers (accounting only, never read by policies):
``X-Harness-Uid`` (the user request's number) and ``X-Harness-Attempt`` (0 = first try).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from targets.protocol import Attempt, Response, Status

log = logging.getLogger(__name__)

FIELDS = frozenset({"tenant", "request_id", "deadline_ms", "input"})
MAX_DEADLINE_MS = 600_000
DEFAULT_MAX_BODY_BYTES = 256 * 1024
_TENANT_RE = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")
_RID_RE = re.compile(r"[\x21-\x7e]{1,128}\Z")
_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_MAX_TENANT_LABELS = 64  # bound label cardinality when any tenant name is accepted


class BadRequest(Exception):
    """A request the server refuses: HTTP `status`, a short `kind`, a human `reason`."""

    def __init__(self, status: int, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class PredictRequest:
    tenant: str
    request_id: str | None
    deadline_ms: float | None
    input: Any


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_predict(body: bytes, tenants: frozenset[str] | None,
                  validate: Callable[[Any], None]) -> PredictRequest:
    """Parse and validate one /predict body; raise BadRequest (400 or 422) naming the fault.

    `validate(input)` raises ValueError for an input the model cannot take.
    """
    if not body:
        raise BadRequest(400, "empty-body", "request body is empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, "not-utf8", f"body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(400, "malformed-json", f"body is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise BadRequest(422, "not-an-object", f"body must be a JSON object, got {type(data).__name__}")
    unknown = data.keys() - FIELDS
    if unknown:
        raise BadRequest(422, "unknown-field", f"unknown field(s) {sorted(unknown)[:5]}; allowed: {sorted(FIELDS)}")
    for name in ("tenant", "input"):
        if name not in data:
            raise BadRequest(422, "missing-field", f"field '{name}' is required")
    tenant = data["tenant"]
    if not isinstance(tenant, str):
        raise BadRequest(422, "wrong-type", f"'tenant' must be a string, got {type(tenant).__name__}")
    if not _TENANT_RE.match(tenant):
        raise BadRequest(422, "bad-tenant", "'tenant' must be 1-64 characters of A-Z a-z 0-9 _ . -")
    if tenants is not None and tenant not in tenants:
        raise BadRequest(422, "unknown-tenant", f"unknown tenant '{tenant}'")
    rid = data.get("request_id")
    if rid is not None and not (isinstance(rid, str) and _RID_RE.match(rid)):
        raise BadRequest(422, "bad-request-id", "'request_id' must be 1-128 printable ASCII characters, or null")
    deadline = data.get("deadline_ms")
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
            raise BadRequest(422, "wrong-type", f"'deadline_ms' must be a number, got {type(deadline).__name__}")
        if not (math.isfinite(deadline) and 1 <= deadline <= MAX_DEADLINE_MS):
            raise BadRequest(422, "absurd-deadline", f"'deadline_ms' must be within 1..{MAX_DEADLINE_MS}, got {deadline}")
    try:
        validate(data["input"])
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise BadRequest(422, "bad-input", f"'input': {str(exc)[:300]}") from None
    return PredictRequest(tenant, rid, deadline, data["input"])


class ApiMetrics:
    """Prometheus metrics of one live target, shared by its API servers.

    Request-path figures are counted as requests pass; target state (queue
    depth, GPUs, batch sizes, shed and lost counts) is read at scrape time, so
    the target needs no hook for metrics.
    """

    def __init__(self, target: Any, tenants: frozenset[str] | None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.tenants = tenants
        self._labels: set[str] = set()
        r = self.registry
        self.requests = Counter("harness_requests", "Requests answered, by tenant and HTTP code",
                                ["tenant", "code"], registry=r)
        self.latency = Histogram("harness_request_latency_seconds", "Server-side latency of answered requests",
                                 ["tenant"], buckets=_LATENCY_BUCKETS_S, registry=r)
        self.shed = Counter("harness_shed", "Requests shed (429 tenant limit, 503 overload or deadline)",
                            ["tenant", "reason"], registry=r)
        self.retries = Counter("harness_retries", "Retries received (X-Harness-Attempt > 0)", ["tenant"], registry=r)
        self.bad = Counter("harness_bad_requests", "Refused malformed requests, by kind", ["kind"], registry=r)
        r.register(_TargetCollector(target))

    def tenant_label(self, tenant: str) -> str:
        if self.tenants is not None or tenant in self._labels:
            return tenant
        if len(self._labels) < _MAX_TENANT_LABELS:
            self._labels.add(tenant)
            return tenant
        return "other"

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _TargetCollector:
    """Reads the ServingTarget at scrape time (no per-batch hook needed)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self._seen = 0
        self._counts = [0] * (len(_BATCH_BUCKETS) + 1)
        self._sum = 0

    def collect(self):
        t = self.target
        pool = t.pool
        yield GaugeMetricFamily("harness_queue_depth", "Requests queued, batches waiting for a GPU included",
                                value=t.queue_depth())
        yield GaugeMetricFamily("harness_gpus_alive", "GPU workers alive", value=pool.alive_gpus())
        yield GaugeMetricFamily("harness_gpus_busy", "GPU workers running a batch now", value=pool.busy_gpus())
        yield CounterMetricFamily("harness_gpu_busy_seconds", "GPU-seconds spent on batches",
                                  value=pool.busy_gpu_seconds())
        sizes = pool.stats.batch_sizes
        for b in sizes[self._seen:]:
            i = next((k for k, le in enumerate(_BATCH_BUCKETS) if b <= le), len(_BATCH_BUCKETS))
            self._counts[i] += 1
            self._sum += b
        self._seen = len(sizes)
        cum = list(itertools.accumulate(self._counts))
        buckets = [(str(le), cum[k]) for k, le in enumerate(_BATCH_BUCKETS)] + [("+Inf", cum[-1])]
        yield HistogramMetricFamily("harness_batch_size", "Requests per batch run on a GPU",
                                    buckets=buckets, sum_value=self._sum)
        st = t.stats
        c = CounterMetricFamily("harness_target_events", "Target events by kind", labels=["kind"])
        for kind, value in (("shed-tenant", st.shed_tenant), ("shed-overload", st.shed_overload),
                            ("expired", st.expired), ("lost", st.lost),
                            ("redispatched", pool.stats.redispatched)):
            c.add_metric([kind], value)
        if t.dedupe is not None:
            c.add_metric(["dedupe-coalesced"], t.dedupe.stats.coalesced)
            c.add_metric(["dedupe-replayed"], t.dedupe.stats.replayed)
        if t.cache is not None:
            c.add_metric(["cache-hit"], t.cache.stats.hits)
            c.add_metric(["cache-lookup"], t.cache.stats.lookups)
        yield c


@dataclass
class FrontDoor:
    """What one API server needs: the target, and how to read requests for it.

    `server`: the API server index passed to `target.submit` (the real L4
    proxy chose this server); None lets the target's own (L7) balancer choose.
    `size_of(input)`: the input's length in tokens for the cost model.
    `hold_s`: longest a request is held unanswered (a lost request would
    otherwise pin its handler forever); then 503.
    """

    target: Any
    server: int | None
    validate: Callable[[Any], None]
    size_of: Callable[[Any], int]
    metrics: ApiMetrics
    tenants: frozenset[str] | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    hold_s: float = 300.0
    cache_keys: str | None = None  # "exact": the body's bytes; "normalized": the input's value; None: no cache
    _uids: Any = field(default_factory=lambda: itertools.count(-1, -1))


_DOOR = web.AppKey("door", FrontDoor)
_HTTP = {Status.OK: 200, Status.BAD_REQUEST: 400, Status.TOO_MANY: 429, Status.ERROR: 500,
         Status.UNAVAILABLE: 503, Status.TIMEOUT: 503}


def _error(status: int, kind: str, reason: str, retry_after_s: float | None = None) -> web.Response:
    body: dict[str, Any] = {"error": kind, "reason": reason}
    headers = None
    if retry_after_s is not None:
        body["retry_after_s"] = round(retry_after_s, 3)
        headers = {"Retry-After": str(max(1, math.ceil(retry_after_s))),
                   "X-Retry-After-Ms": str(max(1, round(retry_after_s * 1000)))}
    return web.json_response(body, status=status, headers=headers)


def _header_int(request: web.Request, name: str) -> int | None:
    raw = request.headers.get(name)
    if raw is None or not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        return None
    return int(raw)


def _content_key(value: Any) -> int:
    """Normalised identity of an input: equal inputs, equal keys, whatever the bytes."""
    if isinstance(value, list) and all(type(v) in (int, float) for v in value):
        return hash(tuple(float(v) for v in value))
    return hash(json.dumps(value, separators=(",", ":"), sort_keys=True))


async def _predict(request: web.Request) -> web.Response:
    door = request.app[_DOOR]
    m = door.metrics
    ctype = request.headers.get("Content-Type", "")
    if ctype.split(";", 1)[0].strip().lower() != "application/json":
        m.bad.labels("wrong-content-type").inc()
        return _error(415, "wrong-content-type", f"Content-Type must be application/json, got '{ctype[:80]}'")
    if request.content_length is not None and request.content_length > door.max_body_bytes:
        m.bad.labels("too-large").inc()
        return _error(413, "too-large", f"body of {request.content_length} bytes is over the {door.max_body_bytes}-byte limit")
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        m.bad.labels("too-large").inc()
        return _error(413, "too-large", f"body is over the {door.max_body_bytes}-byte limit")
    try:
        req = parse_predict(body, door.tenants, door.validate)
    except BadRequest as exc:
        m.bad.labels(exc.kind).inc()
        return _error(exc.status, exc.kind, exc.reason)
    loop = asyncio.get_running_loop()
    now = loop.time()
    tenant = m.tenant_label(req.tenant)
    attempt_no = _header_int(request, "X-Harness-Attempt") or 0
    if attempt_no:
        m.retries.labels(tenant).inc()
    uid = _header_int(request, "X-Harness-Uid")
    # The response cache keys on (content, variant) when exact, on content otherwise.
    content, variant = 0, 0
    if door.cache_keys == "exact":
        variant = hash(body)
    elif door.cache_keys is not None:
        content = _content_key(req.input)
    a = Attempt(
        uid=next(door._uids) if uid is None else uid, tenant=req.tenant, conn=0, content=content,
        variant=variant, size=door.size_of(req.input), sent_s=now, attempt_no=attempt_no,
        request_id=req.request_id,
        deadline_s=None if req.deadline_ms is None else now + req.deadline_ms / 1000.0,
        payload=req.input,
    )
    done: asyncio.Future[Response] = loop.create_future()
    a.on_answer = lambda r: done.done() or done.set_result(r)
    door.target.submit(a, door.server)
    try:
        async with asyncio.timeout(door.hold_s):
            response = await done
    except TimeoutError:
        a.give_up()
        response = Response(Status.UNAVAILABLE, retry_after_s=1.0, reason=f"not answered within {door.hold_s:g} s")
    code = _HTTP[response.status]
    m.requests.labels(tenant, str(code)).inc()
    if response.status is Status.OK:
        m.latency.labels(tenant).observe(loop.time() - now)
        return web.json_response({"output": response.output, "cached": response.cached,
                                  "request_id": req.request_id})
    if response.status.shed:
        m.shed.labels(tenant, response.reason or str(code)).inc()
    return _error(code, response.status.name.lower(), response.reason or response.status.name,
                  response.retry_after_s if response.status.shed else None)


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
async def _json_errors(request: web.Request, handler):
    """aiohttp's own refusals (404, 405, 413) as JSON; a bug as a logged JSON 500."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, exc.reason.lower().replace(" ", "-"), exc.text or exc.reason)
    except (asyncio.CancelledError, ConnectionError):
        raise
    except Exception:  # pragma: no cover - a bug, not a bad request
        log.exception("internal error on %s %s", request.method, request.path)
        return _error(500, "internal", "internal server error")


def create_app(door: FrontDoor) -> web.Application:
    """One API server's aiohttp application."""
    app = web.Application(middlewares=[_json_errors], client_max_size=door.max_body_bytes)
    app[_DOOR] = door
    app.router.add_post("/predict", _predict)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    return app


class ApiServers:
    """N aiohttp API servers on one event loop, each on its own port.

    `start` binds each to (host, 0) and returns the ports; `stop` closes
    them, waiting at most `shutdown_s` for requests in flight.
    """

    def __init__(self, doors: list[FrontDoor], host: str = "127.0.0.1", shutdown_s: float = 1.0) -> None:
        self.doors = doors
        self.host = host
        self.shutdown_s = shutdown_s
        self.ports: list[int] = []
        self._runners: list[web.AppRunner] = []

    async def start(self) -> list[int]:
        for door in self.doors:
            runner = web.AppRunner(create_app(door), access_log=None, handle_signals=False,
                                   shutdown_timeout=self.shutdown_s)
            await runner.setup()
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, 0))
            await web.SockSite(runner, sock, backlog=1024).start()
            self._runners.append(runner)
            self.ports.append(sock.getsockname()[1])
        return self.ports

    async def stop(self) -> None:
        runners, self._runners = self._runners, []
        await asyncio.gather(*(r.cleanup() for r in runners), return_exceptions=True)
