"""A burst at a served target: N requests at once, each on its own connection, and what each got.

For the tests and benchmarks that check every request of a burst is answered in time
(tests/targets/test_answers_live.py, benchmarks/burst_answers.py). Loopback targets only:
callers pass a URL on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Awaitable, Callable

import aiohttp

__all__ = ["Answer", "NOT_CLOSED", "burst", "fresh_burst", "gpus_die_when_busy"]

Answer = tuple[int | str, float, float]  # status ('no answer' past the timeout), seconds in all, since its last byte sent
NOT_CLOSED = "answered, never closed"  # fresh_burst: the answer came, the connection's end did not


async def burst(url: str, bodies: list[dict[str, Any]], timeout_s: float,
                during: Callable[[], Awaitable[None]] | None = None, at_once: int = 0,
                close: bool = False) -> list[Answer]:
    """POST every body (JSON; a connection each, none reused), `during()` run while they are in
    flight; one Answer per body, in order. A client error is its exception's name. `at_once` > 0:
    at most that many in flight (the next starts as one ends; `timeout_s` runs from its own start);
    `close`: each request says `Connection: close`, as a client that never reuses a connection does."""
    trace = aiohttp.TraceConfig()

    async def sent(session: Any, ctx: Any, params: Any) -> None:
        ctx.trace_request_ctx["sent"] = time.perf_counter()

    trace.on_request_chunk_sent.append(sent)
    conn = aiohttp.TCPConnector(limit=0, force_close=True)
    gate = asyncio.Semaphore(at_once) if at_once > 0 else None
    headers = {"Connection": "close"} if close else None
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                     trace_configs=[trace]) as session:
        async def one(body: dict[str, Any]) -> Answer:
            if gate is None:
                return await timed(body)
            async with gate:
                return await timed(body)

        async def timed(body: dict[str, Any]) -> Answer:
            marks: dict[str, float] = {}  # "sent": when the body was on the wire (the trace above)
            t0 = time.perf_counter()
            try:
                async with session.post(url, json=body, headers=headers, trace_request_ctx=marks) as r:
                    await r.read()
                    status: int | str = r.status
            except asyncio.TimeoutError:
                status = "no answer"
            except aiohttp.ClientError as exc:
                status = type(exc).__name__
            t1 = time.perf_counter()
            return status, t1 - t0, t1 - marks.get("sent", t0)

        tasks = [asyncio.ensure_future(one(b)) for b in bodies]
        if during is not None:
            await during()
        return list(await asyncio.gather(*tasks))


async def fresh_burst(port: int, bodies: list[dict[str, Any]], timeout_s: float, at_once: int = 0,
                      path: str = "/predict") -> list[Answer]:
    """POST every body to 127.0.0.1:`port` on a fresh connection of its own that says
    ``Connection: close``, at most `at_once` in flight (0: all at once), as the plainest client
    does: one write of the whole request, then read until the server closes. An answer counts
    once its connection has ended (such a client needs the end to know the answer is whole):
    `NOT_CLOSED` when the answer's head came and the end did not within `timeout_s` (from the
    request's start), 'no answer' when nothing came; a socket error is its exception's name.
    The seconds "since sent" run from the request's last byte written."""
    gate = asyncio.Semaphore(at_once if at_once > 0 else max(1, len(bodies)))

    async def one(body: dict[str, Any]) -> Answer:
        data = json.dumps(body).encode()
        raw = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data
        async with gate:
            t0 = time.perf_counter()
            sent = t0
            status: int | str = "no answer"
            writer = None
            try:
                async with asyncio.timeout(timeout_s):
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.write(raw)
                    await writer.drain()
                    sent = time.perf_counter()
                    head = await reader.readuntil(b"\r\n\r\n")
                    status = NOT_CLOSED
                    await reader.read()  # to the server's end of the connection
                    status = int(head[9:12])
            except TimeoutError:
                pass
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                status = type(exc).__name__
            finally:
                if writer is not None:
                    writer.close()
            t1 = time.perf_counter()
            return status, t1 - t0, t1 - sent

    return list(await asyncio.gather(*(one(b) for b in bodies)))


def gpus_die_when_busy(target: Any, wait_s: float = 5.0) -> Callable[[], Awaitable[None]]:
    """A `during` for `burst`: once a batch runs on a GPU of `target` (a ServingTarget in this
    process; at most `wait_s`), every GPU dies."""
    async def kill() -> None:
        for _ in range(int(wait_s * 1000)):
            if target.pool.busy_gpus():
                break
            await asyncio.sleep(0.001)
        target.kill_gpus(1.0)

    return kill
