"""A layer-4 TCP proxy: each new connection goes to the next backend, round robin.

This is the design doc's load balancer (item 1) for real: it balances
*connections*, not requests. A keep-alive connection stays on the backend it
was given, however busy that backend becomes, which is what pins heavy
clients to one API server. Bytes are relayed untouched in both directions
(asyncio protocols, no parsing), with flow control: when one side cannot keep
up, reading from the other side pauses. When either side closes, the other is
closed after its pending bytes are written.

It is also the front door's guard (targets.http.conn_table decides, this shell
acts; limits in targets.http.limits.EdgeLimits): connections over the per-client or
total cap are refused at once with a 503 (the longest-idle connection makes
room first, when there is one), a request head that does not arrive within
the header timeout is answered 408 and closed, idle connections are closed.
The backend connection is opened only when the client sends its first byte,
so an idle client costs one descriptor, not three. `stats` counts all of it.

It stamps each request's arrival: the loop time of its first byte (the first
chunk after the previous answer began), which `request_started_s` gives to the
API servers behind it by the address they see the request come from, so a
handler knows how long the request has waited in this process
(targets.http.overload.AgeGuard).

It times every request at the front door, as its client sees it: from that
first byte to its answer's first byte back, to the proxy's own refusal, or to
the client closing its connection before any answer (it gave up: its timeout),
and hands each to `on_answer` with its outcome (targets.http.outcomes, read from
the answer's status line). A connection refused at once over a cap is a request
refused at no wait. The live /metrics serve these as the front end's latency
histogram (targets.http.metrics), the one the goodput alerts read.

With a `guard` (targets.http.overload.ProxyGuard) it refuses overload before
aiohttp sees it: it keeps the requests relayed and not yet answered (from the
head's last byte to the answer's first), in arrival order, less their time at
the GPUs (the API server says when a request goes there and comes back,
`to_gpu`; it re-enters timed from its return), and while the guard's quorum of
them have waited over its limit it answers each new request itself with a
canned 503 + Retry-After (targets.http.refusal) and relays nothing. The
connection stays open when the request's end is readable from its first chunk (the rest of its
body is skipped as it arrives); else the answer says `Connection: close`. A
new connection refused on its first request never dials a backend. Clients
that pipeline (send a request before the previous answer has fully arrived;
none of the common HTTP clients do) could see the 503 inside a long answer.

Run alone: ``python -m targets.http.l4proxy_cli --listen 127.0.0.1:8000 --backend
127.0.0.1:9001 --backend 127.0.0.1:9002`` (Ctrl-C stops it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from dataclasses import dataclass, field
from typing import Callable

from targets.http.conn_table import Admit, ConnTable, Expiry
from targets.http.limits import LISTEN_BACKLOG, EdgeLimits, LogBudget, check_exposure
from targets.http.outcomes import FrontOutcome
from targets.http.overload import FrontEndWaits, ProxyGuard, relay_key
from targets.http.refusal import refusal, request_end, wants_close
from targets.http.relay_side import RelaySide

log = logging.getLogger(__name__)


@dataclass
class ProxyStats:
    accepted: int = 0
    failed: int = 0                      # backend refused or unreachable
    active: int = 0
    per_backend: list[int] = field(default_factory=list)  # connections assigned, ever
    bytes_up: int = 0
    bytes_down: int = 0
    refused_client: int = 0              # over the per-client-address cap
    refused_total: int = 0               # over the total cap, nothing idle to close
    evicted: int = 0                     # idle, closed to make room for a new connection
    header_timeouts: int = 0             # 408: the head did not arrive in time
    idle_timeouts: int = 0
    dropped: int = 0                     # the client reset the connection
    refused_overload: int = 0            # answered 503 by the guard, not relayed


def _canned(status: str, kind: str, reason: str) -> bytes:
    body = json.dumps({"error": kind, "reason": reason}).encode()
    head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n" + ("Retry-After: 1\r\n" if status.startswith("503") else "") + "\r\n")
    return head.encode() + body


_REFUSED = _canned("503 Service Unavailable", "too-many-connections",
                   "the proxy holds its connection limit for this client or in all; retry later")
_UNREACHABLE = _canned("503 Service Unavailable", "backend-unreachable",
                       "the proxy could not reach an API server; retry later")
# A loopback dial that takes this long lost its SYN (a full accept queue; Linux retries it 1, 3,
# 7 s later): the request is answered 503 at the SLO's bound (10 x 0.3 s), not held for the retries.
CONNECT_TIMEOUT_S = 3.0
_HEAD_TIMEOUT = _canned("408 Request Timeout", "header-timeout", "the request head did not arrive in time")


class L4Proxy:
    """Listens on (host, port); connection k goes to backends[k mod n].

    `start()` returns the bound port (port 0 picks a free one); `stop()` closes
    the listener and every relayed connection. A host beyond loopback needs
    `expose=True` (targets.http.limits.check_exposure). `limits.max_connections`
    is lowered at start to what the process's descriptor limit can hold.
    """

    def __init__(self, backends: list[tuple[str, int]], host: str = "127.0.0.1", port: int = 0,
                 limits: EdgeLimits | None = None, expose: bool = False, guard: ProxyGuard | None = None) -> None:
        if not backends:
            raise ValueError("an L4 proxy needs at least one backend")
        self.exposed = check_exposure(host, expose)
        self.backends = list(backends)
        self.host = host
        self.port = port
        self.limits = limits or EdgeLimits()
        self.table: ConnTable[RelaySide] = ConnTable(self.limits)
        self.stats = ProxyStats(per_backend=[0] * len(backends))
        self._drops = LogBudget(per_window=5, window_s=10.0)
        self._next = 0
        self._server: asyncio.AbstractServer | None = None
        self._clients: set[RelaySide] = set()
        self._by_backend: dict[tuple, RelaySide] = {}  # backend connection's local address -> its client
        self.guard = guard
        self.waits = FrontEndWaits()  # clients whose request's head is in and unanswered, since its end
        # Each request's outcome and seconds at the front door, as it ends (targets.http.metrics).
        self.on_answer: Callable[[FrontOutcome, float], None] | None = None
        self._tasks: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> float:
        return self._loop.time()  # type: ignore[union-attr]  # start() sets it, before any connection

    async def start(self) -> int:
        loop = self._loop = asyncio.get_running_loop()
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.limits = self.limits.for_fd_limit(soft)
        self.table = ConnTable(self.limits)
        self._server = await loop.create_server(lambda: RelaySide(self, up=True), self.host, self.port,
                                                backlog=LISTEN_BACKLOG)
        self.port = self._server.sockets[0].getsockname()[1]
        self._spawn(self._sweep())
        return self.port

    def request_started_s(self, key: tuple | None) -> float | None:
        """When the request now on the backend connection ``key`` (`relay_key` as its API server
        sees it) reached this proxy: its first byte's loop time. None when that is no
        connection of this proxy's."""
        client = self._by_backend.get(key) if key else None
        return None if client is None else client.head_s

    def to_gpu(self, key: tuple | None) -> Callable[[], None] | None:
        """The request now on the backend connection ``key`` goes to the GPUs: its time there is
        not the front end's (admission judges it), so it leaves the guard's count. Returns what
        to call when it is back with its answer (it waits again, timed from then; nothing
        happens if that request has ended meanwhile), or None when it is not in flight here."""
        client = self._by_backend.get(key) if key else None
        request = None if client is None else self.waits.current(client)
        if request is None or not self.waits.to_gpu(client, request):
            return None

        def back() -> None:
            self.waits.from_gpu(client, request, self.now())

        return back

    def _ended(self, client: RelaySide, outcome: FrontOutcome, now: float) -> None:
        """``client``'s request ended with ``outcome`` at ``now``: time it from its first byte, once."""
        client.pending = False
        if self.on_answer is not None and client.head_s is not None:
            self.on_answer(outcome, max(0.0, now - client.head_s))

    def _refused(self, client: RelaySide, data: bytes, now: float) -> bool:
        """Answer the request that ``data`` starts with a 503 when the guard says so."""
        guard = self.guard
        assert guard is not None  # its caller asks only when there is one
        wait = guard.signal(self.waits.oldest(now, guard.quorum))
        retry = guard.decide(wait)
        if retry is None:
            return False
        self.stats.refused_overload += 1
        self._ended(client, FrontOutcome.SHED, now)
        rest = request_end(data)
        ends = wants_close(data)
        answer = refusal(retry, f"front end overloaded: its requests in flight have waited {wait * 1000:.0f} ms",
                         close=rest is None or ends)
        if rest is None:
            self._close(client, answer)
            return True
        client.skip = rest
        assert client.transport is not None  # it sent data, so it is connected
        client.transport.write(answer)
        self.table.downstream(client, now)  # answered: idle (keep-alive, or until the client closes)
        if ends and client.transport.can_write_eof():
            # It asked to end the connection: our FIN after the answer (a client reading to the end
            # waits for it), while the rest of its body is still read and skipped, so closing never
            # meets unread bytes (a reset that could discard the answer). The idle timeout ends a
            # client that never closes its side.
            client.transport.write_eof()
            client.fin_sent = True
        return True

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _admit(self, client: RelaySide) -> None:
        assert client.transport is not None  # called from its connection_made
        peer = client.transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        verdict, victim = self.table.admit(client, address, self.now())
        if verdict is Admit.REFUSE_CLIENT or verdict is Admit.REFUSE_TOTAL:
            if verdict is Admit.REFUSE_CLIENT:
                self.stats.refused_client += 1
            else:
                self.stats.refused_total += 1
            client.closed = True  # never counted as active
            if self.on_answer is not None:  # the request it was to carry, refused at once
                self.on_answer(FrontOutcome.SHED, 0.0)
            client.transport.write(_REFUSED)
            client.transport.close()
            return
        if victim is not None:
            self.stats.evicted += 1
            self._close(victim)
        client.index = self._next
        self._next = (client.index + 1) % len(self.backends)
        self.stats.accepted += 1
        self.stats.active += 1
        self.stats.per_backend[client.index] += 1
        self._clients.add(client)

    async def _connect(self, client: RelaySide) -> None:
        host, port = self.backends[client.index]
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                _, backend = await loop.create_connection(lambda: RelaySide(self, up=False), host, port)
        except (OSError, TimeoutError):
            self.stats.failed += 1
            if client.pending:
                self._ended(client, FrontOutcome.FAILED, self.now())
            if client.transport is not None and not client.closed:
                self._close(client, _UNREACHABLE)  # answered, never left to the client's timeout
            return
        assert client.transport is not None and backend.transport is not None  # both connected
        if client.closed:  # the client gave up (or was closed) while we connected
            backend.transport.close()
            return
        client.peer, backend.peer = backend, client
        key = relay_key(backend.transport.get_extra_info("sockname"), backend.transport.get_extra_info("peername"))
        if key is not None:
            client.backend_addr = key
            self._by_backend[key] = client
        for chunk in client.buffer:
            backend.transport.write(chunk)
        client.buffer.clear()
        client.transport.resume_reading()

    def _close(self, client: RelaySide, first: bytes = b"") -> None:
        """Close a client connection (and its backend), after `first` bytes to the client."""
        self.table.remove(client)
        for side in (client, client.peer):
            if side is not None and side.transport is not None and not side.closed:
                if side is client and first:
                    side.transport.write(first)
                side.transport.close()

    async def _sweep(self) -> None:
        # Wake at the earliest deadline, and at least every sweep_s: a connection
        # that arrives meanwhile has a deadline past that (sweep_s < timeouts).
        while True:
            due = self.table.next_deadline()
            wait = self.limits.sweep_s if due is None else min(self.limits.sweep_s, due - self.now())
            await asyncio.sleep(max(0.001, wait))
            for client, why in self.table.expire(self.now()):
                if why is Expiry.HEADER:
                    self.stats.header_timeouts += 1
                    if client.pending:  # answered 408
                        self._ended(client, FrontOutcome.FAILED, self.now())
                    self._close(client, _HEAD_TIMEOUT)
                else:
                    self.stats.idle_timeouts += 1
                    self._close(client)

    def _gone(self, client: RelaySide, exc: Exception | None) -> None:
        self.table.remove(client)
        self.waits.end(client)
        if client.backend_addr is not None and self._by_backend.get(client.backend_addr) is client:
            del self._by_backend[client.backend_addr]
        if client in self._clients:
            self._clients.discard(client)
            self.stats.active -= 1
        if exc is not None:
            self.stats.dropped += 1
            suppressed = self._drops.allow(self.now())
            if suppressed is not None:
                more = f" ({suppressed} more since the last line)" if suppressed else ""
                log.info("client dropped its connection: %s%s", type(exc).__name__, more)

    async def stop(self) -> None:
        self.on_answer = None  # the requests cut off now were not given up on by their clients
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for client in list(self._clients):
            for side in (client, client.peer):
                if side is not None and side.transport is not None:
                    side.transport.abort()
        self._clients.clear()
        self._by_backend.clear()
        self.waits.clear()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            except (asyncio.TimeoutError, RuntimeError):
                pass
            self._server = None

