"""The layer-4 proxy: round robin per connection, sticky, byte-exact, clean close."""

from __future__ import annotations

import asyncio

import pytest

from targets.l4proxy import L4Proxy


async def _backend(name: bytes):
    """Answers each line with `name:` + the line; counts its connections."""
    conns = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conns.append(writer)
        try:
            while line := await reader.readline():
                writer.write(name + b":" + line)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=8 << 20)
    return server, server.sockets[0].getsockname()[1], conns


@pytest.fixture
async def three():
    backends = [await _backend(n) for n in (b"A", b"B", b"C")]
    proxy = L4Proxy([("127.0.0.1", port) for _, port, _ in backends])
    port = await proxy.start()
    yield proxy, port, backends
    await proxy.stop()
    for server, *_ in backends:
        server.close()


async def _ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, text: bytes) -> bytes:
    writer.write(text + b"\n")
    await writer.drain()
    return (await asyncio.wait_for(reader.readline(), 2.0)).rstrip(b"\n")


@pytest.mark.live
async def test_connections_go_round_robin_and_stay_pinned(three) -> None:
    proxy, port, backends = three
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(7)]
    owners = []
    for k, (reader, writer) in enumerate(conns):
        answers = {(await _ask(reader, writer, b"req%d" % i)).split(b":")[0] for i in range(5)}
        assert len(answers) == 1  # every request on a connection reaches the same backend
        owners.append(answers.pop())
    assert owners == [b"A", b"B", b"C", b"A", b"B", b"C", b"A"]
    assert proxy.stats.per_backend == [3, 2, 2] and proxy.stats.accepted == 7
    assert [len(c) for *_, c in backends] == [3, 2, 2]
    for _, writer in conns:
        writer.close()


@pytest.mark.live
async def test_large_transfers_are_byte_exact_both_ways(three) -> None:
    _, port, _ = three
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=8 << 20)
    line = (bytes(range(256)) * 8192).replace(b"\n", b"x")  # 2 MiB: the relay's flow control must cope
    answer = await asyncio.wait_for(_ask(reader, writer, line), 5.0)
    assert answer == b"A:" + line
    writer.close()


@pytest.mark.live
async def test_client_close_closes_the_backend_side(three) -> None:
    proxy, port, backends = three
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await _ask(reader, writer, b"hi") == b"A:hi"
    writer.close()
    await writer.wait_closed()
    for _ in range(100):
        if proxy.stats.active == 0 and backends[0][2][0].is_closing():
            break
        await asyncio.sleep(0.01)
    assert proxy.stats.active == 0 and backends[0][2][0].is_closing()


@pytest.mark.live
async def test_unreachable_backend_closes_the_client() -> None:
    dead = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    dead_port = dead.sockets[0].getsockname()[1]
    dead.close()
    await dead.wait_closed()
    proxy = L4Proxy([("127.0.0.1", dead_port)])
    port = await proxy.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello\n")  # the backend is dialled at the client's first byte
    assert await asyncio.wait_for(reader.read(), 2.0) == b""  # EOF: closed, nothing relayed
    assert proxy.stats.failed == 1
    writer.close()
    await proxy.stop()


@pytest.mark.live
async def test_stop_closes_open_connections(three) -> None:
    proxy, port, _ = three
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await _ask(reader, writer, b"x") == b"A:x"
    await proxy.stop()
    assert await asyncio.wait_for(reader.read(), 2.0) == b""
    writer.close()


def test_needs_a_backend() -> None:
    with pytest.raises(ValueError):
        L4Proxy([])
