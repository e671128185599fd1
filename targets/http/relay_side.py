"""One end of a connection the layer-4 proxy relays (targets.http.l4proxy.L4Proxy).

A client side (``up``) reads requests and hands them to the proxy's books (its
connection table, its front-end waits, its guard) before relaying them; a backend
side relays answers back and marks where each answer begins. Either side closing
while a request is unanswered ends that request at the front door (a client that
gave up, a backend that went). The proxy owns every decision; a side only reports.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from targets.http.conn_table import Phase
from targets.http.outcomes import FrontOutcome, outcome_of_answer

__all__ = ["BETWEEN_REQUESTS", "RelaySide"]

BETWEEN_REQUESTS = (Phase.FRESH, Phase.IDLE)


class RelaySide(asyncio.Protocol):
    """One end of a relayed connection; `peer` is the other end's transport."""

    def __init__(self, proxy: Any, up: bool, index: int = 0) -> None:
        # proxy: the targets.http.l4proxy.L4Proxy that owns this side (not imported: it imports this module)
        self.proxy = proxy
        self.up = up                     # True: client side (bytes flow up to the backend)
        self.index = index               # the backend this client was given
        self.transport: asyncio.Transport | None = None
        self.peer: "RelaySide | None" = None
        self.buffer: list[bytes] = []    # client bytes that arrive before the backend is connected
        self.connecting = False
        self.closed = False
        self.eof = False                 # this side has sent us its FIN
        self.head_s: float | None = None  # client side: when the current request's first byte arrived
        self.backend_addr: tuple | None = None  # client side: its backend connection's relay_key
        self.skip = 0                    # client side: body bytes of a refused request still to come
        self.pending = False             # client side: a request started (at head_s) and has no answer yet
        self.fin_sent = False            # client side: refused and half-closed by us; nothing more is relayed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's is one
        if self.up:
            self.proxy._admit(self)

    def data_received(self, data: bytes) -> None:
        proxy, peer = self.proxy, self.peer
        now = proxy.now()
        if self.up:
            proxy.stats.bytes_up += len(data)
            if self.skip:  # the rest of a refused request's body
                n = min(self.skip, len(data))
                self.skip -= n
                data = data[n:]
                if not data:
                    return
            if self.fin_sent:  # it asked to end the connection and has its answer: nothing more to serve
                return
            phase = proxy.table.phase(self)
            if phase in BETWEEN_REQUESTS:  # this chunk starts a request
                self.head_s = now
                self.pending = True
                proxy.waits.end(self)  # whatever came before on this connection is over
                if proxy.guard is not None and proxy._refused(self, data, now):
                    return
            proxy.table.upstream(self, data, now)
            if proxy.guard is not None and phase is not Phase.WAITING \
                    and proxy.table.phase(self) is Phase.WAITING:  # its head is complete: it waits for an answer
                proxy.waits.begin(self, now)
        else:
            proxy.stats.bytes_down += len(data)
            if self.peer is not None:
                if self.peer.pending:  # its answer begins
                    proxy._ended(self.peer, outcome_of_answer(data), now)
                proxy.table.downstream(self.peer, now)
                proxy.waits.end(self.peer)  # its answer began
        if peer is None or peer.transport is None:
            self.buffer.append(data)
            if self.up and not self.connecting and not self.closed:
                self.connecting = True
                assert self.transport is not None  # data comes after connection_made
                self.transport.pause_reading()  # one chunk buffered until the backend is connected
                proxy._spawn(proxy._connect(self))
            return
        peer.transport.write(data)

    def eof_received(self) -> bool:
        self.eof = True
        peer = self.peer
        self._ended_unanswered()
        if peer is None or peer.transport is None:
            return False
        if peer.eof:  # both directions are finished
            peer.transport.close()
            return False
        if peer.transport.can_write_eof():
            peer.transport.write_eof()  # half-close: the other side may still answer
            return True
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        peer = self.peer
        self._ended_unanswered()
        if peer is not None and peer.transport is not None and not peer.closed:
            peer.transport.close()  # flushes what is already written
        if self.up:
            self.proxy._gone(self, exc)

    def _ended_unanswered(self) -> None:
        """This side closed (or half-closed) while a request was still unanswered: its client gave up
        on it (HTTP/1.1 clients do not half-close), or its backend went without an answer."""
        peer = self.peer
        if self.up and self.pending:
            self.proxy._ended(self, FrontOutcome.TIMED_OUT, self.proxy.now())
        elif not self.up and peer is not None and peer.pending:
            self.proxy._ended(peer, FrontOutcome.FAILED, self.proxy.now())

    # Flow control: our transport's write buffer is full, so stop reading the peer.
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()
