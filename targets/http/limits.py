"""Limits at a live target's edges (the L4 proxy and the API servers), and exposure.

`EdgeLimits` is the one config both hops read; the defaults are what
`harness serve` uses. Times are seconds, sizes bytes:

- `idle_timeout_s`: a connection with no request in progress (new, or
  keep-alive after an answer) is closed after this long (proxy and API
  server; aiohttp's default is 3,630 s). At the API server it also bounds
  how long a request's head may take (aiohttp times the wait for a head).
- `header_timeout_s`: a request's head (request line and headers) must arrive
  within this long of its first byte; else 408 and close (at the proxy).
- `body_timeout_s`: a request's body must arrive within this long of its
  head; else 408 and close (API server).
- `max_connections`, `max_connections_per_client`: open connections at the
  proxy, in all and per client address. A new connection past the per-client
  cap is refused at once (503, closed); past the total cap the longest-idle
  connection is closed to make room, or the new one refused when none is idle.
- `max_line_bytes`, `max_field_bytes`, `max_headers`: the HTTP parser's limits.

`check_exposure` is the rule that binding beyond loopback needs an explicit
`expose=True`. `LogBudget` rate-limits a log line (one per dropped client).
`bearer_ok` checks a bearer token (the API servers', the LLM server's);
`LISTEN_BACKLOG` is every listening socket's accept queue.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from typing import Final

# Connections the kernel may hold for accept on a listening socket (it caps this at
# net.core.somaxconn, 4,096 here). The proxy opens one connection to an API server per client
# connection it relays, all at once in a burst; past the backlog the kernel drops their SYNs,
# and each dropped one is retried 1, 3, 7, 15 s later: 2,000 concurrent requests through a
# 1,024-deep backlog overflowed it ~970 times (TcpExtListenOverflows), none with 4,096.
LISTEN_BACKLOG: Final = 65_535


def bearer_ok(header: str, token: str) -> bool:
    """Whether an Authorization header carries ``Bearer <token>`` (compared in constant time)."""
    expected = f"Bearer {token}".encode("utf-8", "surrogateescape")
    return hmac.compare_digest(header.encode("utf-8", "surrogateescape"), expected)


@dataclass(frozen=True)
class EdgeLimits:
    idle_timeout_s: float = 60.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 15.0
    max_connections: int = 4096
    max_connections_per_client: int = 2048
    max_line_bytes: int = 8190
    max_field_bytes: int = 8190
    max_headers: int = 64

    def __post_init__(self) -> None:
        for name in ("idle_timeout_s", "header_timeout_s", "body_timeout_s"):
            value = getattr(self, name)
            if not 0 < value <= 3600:
                raise ValueError(f"{name} must be within (0, 3600] s, got {value}")
        if self.max_connections < 1 or self.max_connections_per_client < 1:
            raise ValueError("max_connections and max_connections_per_client must be >= 1")
        if self.max_connections_per_client > self.max_connections:
            raise ValueError("max_connections_per_client must be <= max_connections")
        for name in ("max_line_bytes", "max_field_bytes", "max_headers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")

    @property
    def sweep_s(self) -> float:
        """How often the proxy looks for expired connections: a tenth of the
        shortest timeout (at most 0.25 s), so a timeout fires at most that late."""
        return min(0.25, self.header_timeout_s / 10, self.idle_timeout_s / 10)

    def for_fd_limit(self, fd_limit: int, per_connection: int = 3, reserve: int = 256) -> "EdgeLimits":
        """These limits with `max_connections` lowered, if needed, to what
        `fd_limit` descriptors can hold (`per_connection` each, `reserve` kept)."""
        from dataclasses import replace

        fit = max(1, (fd_limit - reserve) // per_connection)
        if fit >= self.max_connections:
            return self
        return replace(self, max_connections=fit, max_connections_per_client=min(self.max_connections_per_client, fit))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, expose: bool) -> bool:
    """True if binding `host` exposes the service beyond this machine.

    Raises ValueError when it would and `expose` was not given: serving on
    every interface must be a decision, not a default.
    """
    exposed = not is_loopback(host)
    if exposed and not expose:
        raise ValueError(f"binding {host} serves the API beyond loopback; pass --expose (expose=True) "
                         "to do it on purpose, and consider a bearer token (--token or HARNESS_TOKEN)")
    return exposed


class LogBudget:
    """At most `per_window` lines per `window_s`; counts what it suppresses.

    `allow(now)` returns None to suppress the line, or the number of lines
    suppressed since the last one allowed (to say so in the line).
    """

    def __init__(self, per_window: int = 10, window_s: float = 10.0) -> None:
        if per_window < 1 or window_s <= 0:
            raise ValueError("a log budget needs per_window >= 1 and window_s > 0")
        self.per_window = per_window
        self.window_s = window_s
        self._start = float("-inf")
        self._used = 0
        self._suppressed = 0

    def allow(self, now: float) -> int | None:
        if now - self._start >= self.window_s:
            self._start, self._used = now, 0
        if self._used >= self.per_window:
            self._suppressed += 1
            return None
        self._used += 1
        suppressed, self._suppressed = self._suppressed, 0
        return suppressed
