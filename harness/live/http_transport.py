"""The HTTP transport: the driver's attempts as real requests on keep-alive connections.

Implements the `Transport` contract of targets.client (`send(attempt,
timeout_s, on_done)`, `on_done` called exactly once) over HTTP/1.1. It is a
lean client on asyncio protocols with the httptools parser rather than
aiohttp's client, which costs about twice the CPU per request (see
benchmarks/driver_vs_locust.py); the servers it drives are aiohttp.

Connections: each tenant has its own pool of keep-alive connections, so the
layer-4 balancer pins that tenant's connections, not its requests. HTTP/1.1
carries one request at a time per connection, so when all of a tenant's
connections are busy an attempt opens another one (open loop: it never waits
for earlier requests), up to `max_connections` in all; beyond that it waits
for the first free one, and the wait counts in its latency. On timeout the
client closes that connection (HTTP/1.1 has no other way to cancel), as
common HTTP clients do; the server is not told and keeps working.

Send lag: for every first attempt, the time the driver issued it minus its
scheduled start (time.monotonic, the loops' own clock), so a run whose driver
fell behind says so; and the time its bytes were written, which adds any wait
for a connection. Latency is measured from the scheduled start either way.
Lags are appended to arrays and put into HdrHistograms in bulk when asked for
(`lag_hist`, `write_hist`): recording each into an HdrHistogram in Python cost
about a tenth of the driver's CPU per request.

Client timeouts fire in batches up to TIMEOUT_SLACK_S late (one timer for all
the attempts due within it, rather than one wake-up per request).

Errors: HTTP statuses and connection errors are counted, with the first text of each (harness.live.validity).
"""

from __future__ import annotations

import asyncio
import json
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, cast

import httptools
import numpy as np
from hdrh.histogram import HdrHistogram

from harness.engine.hdr import histogram_of
from harness.live.payloads import Payloads
from targets.delayline import DelayLines
from targets.protocol import TIMEOUT_RESPONSE, Attempt, Response, Status

# 401 (token), 409 (request ID reused with another input) and the 4xx of a malformed
# body are the client's fault: not retried. 408 (the server timed out the body) is not.
# 504: a server that gave up on a request it queued too long (LitServe's `timeout`) refused
# it, as a 503 does: shed, not failed.
_STATUS = {200: Status.OK, 400: Status.BAD_REQUEST, 401: Status.BAD_REQUEST, 408: Status.ERROR,
           409: Status.BAD_REQUEST, 413: Status.BAD_REQUEST, 415: Status.BAD_REQUEST,
           422: Status.BAD_REQUEST, 429: Status.TOO_MANY, 503: Status.UNAVAILABLE, 504: Status.UNAVAILABLE}
_PLAIN = {code: Response(status) for code, status in _STATUS.items()}
_ERROR = Response(Status.ERROR, reason="unexpected HTTP status")
_REASON_BYTES = 600  # of an error body kept to quote (reasons are at most 200 characters)
TIMEOUT_SLACK_S = 0.002
_HEAD = (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
         b"X-Harness-Uid: %d\r\nX-Harness-Attempt: %d\r\n\r\n")


class _Conn(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, owner: "HttpTransport", pool: "_Pool") -> None:
        self.owner = owner
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.pending: Attempt | None = None
        self.retry_after_s: float | None = None
        self.body: bytearray | None = None  # an error body being kept (the first of its status)
        self.dead = False

    # -- asyncio.Protocol --------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's is one

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._fail("malformed HTTP response")

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail("connection closed by the server" + (f": {_os_error(exc)}" if exc else ""))

    # -- httptools callbacks --------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.retry_after_s = None
        self.body = None

    def on_headers_complete(self) -> None:
        code = self.parser.get_status_code()
        if code >= 300 and code not in self.owner.error_reasons:
            self.body = bytearray()

    def on_body(self, body: bytes) -> None:
        if self.body is not None and len(self.body) < _REASON_BYTES:
            self.body += body[:_REASON_BYTES - len(self.body)]

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) in (11, 16):  # cheap filter before lower-casing
            key = name.lower()
            try:
                if key == b"x-retry-after-ms":
                    self.retry_after_s = int(value) / 1000.0
                elif key == b"retry-after" and self.retry_after_s is None:
                    self.retry_after_s = float(value)
            except ValueError:
                pass

    def on_message_complete(self) -> None:
        a = self.pending
        if a is None:
            return
        self.pending = None
        self.owner._inflight.pop(a, None)
        code = self.parser.get_status_code()
        owner = self.owner
        owner.status_counts[code] = owner.status_counts.get(code, 0) + 1
        if self.body is not None:
            owner.error_reasons.setdefault(code, _reason(bytes(self.body)))
            self.body = None
        if self.retry_after_s is not None and code in (429, 503):
            response = Response(_STATUS[code], retry_after_s=self.retry_after_s)
        else:
            response = _PLAIN.get(code, _ERROR)
        if self.parser.should_keep_alive():
            self.pool.release(self)  # before answering: an immediate retry may reuse it
        else:
            self.close()
        a.answer(response)

    # -- use -------------------------------------------------------------------------------
    def send(self, a: Attempt) -> None:
        owner = self.owner
        self.pending = a
        owner._inflight[a] = self
        deadline_ms = None
        if a.deadline_s is not None:
            deadline_ms = max(1, int((a.deadline_s - time.monotonic()) * 1000))
        rid = a.request_id
        if rid is not None:  # a client's number for its request (targets.client): the tenant's name with it
            rid = f"{owner.rid_prefix}{a.tenant}-{rid}" if isinstance(rid, int) else owner.rid_prefix + rid
        body = owner.payloads.body(a.tenant, a.content, a.size, rid, deadline_ms, a.variant)
        if a.attempt_no == 0 and owner._sched is not None:
            owner._writes.append(time.monotonic() - owner._t0 - owner._sched[a.uid])
        self.transport.write(owner._head % (len(body), a.uid, a.attempt_no) + body)  # type: ignore[union-attr]  # sent only on a connected one

    def close(self) -> None:
        if not self.dead:
            self.dead = True
            self.pool.open -= 1
            self.owner.open_now -= 1
            if self.transport is not None:
                self.transport.abort()

    def _fail(self, reason: str) -> None:
        a = self.pending
        self.pending = None
        self.close()
        if a is not None:
            self.owner._inflight.pop(a, None)
            self.owner.connection_error(reason)
            a.answer(Response(Status.ERROR, reason=reason))


@dataclass
class _Pool:
    """One tenant's connections: idle ones (FIFO, so traffic spreads over all of
    them as the sim's round robin does) and attempts waiting for one."""

    tenant: str
    idle: deque = field(default_factory=deque)
    waiting: deque = field(default_factory=deque)
    open: int = 0
    connecting: int = 0
    opened: int = 0

    def release(self, conn: _Conn) -> None:
        waiting = self.waiting
        while waiting:
            a = waiting.popleft()
            if not a.done:
                conn.send(a)
                return
        self.idle.append(conn)


class HttpTransport:
    """Open-loop HTTP transport to http://host:port/path (see the module docstring)."""

    def __init__(self, host: str, port: int, path: str = "/predict", payloads: Payloads | None = None,
                 max_connections: int = 4000) -> None:
        self.host = host
        self.port = port
        self.path = path
        self.payloads = payloads or Payloads()
        self.max_connections = max_connections
        self.loop = asyncio.get_running_loop()
        self._head = _HEAD.replace(b"POST %s", b"POST " + path.encode()).replace(
            b"Host: %s", b"Host: " + f"{host}:{port}".encode())
        self._pools: dict[str, _Pool] = {}
        self._inflight: dict[Attempt, _Conn] = {}
        self._timeouts = DelayLines(self._expire, self.loop, resolution_s=TIMEOUT_SLACK_S)
        self._tasks: set[asyncio.Task] = set()
        self._t0 = 0.0
        self._sched: list[float] | None = None
        self.open_now = 0
        self.max_open = 0
        self.connect_failures = 0
        self.waited = 0
        self._lags = array("d")     # the driver's: issued - scheduled (s), per first attempt
        self._writes = array("d")   # on the wire: written - scheduled (s)
        self.status_counts: dict[int, int] = {}
        self.error_reasons: dict[int, str] = {}    # status -> the first such response's reason
        self.connection_errors = 0
        self.first_connection_error: str | None = None
        self.first_connect_failure: str | None = None
        # Put before every request ID: a warm-up's IDs must not collide with the run's
        # (a deduplicating server would answer the run's requests from the warm-up's).
        self.rid_prefix = ""

    # -- lifecycle ---------------------------------------------------------------------------
    async def open(self, connections: dict[str, int]) -> None:
        """Open `connections[tenant]` keep-alive connections per tenant before the run."""
        tasks = [self._open(self._pool(t)) for t, n in connections.items() for _ in range(n)]
        await asyncio.gather(*tasks)

    def begin(self, t0: float, sched_s: list[float]) -> None:
        """Scheduled starts (loop seconds t0 + sched_s[uid]) that send lag is measured against."""
        self._t0, self._sched = t0, sched_s

    def reset_stats(self) -> None:
        """Start the send-lag, status and error figures afresh (after a warm-up); the
        connections stay open and their counts keep counting."""
        self._lags, self._writes = array("d"), array("d")
        self.waited = self.connect_failures = self.connection_errors = 0
        self.status_counts, self.error_reasons = {}, {}
        self.first_connection_error = self.first_connect_failure = None

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for pool in self._pools.values():
            for conn in list(pool.idle):
                conn.close()
            pool.idle.clear()
        for conn in list(self._inflight.values()):
            conn.pending = None
            conn.close()
        self._inflight.clear()

    # -- Transport -----------------------------------------------------------------------------
    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        if attempt.attempt_no == 0 and self._sched is not None:
            self._lags.append(time.monotonic() - self._t0 - self._sched[attempt.uid])
        attempt.on_answer = on_done
        self._timeouts.push(timeout_s, attempt)
        pool = self._pools.get(attempt.tenant) or self._pool(attempt.tenant)
        idle = pool.idle
        while idle:
            conn = idle.popleft()
            if not conn.dead:
                conn.send(attempt)
                return
        self.waited += 1
        pool.waiting.append(attempt)
        if pool.connecting < len(pool.waiting) and self.open_now + self._connecting() < self.max_connections:
            task = self._open(pool)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _expire(self, a: Attempt) -> None:
        on_done = a.on_answer
        if a.give_up():
            assert on_done is not None  # set until answered, and it was not
            conn = self._inflight.pop(a, None)
            if conn is not None:
                conn.pending = None
                conn.close()  # HTTP/1.1 cannot cancel a request but by closing its connection
            on_done(TIMEOUT_RESPONSE)

    # -- connections -----------------------------------------------------------------------------
    def _pool(self, tenant: str) -> _Pool:
        pool = self._pools.get(tenant)
        if pool is None:
            pool = self._pools[tenant] = _Pool(tenant)
        return pool

    def _connecting(self) -> int:
        return sum(p.connecting for p in self._pools.values())

    def _open(self, pool: _Pool) -> asyncio.Task:
        pool.connecting += 1  # counted now, so a burst cannot overshoot max_connections
        return self.loop.create_task(self._connect(pool))

    async def _connect(self, pool: _Pool) -> None:
        try:
            _, conn = await self.loop.create_connection(lambda: _Conn(self, pool), self.host, self.port)
        except OSError as exc:
            pool.connecting -= 1
            self.connect_failures += 1
            reason = f"cannot connect to {self.host}:{self.port}: {_os_error(exc)}"
            self.connection_error(reason)
            self.first_connect_failure = self.first_connect_failure or reason
            while pool.waiting:  # fail one waiting attempt per failed connection
                a = pool.waiting.popleft()
                if not a.done:
                    a.answer(Response(Status.ERROR, reason=reason))
                    break
            return
        pool.connecting -= 1
        pool.open += 1
        pool.opened += 1
        self.open_now += 1
        self.max_open = max(self.max_open, self.open_now)
        pool.release(conn)

    def connection_error(self, reason: str) -> None:
        """An attempt lost to the connection (refused, reset, closed, malformed answer)."""
        self.connection_errors += 1
        if self.first_connection_error is None:
            self.first_connection_error = reason

    # -- send lag -------------------------------------------------------------------------------
    @property
    def lag_hist(self) -> HdrHistogram:
        """Send lags so far (microseconds, at least 1)."""
        return histogram_of(np.frombuffer(self._lags, dtype=np.float64))

    @property
    def write_hist(self) -> HdrHistogram:
        """Write lags so far (microseconds, at least 1)."""
        return histogram_of(np.frombuffer(self._writes, dtype=np.float64))

    def stats(self) -> dict[str, Any]:
        """Lags of first attempts (s) and connection counts.

        `send_lag_s`: when the driver issued each request minus its scheduled
        start: the driver's own lateness. `write_lag_s`: when its bytes were
        written minus the scheduled start, which adds waiting for a free or new
        connection (a target slow to accept shows here, not in send_lag_s).
        """
        lags = np.frombuffer(self._lags, dtype=np.float64)
        return {
            "send_lag_s": lag_figures(self.lag_hist),
            "write_lag_s": lag_figures(self.write_hist),
            "sends_measured": len(lags),
            "late_over_10ms": int(np.count_nonzero(lags > 0.010)),
            "connections_opened": {t: p.opened for t, p in self._pools.items()},
            "max_open_connections": self.max_open,
            "connection_cap": self.max_connections,
            "connect_failures": self.connect_failures,
            "first_connect_failure": self.first_connect_failure,
            "waited_for_connection": self.waited,
            "http_status": {str(code): n for code, n in sorted(self.status_counts.items())},
            "http_errors": {str(code): text for code, text in sorted(self.error_reasons.items())},
            "connection_errors": {"count": self.connection_errors, "first": self.first_connection_error},
        }


def lag_figures(h: HdrHistogram) -> dict[str, float | None]:
    """p50, p99, p999 and max (s) of a histogram of microseconds (None when empty)."""
    n = h.get_total_count()
    out = {k: (h.get_value_at_percentile(q) / 1e6 if n else None) for k, q in (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))}
    out["max"] = h.get_max_value() / 1e6 if n else None
    return out


def _os_error(exc: BaseException) -> str:
    """'Connection refused', not '[Errno 111] Connect call failed ('127.0.0.1', 1)'."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _reason(body: bytes) -> str:
    """An error body as one short line: its JSON `error` and `reason`, else its text."""
    text = body.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and ("error" in doc or "reason" in doc):
        text = ": ".join(str(doc[k]) for k in ("error", "reason") if doc.get(k))
    return " ".join(text.split())[:200]
