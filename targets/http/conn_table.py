"""The L4 proxy's connection policy: who may connect, and when a connection expires.

Pure and clock-free (every call takes `now`); the proxy (targets.http.l4proxy) is
the thin shell that owns the sockets. Each connection is in one `Phase`:

    FRESH    connected, no byte yet            expires idle_timeout_s after connecting
    HEAD     a request's head is arriving      expires header_timeout_s after its first byte
    WAITING  head complete: body and answer    not timed here (the API server times the body)
    IDLE     answered, keep-alive              expires idle_timeout_s after the last byte

The proxy relays bytes untouched; it only looks for the blank line that ends a
request head (CRLF CRLF, or LF LF), so a client that trickles its headers
(slowloris) is closed within the header timeout however slowly it sends.
Bytes from the backend (an answer starting) put a connection in IDLE.

Each timed phase keeps its connections in an insertion-ordered dict by the
time the phase (or, for IDLE, the last activity) began, so its deadlines are
in order: expiry pops from the front, and the longest-idle connection (the
eviction victim when the table is full) is at a front too.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from typing import Generic, Hashable, TypeVar

from targets.http.limits import EdgeLimits

C = TypeVar("C", bound=Hashable)


class Phase(Enum):
    FRESH = "fresh"
    HEAD = "head"
    WAITING = "waiting"
    IDLE = "idle"


class Admit(Enum):
    ACCEPT = "accept"
    EVICT = "evict"                     # accept, after closing the victim (the longest idle)
    REFUSE_CLIENT = "refuse-client"     # this client address holds its cap
    REFUSE_TOTAL = "refuse-total"       # the table is full and nothing is idle


class Expiry(Enum):
    HEADER = "header-timeout"
    IDLE = "idle-timeout"


@dataclass
class _State:
    address: str
    phase: Phase
    tail: bytes = b""


_TIMED = (Phase.FRESH, Phase.HEAD, Phase.IDLE)


class ConnTable(Generic[C]):
    """Open connections by phase and client address, within `limits`."""

    def __init__(self, limits: EdgeLimits) -> None:
        self.limits = limits
        self._state: dict[C, _State] = {}
        self._since: dict[Phase, OrderedDict[C, float]] = {p: OrderedDict() for p in _TIMED}
        self._per_client: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._state)

    def __contains__(self, conn: object) -> bool:
        return conn in self._state

    def phase(self, conn: C) -> Phase | None:
        s = self._state.get(conn)
        return None if s is None else s.phase

    def count(self, phase: Phase | None = None, address: str | None = None) -> int:
        if address is not None:
            return self._per_client.get(address, 0)
        if phase is None:
            return len(self._state)
        if phase is Phase.WAITING:
            return len(self._state) - sum(len(d) for d in self._since.values())
        return len(self._since[phase])

    @property
    def clients(self) -> int:
        return len(self._per_client)

    # -- admission ----------------------------------------------------------------------
    def admit(self, conn: C, address: str, now: float) -> tuple[Admit, C | None]:
        """Decide on a new connection; when admitted it is FRESH. Returns the
        verdict and, for EVICT, the victim (already removed from the table)."""
        lim = self.limits
        if self._per_client.get(address, 0) >= lim.max_connections_per_client:
            return Admit.REFUSE_CLIENT, None
        victim = None
        if len(self._state) >= lim.max_connections:
            victim = self._longest_idle()
            if victim is None:
                return Admit.REFUSE_TOTAL, None
            self.remove(victim)
        self._state[conn] = _State(address, Phase.FRESH)
        self._since[Phase.FRESH][conn] = now
        self._per_client[address] = self._per_client.get(address, 0) + 1
        return (Admit.ACCEPT if victim is None else Admit.EVICT), victim

    def _longest_idle(self) -> C | None:
        best, best_t = None, float("inf")
        for phase in (Phase.FRESH, Phase.IDLE):
            d = self._since[phase]
            if d:
                conn = next(iter(d))
                if d[conn] < best_t:
                    best, best_t = conn, d[conn]
        return best

    def remove(self, conn: C) -> None:
        s = self._state.pop(conn, None)
        if s is None:
            return
        if s.phase is not Phase.WAITING:
            del self._since[s.phase][conn]
        n = self._per_client[s.address] - 1
        if n:
            self._per_client[s.address] = n
        else:
            del self._per_client[s.address]

    # -- traffic ----------------------------------------------------------------------------
    def _move(self, conn: C, s: _State, to: Phase, now: float) -> None:
        if s.phase is not Phase.WAITING:
            del self._since[s.phase][conn]
        s.phase = to
        if to is not Phase.WAITING:
            self._since[to][conn] = now

    def upstream(self, conn: C, data: bytes, now: float) -> None:
        """Client bytes arrived on `conn`."""
        s = self._state.get(conn)
        if s is None or s.phase is Phase.WAITING:
            return
        if s.phase is not Phase.HEAD:
            self._move(conn, s, Phase.HEAD, now)
            s.tail = b""
        seen = s.tail + data
        if b"\r\n\r\n" in seen or b"\n\n" in seen:
            self._move(conn, s, Phase.WAITING, now)
            s.tail = b""
        else:
            s.tail = seen[-3:]

    def downstream(self, conn: C, now: float) -> None:
        """Backend bytes arrived for `conn`: an answer is under way."""
        s = self._state.get(conn)
        if s is None:
            return
        if s.phase is Phase.IDLE:
            d = self._since[Phase.IDLE]
            d[conn] = now
            d.move_to_end(conn)
        else:
            self._move(conn, s, Phase.IDLE, now)

    # -- expiry ---------------------------------------------------------------------------------
    def deadline(self, conn: C) -> float | None:
        """When `conn` expires in its present phase (None: not timed)."""
        s = self._state.get(conn)
        if s is None or s.phase is Phase.WAITING:
            return None
        t = self._since[s.phase][conn]
        return t + (self.limits.header_timeout_s if s.phase is Phase.HEAD else self.limits.idle_timeout_s)

    def next_deadline(self) -> float | None:
        """The earliest deadline of any timed connection (None: none is timed)."""
        out = None
        for phase, d in self._since.items():
            if d:
                t = d[next(iter(d))] + (self.limits.header_timeout_s if phase is Phase.HEAD
                                        else self.limits.idle_timeout_s)
                out = t if out is None or t < out else out
        return out

    def expire(self, now: float) -> list[tuple[C, Expiry]]:
        """Remove and return every connection past its deadline, with why."""
        out: list[tuple[C, Expiry]] = []
        for phase in _TIMED:
            d = self._since[phase]
            limit, why = ((self.limits.header_timeout_s, Expiry.HEADER) if phase is Phase.HEAD
                          else (self.limits.idle_timeout_s, Expiry.IDLE))
            while d:
                conn = next(iter(d))
                if now - d[conn] < limit:
                    break
                self.remove(conn)
                out.append((conn, why))
        return out
