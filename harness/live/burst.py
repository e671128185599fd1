"""A burst at a served target: N requests at once, each on its own connection, and what each got.

For the tests and benchmarks that check every request of a burst is answered in time
(tests/targets/test_answers_live.py, benchmarks/burst_answers.py). Loopback targets only:
callers pass a URL on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

import aiohttp

__all__ = ["Answer", "burst", "gpus_die_when_busy"]

Answer = tuple[int | str, float, float]  # status ('no answer' past the timeout), seconds in all, since its last byte sent


async def burst(url: str, bodies: list[dict[str, Any]], timeout_s: float,
                during: Callable[[], Awaitable[None]] | None = None) -> list[Answer]:
    """POST every body at once (JSON; a connection each, none reused), `during()` run while they are
    in flight; one Answer per body, in order. A client error is its exception's name."""
    trace = aiohttp.TraceConfig()

    async def sent(session: Any, ctx: Any, params: Any) -> None:
        ctx.trace_request_ctx["sent"] = time.perf_counter()

    trace.on_request_chunk_sent.append(sent)
    conn = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                     trace_configs=[trace]) as session:
        async def one(body: dict[str, Any]) -> Answer:
            marks: dict[str, float] = {}  # "sent": when the body was on the wire (the trace above)
            t0 = time.perf_counter()
            try:
                async with session.post(url, json=body, trace_request_ctx=marks) as r:
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
