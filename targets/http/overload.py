"""Front-end overload: an API server that sheds when its requests are old or its loop is behind.

Admission control (targets.admission) predicts GPU queueing; it cannot see a
front end whose CPU is the bottleneck, where requests queue in the socket and
the event loop before any handler runs (measured: `harness serve hardened
--pad-to-s 0` at 1,600 req/s answered at p50 2.4 s and shed nothing). The
loop's lag, how late a timer fires, is that hidden queue's delay: every ready
handler waits about as long. While the recent lag is over the limit a handler
answers 503 + Retry-After before reading or parsing the body, the cheapest
answer it has, so the CPU it keeps goes to the requests it admits.

Lag misses the queue that matters most: measured live at twice the sustainable
rate, requests waited seconds in socket buffers and between the proxy and the
handler (a request crosses the loop four or five times) while the timer's lag
stayed under its limit. So the hardened servers judge each request by its own
age: the loop time its first byte reached the layer-4 proxy in front (the
host's own proxy, on the same loop and clock: targets.http.l4proxy.L4Proxy.
request_started_s; clients cannot forge it) to its handler's start. A request
already older than its share of the SLO would spend the rest of the budget
waiting behind its elders, so it is refused before its body is parsed.

A refusal in the handler still costs 40-54% of a served request's loop time
(aiohttp's per-request machinery, the proxy's relay both ways), so at twice the
sustainable rate the refusals alone fill the loop. ``ProxyGuard`` moves the
refusal in front of aiohttp: the layer-4 proxy answers a canned 503 itself
(targets.http.l4proxy, targets.http.refusal) while the requests in flight through it
are over budget. Its signal is the wait so far of the ``quorum``-th oldest
request relayed and not yet answered, its time at the GPUs left out (timed from
the head's last byte, so a slow client's head does not count; the API server
says when a request goes to the GPUs and when it is back, and it re-enters
timed from its return): on one loop every step of every request waits behind
all the others, so a backlog anywhere in the front end (before the handler,
inside it, on the answer's way back) ages them, while the GPUs' queue and
batches are admission's to judge (targets.admission). A few requests held long
on purpose cannot trigger it alone. It costs a few dict operations a request.
Tried and dropped, measured live at 1,600 req/s offered (about twice what the
loop serves): the wait from the proxy to the handler's start only (6,215 of
16,072 timed out: most of a request's CPU comes after its handler starts), and
the whole time in flight with the GPUs' (it worked, but a padded live host's
100 ms batches would trip any budget tight enough to help). Not tried: the age
of the request about to be relayed (zero at the proxy), an in-flight count
(needs the loop's capacity to mean a wait).

``AgeGuard.decide(age_s)``, ``LagGuard.decide(lag_s)`` and ``ProxyGuard.decide(wait_s)`` are the pure rules;
``LoopLag`` measures the sustained lag (the least of the last few ticks) with one
timer task on the servers' loop. Knobs: TargetConfig.frontend_age_share (e.g.
0.25; off in naive and, until a quiet machine shows it pays at twice the
sustainable rate, in hardened: benchmarks/frontend_overload.py) and
frontend_lag_limit_s (None: never shed on lag), frontend_proxy_share (the proxy's
budget, a share of the SLO; 0.1 in hardened, None in naive: the proxy never refuses).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Hashable

__all__ = ["AgeGuard", "FrontEndWaits", "LagGuard", "LoopLag", "ProxyGuard", "relay_key"]


def relay_key(proxy_side: Any, server_side: Any) -> tuple | None:
    """What names one proxy-to-API-server connection on both ends: (the proxy's address, the API
    server's), each (host, port). The API server reads it as (its peer, its own address). Both
    halves: Linux gives the same ephemeral port to connections to different API servers, so the
    proxy's address alone names two connections (it mixed up requests, and latched the guard)."""
    if not (isinstance(proxy_side, tuple) and isinstance(server_side, tuple)):
        return None
    return (tuple(proxy_side[:2]), tuple(server_side[:2]))


@dataclass(frozen=True)
class AgeGuard:
    """Shed a request older than ``limit_s`` when its handler starts (age from its first byte at
    the proxy); ask it back after the age itself, at least ``retry_after_s``: the queue ahead
    of it took that long to form and takes about as long to drain."""

    limit_s: float
    retry_after_s: float = 0.05

    @classmethod
    def for_slo(cls, slo_s: float, share: float) -> "AgeGuard":
        """The guard whose limit is ``share`` of the SLO (TargetConfig.frontend_age_share)."""
        if not (slo_s > 0 and 0 < share <= 1):
            raise ValueError(f"need slo_s > 0 and 0 < share <= 1, got {slo_s}, {share}")
        return cls(slo_s * share)

    def decide(self, age_s: float | None) -> float | None:
        """Seconds to ask the client to wait (shed), or None (admit; also when the age is unknown)."""
        if age_s is None or age_s <= self.limit_s:
            return None
        return max(self.retry_after_s, age_s)


@dataclass(frozen=True)
class ProxyGuard:
    """Refuse a new request at the proxy while the ``quorum``-th oldest request relayed and not yet
    answered has waited ``limit_s`` or more in the front end (its time at the GPUs aside; 0 when
    fewer are in flight, so a limit of 0 refuses
    every request: how `harness profile frontend` measures a refusal). Ask it back after that wait,
    at least ``retry_after_s``: the backlog took about that long to form and takes as long to drain."""

    limit_s: float
    retry_after_s: float = 0.05
    quorum: int = 3

    def signal(self, waits_s: list[float]) -> float:
        """The wait ``decide`` judges: the ``quorum``-th of ``waits_s`` (oldest first), 0 when fewer."""
        return waits_s[self.quorum - 1] if len(waits_s) >= self.quorum else 0.0

    @classmethod
    def for_slo(cls, slo_s: float, share: float) -> "ProxyGuard":
        """The guard whose limit is ``share`` of the SLO (TargetConfig.frontend_proxy_share)."""
        if not (slo_s > 0 and 0 <= share <= 1):
            raise ValueError(f"need slo_s > 0 and 0 <= share <= 1, got {slo_s}, {share}")
        return cls(slo_s * share)

    def decide(self, wait_s: float) -> float | None:
        """Seconds to ask the client to wait (refuse), or None (relay). ``wait_s``: the head of the
        front-end queue's wait so far, 0 when it is empty."""
        return max(self.retry_after_s, wait_s) if wait_s >= self.limit_s else None


class FrontEndWaits:
    """The requests in flight through the proxy that wait in the front end, oldest first: what
    `ProxyGuard` reads.

    Pure and clock-free (callers pass `now`); a key names a client connection, which carries at
    most one request at a time (HTTP/1.1; the proxy does not relay pipelined requests apart).
    A connection's request is absent (none in flight), waiting in the front end since some
    time, or at the GPUs (not counted: admission judges that queue). Every request is
    numbered by `begin`, and `to_gpu` / `from_gpu` act only on the request they name while it is
    in flight, so a late signal (an answer that comes back after its request was answered,
    refused, timed out or its connection reused) cannot put anything in the books. `end`
    (the answer began, the connection is gone) and a new `begin` on the same connection
    take its request out. So only requests in flight are ever counted, and the books drain
    as their requests end in any way: the guard cannot latch on a request that is gone."""

    def __init__(self) -> None:
        self._since: dict[Hashable, float] = {}    # waiting in the front end, in the order they began waiting
        self._request: dict[Hashable, int] = {}    # connection -> the number of its request in flight
        self._n = 0

    def __len__(self) -> int:
        """Requests in flight (waiting in the front end or at the GPUs)."""
        return len(self._request)

    @property
    def waiting(self) -> int:
        """Requests in flight that wait in the front end (not at the GPUs)."""
        return len(self._since)

    def begin(self, key: Hashable, now: float) -> int:
        """A request's head is in on ``key``: it waits from ``now``; returns its number. Whatever
        was in flight on ``key`` before has ended (one request at a time per connection)."""
        self.end(key)
        self._n += 1
        self._request[key] = self._n
        self._since[key] = now
        return self._n

    def current(self, key: Hashable) -> int | None:
        """The number of the request in flight on ``key`` (None: none)."""
        return self._request.get(key)

    def to_gpu(self, key: Hashable, request: int) -> bool:
        """Request ``request`` on ``key`` went to the GPUs: it stops counting. False (and nothing
        changes) when it is no longer in flight."""
        if self._request.get(key) != request:
            return False
        self._since.pop(key, None)
        return True

    def from_gpu(self, key: Hashable, request: int, now: float) -> bool:
        """Request ``request`` is back from the GPUs with its answer: it waits again, from ``now``
        (the newest, so the order stays oldest first). False when it is no longer in flight."""
        if self._request.get(key) != request or key in self._since:
            return False
        self._since[key] = now
        return True

    def end(self, key: Hashable) -> None:
        """The request on ``key`` ended (its answer began, it was refused, its connection is gone)."""
        self._request.pop(key, None)
        self._since.pop(key, None)

    def clear(self) -> None:
        self._since.clear()
        self._request.clear()

    def oldest(self, now: float, k: int) -> list[float]:
        """How long the ``k`` oldest waiting in the front end have waited, oldest first."""
        out: list[float] = []
        for since in self._since.values():
            if len(out) == k:
                break
            out.append(now - since)
        return out


@dataclass(frozen=True)
class LagGuard:
    """Shed while the loop lags more than ``limit_s``; ask clients back after ``retry_after_s``
    at least (the lag itself when longer: the backlog takes about that long to clear)."""

    limit_s: float
    retry_after_s: float = 0.05

    def decide(self, lag_s: float) -> float | None:
        """Seconds to ask the client to wait (shed), or None (admit)."""
        return max(self.retry_after_s, lag_s) if lag_s > self.limit_s else None


class LoopLag:
    """The loop's sustained lag (s): each ``tick_s`` a timer measures how late it fired, and
    ``lag_s`` is the least lateness of the last ``window`` ticks. A backlog of ready work
    makes every tick late; a machine that descheduled the process for a moment (a busy
    host, a GC pause) makes one tick late, and that alone must not shed anything."""

    def __init__(self, tick_s: float = 0.005, window: int = 5) -> None:
        self.tick_s = tick_s
        self.lag_s = 0.0
        self.peak_s = 0.0
        self._recent: deque[float] = deque([0.0], maxlen=window)
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def observe(self, late_s: float) -> None:
        """One tick's lateness (s)."""
        self._recent.append(late_s)
        self.lag_s = min(self._recent)
        self.peak_s = max(self.peak_s, late_s)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.tick_s
            await asyncio.sleep(self.tick_s)
            self.observe(max(0.0, loop.time() - due))
