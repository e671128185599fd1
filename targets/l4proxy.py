"""A layer-4 TCP proxy: each new connection goes to the next backend, round robin.

This is the design doc's load balancer (item 1) for real: it balances
*connections*, not requests. A keep-alive connection stays on the backend it
was given, however busy that backend becomes, which is what pins heavy
clients to one API server. Bytes are relayed untouched in both directions
(asyncio protocols, no parsing), with flow control: when one side cannot keep
up, reading from the other side pauses. When either side closes, the other is
closed after its pending bytes are written.

Run alone: ``python -m targets.l4proxy --listen 127.0.0.1:8000 --backend
127.0.0.1:9001 --backend 127.0.0.1:9002`` (Ctrl-C stops it).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from dataclasses import dataclass, field


@dataclass
class ProxyStats:
    accepted: int = 0
    failed: int = 0                      # backend refused or unreachable
    active: int = 0
    per_backend: list[int] = field(default_factory=list)  # connections assigned, ever
    bytes_up: int = 0
    bytes_down: int = 0


class _Side(asyncio.Protocol):
    """One end of a relayed connection; `peer` is the other end's transport."""

    def __init__(self, proxy: "L4Proxy", up: bool) -> None:
        self.proxy = proxy
        self.up = up                     # True: client side (bytes flow up to the backend)
        self.transport: asyncio.Transport | None = None
        self.peer: "_Side | None" = None
        self.buffer: list[bytes] = []    # client bytes that arrive before the backend is connected
        self.closed = False
        self.eof = False                 # this side has sent us its FIN

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.up:
            transport.pause_reading()  # type: ignore[attr-defined]  # until the backend is connected

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if self.up:
            self.proxy.stats.bytes_up += len(data)
        else:
            self.proxy.stats.bytes_down += len(data)
        if peer is None or peer.transport is None:
            self.buffer.append(data)
            return
        peer.transport.write(data)

    def eof_received(self) -> bool:
        self.eof = True
        peer = self.peer
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
        if peer is not None and peer.transport is not None and not peer.closed:
            peer.transport.close()  # flushes what is already written
        if self.up:
            self.proxy._gone(self)

    # Flow control: our transport's write buffer is full, so stop reading the peer.
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


class L4Proxy:
    """Listens on (host, port); connection k goes to backends[k mod n].

    `start()` returns the bound port (port 0 picks a free one); `stop()` closes
    the listener and every relayed connection.
    """

    def __init__(self, backends: list[tuple[str, int]], host: str = "127.0.0.1", port: int = 0) -> None:
        if not backends:
            raise ValueError("an L4 proxy needs at least one backend")
        self.backends = list(backends)
        self.host = host
        self.port = port
        self.stats = ProxyStats(per_backend=[0] * len(backends))
        self._next = 0
        self._server: asyncio.AbstractServer | None = None
        self._clients: set[_Side] = set()
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def _accept(self) -> _Side:
        client = _Side(self, up=True)
        index = self._next
        self._next = (index + 1) % len(self.backends)
        self.stats.accepted += 1
        self.stats.active += 1
        self.stats.per_backend[index] += 1
        self._clients.add(client)
        task = asyncio.get_running_loop().create_task(self._connect(client, index))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return client

    async def _connect(self, client: _Side, index: int) -> None:
        host, port = self.backends[index]
        loop = asyncio.get_running_loop()
        try:
            _, backend = await loop.create_connection(lambda: _Side(self, up=False), host, port)
        except OSError:
            self.stats.failed += 1
            if client.transport is not None:
                client.transport.close()
            return
        if client.closed:  # the client gave up while we connected
            backend.transport.close()
            return
        client.peer, backend.peer = backend, client
        for chunk in client.buffer:
            backend.transport.write(chunk)
        client.buffer.clear()
        client.transport.resume_reading()

    def _gone(self, client: _Side) -> None:
        if client in self._clients:
            self._clients.discard(client)
            self.stats.active -= 1

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for client in list(self._clients):
            for side in (client, client.peer):
                if side is not None and side.transport is not None:
                    side.transport.abort()
        self._clients.clear()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            except (asyncio.TimeoutError, RuntimeError):
                pass
            self._server = None


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _serve(listen: tuple[str, int], backends: list[tuple[str, int]]) -> None:
    proxy = L4Proxy(backends, *listen)
    port = await proxy.start()
    print(f"l4proxy on {listen[0]}:{port} -> {', '.join(f'{h}:{p}' for h, p in backends)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await proxy.stop()
    s = proxy.stats
    print(f"connections {s.accepted}, per backend {s.per_backend}, failed {s.failed}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Layer-4 round-robin TCP proxy.")
    parser.add_argument("--listen", type=_address, default=("127.0.0.1", 8000))
    parser.add_argument("--backend", type=_address, action="append", required=True)
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.listen, args.backend))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
