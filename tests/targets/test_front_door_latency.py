"""The front door's latency: the L4 proxy times every request from its first byte there to its answer
(or its refusal, or its client giving up), with the outcome its client saw."""

from __future__ import annotations

import asyncio

import pytest

from targets.http.l4proxy import L4Proxy
from targets.http.limits import EdgeLimits
from targets.http.outcomes import FrontOutcome, outcome_of_answer, status_of_answer
from targets.http.overload import ProxyGuard


@pytest.mark.parametrize("chunk, status, outcome", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 200, FrontOutcome.OK),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, FrontOutcome.OK),
    (b"HTTP/1.1 429 Too Many Requests\r\n", 429, FrontOutcome.SHED),
    (b"HTTP/1.0 503 Service Unavailable\r\n", 503, FrontOutcome.SHED),
    (b"HTTP/1.1 408 Request Timeout\r\n", 408, FrontOutcome.FAILED),   # the proxy's header timeout
    (b"HTTP/1.1 500 Internal Server Error\r\n", 500, FrontOutcome.FAILED),
    (b"HTTP/1.1 20", None, FrontOutcome.FAILED),                      # no status line to read
    (b"garbage that is no answer", None, FrontOutcome.FAILED),
])
def test_an_answers_outcome_is_read_from_its_status_line(chunk: bytes, status: int | None,
                                                         outcome: FrontOutcome) -> None:
    assert status_of_answer(chunk) == status
    assert outcome_of_answer(chunk) is outcome


async def _http_backend():
    """Answers `GET /ok` 200 and `GET /shed` 503 at once, holds `GET /hold` unanswered, and closes
    the connection on `GET /die`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                path = head.split(b" ")[1]
                if path == b"/die":
                    break
                if path == b"/hold":
                    await asyncio.sleep(30)
                status = b"200 OK" if path == b"/ok" else b"503 Service Unavailable"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _get(port: int, path: str, conn=None, read: bool = True):
    reader, writer = conn or await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    if read:
        await asyncio.wait_for(reader.readuntil(b"{}"), 2.0)
    return reader, writer


async def _until(cond, what: str) -> None:
    for _ in range(200):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


@pytest.mark.live
async def test_the_proxy_times_each_request_to_its_answer_with_the_outcome_its_client_saw() -> None:
    server, backend = await _http_backend()
    proxy = L4Proxy([("127.0.0.1", backend)])
    seen: list[tuple[FrontOutcome, float]] = []
    proxy.on_answer = lambda outcome, s: seen.append((outcome, s))
    port = await proxy.start()
    try:
        conn = await _get(port, "/ok")
        await _get(port, "/shed", conn)  # keep-alive: the next request on the connection is timed anew
        assert [o for o, _ in seen] == [FrontOutcome.OK, FrontOutcome.SHED]
        # A client that gives up (its timeout: it closes the connection) before its answer began.
        _, writer = await _get(port, "/hold", read=False)
        await asyncio.sleep(0.15)
        writer.close()
        await _until(lambda: len(seen) == 3, "the abandoned request is timed")
        outcome, waited = seen[2]
        assert outcome is FrontOutcome.TIMED_OUT and 0.1 <= waited < 2.0
        # The backend closes the connection without an answer: the request failed.
        dying = await _get(port, "/die", read=False)
        await _until(lambda: len(seen) == 4, "the lost request is timed")
        assert seen[3][0] is FrontOutcome.FAILED
        conn[1].close()
        dying[1].close()
        await asyncio.sleep(0.05)
        assert all(s >= 0 for _, s in seen) and len(seen) == 4  # each request once
    finally:
        await proxy.stop()
        server.close()


@pytest.mark.live
@pytest.mark.parametrize("refusal", ["guard", "cap"])
async def test_requests_the_front_end_refuses_are_timed_as_shed(refusal: str) -> None:
    server, backend = await _http_backend()
    # A guard limit of 0 refuses every request (ProxyGuard); a cap of one connection per client
    # refuses a second connection at once while the first has a request in flight (nothing idle to evict).
    guarded = refusal == "guard"
    proxy = L4Proxy([("127.0.0.1", backend)], guard=ProxyGuard(0.0) if guarded else None,
                    limits=EdgeLimits(max_connections_per_client=1))
    seen: list[FrontOutcome] = []
    proxy.on_answer = lambda outcome, s: seen.append(outcome)
    port = await proxy.start()
    try:
        first = await _get(port, "/ok" if guarded else "/hold", read=False)
        if guarded:
            assert b" 503 " in await asyncio.wait_for(first[0].readuntil(b"\r\n"), 2.0)
        else:
            await _until(lambda: proxy.stats.accepted == 1 and proxy.stats.bytes_up > 0, "the first request is in")
            second = await asyncio.open_connection("127.0.0.1", port)
            assert b" 503 " in await asyncio.wait_for(second[0].readuntil(b"\r\n"), 2.0)
            second[1].close()
        await _until(lambda: len(seen) == 1, "the refusal is timed")
        assert seen == [FrontOutcome.SHED]
        assert (proxy.stats.refused_overload, proxy.stats.refused_client) == ((1, 0) if guarded else (0, 1))
        first[1].close()
    finally:
        await proxy.stop()
        server.close()
