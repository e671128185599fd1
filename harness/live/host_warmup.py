"""What a live host warms before it says it is ready.

A fresh host is slow for its first seconds: torch picks kernels and grows its
allocator per batch shape, and the first requests through the proxy, aiohttp
and the target's policy code pay for lazy setup. Measured against a fresh
`harness serve hardened --pad-to-s 0` before this warm-up, a first 5 s run at
200 req/s gave p50 / p99 of 19 / 65 ms and the next ones 4 / 8 ms.

Two steps, both untimed by the target's figures that matter:

- `warm_models`: one batch of every size 1..B on every worker (each is its own
  thread with its own weights, and its own thread-local state: a worker first
  handed a batch size during the run would pay for it there), and for sequence
  models the largest batch at each length bucket (powers of two up to the
  model's longest input) on the first worker. Run
  on the executor directly, never held to the pad: the pad is a sleep that
  emulates GPU time, warming the real torch path is what matters (padded,
  B sizes x 100 ms per worker took 10 s on naive).
- `warm_http`: a handful of real POST /predict requests through the proxy, one
  connection each, so every API server behind the layer-4 round robin answers
  some. They do reach the target's queue, batcher and pool, so they show in its
  counters; a live run takes its baseline after them (harness.live.baseline).

Both report how long they took (the ready message's `warmup` block).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Sequence

__all__ = ["length_buckets", "warm_http", "warm_models"]

HTTP_TIMEOUT_S = 2.0   # a warm-up request not answered by then is left (naive may hold it for a full batch)


def length_buckets(max_length: int | None) -> list[int]:
    """Input lengths to warm a sequence model at: powers of two up to `max_length`, and it."""
    if not max_length:
        return []
    out, n = [], 1
    while n < max_length:
        out.append(n)
        n *= 2
    return out + [max_length]


async def warm_models(gpus: Sequence[Any], max_batch: int) -> dict[str, Any]:
    """Every batch size 1..`max_batch` on every worker (in parallel), then each length
    bucket at `max_batch` for sequence models on the first. Returns counts and seconds."""
    started = time.perf_counter()
    model = gpus[0].executor.model
    lengths = length_buckets(model.max_length) if model.variable_length else []

    async def shapes(gpu: Any, first: bool) -> None:
        for size in range(1, max_batch + 1):
            await gpu.executor.warm_up(size)
        for length in lengths if first else ():
            await gpu.executor.warm_up(max_batch, length)

    await asyncio.gather(*(shapes(g, i == 0) for i, g in enumerate(gpus)))
    return {"batch_sizes": max_batch, "lengths": lengths, "batches": max_batch * len(gpus) + len(lengths),
            "model_s": time.perf_counter() - started}


async def warm_http(port: int, bodies: Sequence[bytes], token: str | None = None,
                    timeout_s: float = HTTP_TIMEOUT_S) -> dict[str, Any]:
    """POST each body to http://127.0.0.1:`port`/predict on its own connection, all at
    once (so a full-batch-only server can fill its batch). Returns answer counts and seconds."""
    started = time.perf_counter()
    auth = f"Authorization: Bearer {token}\r\n".encode() if token else b""
    answers = await asyncio.gather(*(_post(port, body, auth, timeout_s) for body in bodies))
    codes: dict[str, int] = {}
    for code in answers:
        codes[code] = codes.get(code, 0) + 1
    return {"requests": len(bodies), "http_status": codes, "http_s": time.perf_counter() - started}


async def _post(port: int, body: bytes, auth: bytes, timeout_s: float) -> str:
    """One request with `Connection: close`; its status code as text, or 'timeout' / 'error'."""
    head = (b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\n" + auth + b"Content-Length: %d\r\n\r\n" % len(body))
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout_s)
        writer.write(head + body)
        status = await asyncio.wait_for(reader.readline(), timeout_s)
        await asyncio.wait_for(reader.read(), timeout_s)
        parts = status.split()
        return parts[1].decode() if len(parts) > 1 else "error"
    except asyncio.TimeoutError:
        return "timeout"
    except OSError:
        return "error"
    finally:
        if writer is not None:
            writer.close()
