"""HAProxy as a live target's balancer: the policy in HAProxy's terms, and its configuration file.

The design doc puts "a layer-4 load balancer, round-robin" in front of the API
servers; operators would run HAProxy (Debian's `haproxy` 2.6 here) rather than
the project's own proxy (targets.http.l4proxy). `HaproxyPolicy.for_target`
says what HAProxy runs for a target, and `haproxy_config` writes it. Pure
functions of data: the process is targets.http.haproxy_proc's.

What maps, and what does not (the project's proxy on the left):

- naive (routing ``l4-round-robin``, no proxy guard): ``mode tcp`` with
  ``balance roundrobin``, HAProxy's own layer 4: each new connection goes to the
  next API server and keeps it, as the doc's balancer does.
- hardened (least-loaded routing, the proxy's guard `frontend_proxy_share`):
  ``mode http`` with ``balance leastconn`` (HAProxy reuses idle server
  connections, so an API server's open connections are its requests in flight)
  and HAProxy's overload policy in place of the proxy's guard: each API server
  takes at most ``server_maxconn`` requests at once, the rest wait in HAProxy's
  queue, and one that waited ``timeout queue`` is answered 503 with
  Retry-After (the errorfile `refusal_503`, the same body the proxy's refusal
  carries). The queue timeout is the guard's own budget (`frontend_proxy_share`
  x SLO); the concurrency cap is the fleet's ceiling rate held for one SLO
  (Little's law: the most requests that can be in flight and still be answered
  within the SLO at full speed), shared over the API servers. Not the same
  signal: the guard times requests waiting in the front end with their time at
  the GPUs left out; HAProxy times only its own queue, in front of a cap that
  counts the GPU time too. `/metrics` and `/healthz` go to a backend of their
  own with no cap, so a scrape is never queued behind the traffic.
- both: the connection caps (`EdgeLimits.max_connections` as the frontend's
  ``maxconn``; `max_connections_per_client` as a stick table on the source
  address, ``tcp-request connection reject`` past it) and the idle timeout
  (``timeout client``, and ``timeout http-keep-alive`` in http mode). The
  header timeout is ``timeout http-request`` (408) in http mode only; in tcp
  mode HAProxy does not read heads, and the API server's own idle timeout
  bounds a slow head.
- no equivalent: the proxy answers a connection over its caps with a 503 and
  closes the longest-idle one to make room; HAProxy stops accepting at
  ``maxconn`` (the kernel's backlog holds new ones) and resets one over the
  per-client cap. The proxy's arrival stamps (the API servers' age guard,
  `frontend_age_share`) need the proxy on the servers' own loop: behind HAProxy
  a request's age is unknown and that guard admits it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from targets.http.limits import EdgeLimits
from targets.http.refusal import refusal

__all__ = ["Balancer", "HaproxyPolicy", "haproxy_config", "refusal_503"]

HOLD_S = 300.0  # the longest an API server holds a request (targets.http.server.FrontDoor.hold_s)


class Balancer(StrEnum):
    """What stands in front of a live target's API servers."""

    PYTHON = "python"    # targets.http.l4proxy, on the API servers' own event loop
    HAPROXY = "haproxy"  # HAProxy in a process of its own (targets.http.haproxy_proc)

    @classmethod
    def parse(cls, text: str) -> "Balancer":
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"balancer '{text}': valid are {', '.join(b.value for b in cls)}") from None


def _seconds(s: float) -> str:
    """An HAProxy time: whole milliseconds (at least 1)."""
    return f"{max(1, round(s * 1000))}ms"


@dataclass(frozen=True)
class HaproxyPolicy:
    """What HAProxy runs for one target. `mode` "tcp" or "http"; `balance` HAProxy's algorithm;
    `server_maxconn` requests an API server takes at once (None: no cap, no queue);
    `queue_timeout_s` how long one may wait in HAProxy's queue before its 503;
    `retry_after_s` what that 503 asks; `hold_s` the longest HAProxy waits for an answer."""

    mode: str
    balance: str
    limits: EdgeLimits
    server_maxconn: int | None = None
    queue_timeout_s: float | None = None
    retry_after_s: float = 0.05
    hold_s: float = HOLD_S

    def __post_init__(self) -> None:
        if self.mode not in ("tcp", "http"):
            raise ValueError(f"mode must be tcp or http, got {self.mode!r}")
        if self.balance not in ("roundrobin", "leastconn"):
            raise ValueError(f"balance must be roundrobin or leastconn, got {self.balance!r}")
        if self.server_maxconn is not None and self.server_maxconn < 1:
            raise ValueError(f"server_maxconn must be >= 1, got {self.server_maxconn}")
        if (self.server_maxconn is None) != (self.queue_timeout_s is None):
            raise ValueError("server_maxconn and queue_timeout_s go together (a cap needs a queue timeout)")
        if self.queue_timeout_s is not None and self.mode != "http":
            raise ValueError("a queue timeout answers 503, which needs mode http")

    @classmethod
    def for_target(cls, config: Any, limits: EdgeLimits | None = None) -> "HaproxyPolicy":
        """The policy for a TargetConfig (see the module doc): layer 4 round robin for the doc's
        balancer, HTTP with a capped queue where the target's proxy guards overload."""
        limits = limits or EdgeLimits()
        l4 = getattr(config.routing, "value", config.routing) == "l4-round-robin"
        share = config.frontend_proxy_share
        if share is None:
            return cls("tcp" if l4 else "http", "roundrobin" if l4 else "leastconn", limits)
        ceiling_rps = config.fleet_gpus * config.batch_size / config.batch_time_s
        cap = max(1, math.ceil(ceiling_rps * config.slo_s / config.api_servers))
        return cls("http", "roundrobin" if l4 else "leastconn", limits, server_maxconn=cap,
                   queue_timeout_s=max(0.001, share * config.slo_s))

    def figures(self) -> dict[str, Any]:
        """The policy as plain data (the result's `live.balancer.policy`)."""
        return {"mode": self.mode, "balance": self.balance, "server_maxconn": self.server_maxconn,
                "queue_timeout_s": self.queue_timeout_s, "max_connections": self.limits.max_connections,
                "max_connections_per_client": self.limits.max_connections_per_client,
                "idle_timeout_s": self.limits.idle_timeout_s,
                "header_timeout_s": self.limits.header_timeout_s if self.mode == "http" else None}


def refusal_503(policy: HaproxyPolicy) -> bytes:
    """HAProxy's errorfile for 503: the proxy guard's own answer (targets.http.refusal). No
    `Connection: close`: HAProxy keeps the client's connection as it would after any answer."""
    wait = policy.queue_timeout_s or 0.0
    return refusal(max(policy.retry_after_s, wait),
                   f"front end overloaded: queued at the balancer past {wait * 1000:.0f} ms")


def haproxy_config(policy: HaproxyPolicy, listen: tuple[str, int], backends: list[tuple[str, int]],
                   stats_socket: str, errorfile_503: str | None = None, name: str = "target") -> str:
    """The configuration file: one frontend on `listen`, the API servers as `backends`, a stats
    socket at `stats_socket`; `errorfile_503` (http mode) the file holding `refusal_503`."""
    if not backends:
        raise ValueError("HAProxy needs at least one API server behind it")
    lim = policy.limits
    http = policy.mode == "http"
    host, port = listen
    out = [f"# written by harness (targets.http.haproxy) for {name}: mode {policy.mode}, balance {policy.balance}",
           "global",
           f"    maxconn {2 * lim.max_connections + 64}",  # the frontend's connections and one to a server each
           "    nbthread 1",                               # one core: the machine's other runs the API servers
           f"    stats socket {stats_socket} mode 600 level user",
           "",
           "defaults",
           f"    mode {policy.mode}",
           "    timeout connect 5s",
           f"    timeout client {_seconds(lim.idle_timeout_s)}",
           f"    timeout server {_seconds(policy.hold_s if http else lim.idle_timeout_s)}"]
    if http:
        out += [f"    timeout http-request {_seconds(lim.header_timeout_s)}",
                f"    timeout http-keep-alive {_seconds(lim.idle_timeout_s)}",
                "    option http-keep-alive"]
        if policy.queue_timeout_s is not None:
            out.append(f"    timeout queue {_seconds(policy.queue_timeout_s)}")
        if errorfile_503 is not None:
            out.append(f"    errorfile 503 {errorfile_503}")
    out += ["",
            "frontend api",
            f"    bind {host}:{port}",
            f"    maxconn {lim.max_connections}",
            "    stick-table type ip size 100k store conn_cur",
            "    tcp-request connection track-sc0 src",
            f"    tcp-request connection reject if {{ sc_conn_cur(0) gt {lim.max_connections_per_client} }}"]
    if http:
        out.append("    use_backend ops if { path /metrics } || { path /healthz }")
    out += ["    default_backend api", "", "backend api", f"    balance {policy.balance}"]
    cap = f" maxconn {policy.server_maxconn}" if policy.server_maxconn is not None else ""
    out += [f"    server api{i} {h}:{p}{cap}" for i, (h, p) in enumerate(backends)]
    if http:  # scrapes and health checks: never queued behind the traffic's cap
        out += ["", "backend ops", "    balance roundrobin"]
        out += [f"    server api{i} {h}:{p}" for i, (h, p) in enumerate(backends)]
    return "\n".join(out) + "\n"
