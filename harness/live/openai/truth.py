"""The truth a server's streaming answers hold: a minimal raw-socket client (asyncio streams, no aiohttp).

The LLM driver's TTFT and ITL are held to what this client reads from the same server. It does as
little as a client can: a TCP connection per request in open loop (`asyncio.open_connection`, TCP_NODELAY),
an HTTP/1.1 POST written in one piece, and the answer read as bytes as they come, each read stamped
with `time.monotonic()`. The body is unframed as the server framed it (chunked, a Content-Length, or
to the close), split into server-sent events at blank lines, and each `data:` event stamped with the
read that completed it. TTFT is from the moment before the connection is opened to the first event
that carries text (`stream.parse_line`); each later text event's gap is spread evenly over the tokens
it holds (the growth of a usage the server sends on every event, else one), as the driver does.
In a closed loop each user keeps its connection open (keep-alive, read to the body's end), as the
driver's connection pool does: a fresh connection a request costs the server an accept each and
read 8-30% over the driver at 8-16 streams on a busy 2-core machine, which is the raw client's
own cost, not the server's.

What moved the driver's TTFT off the truth (2026-12-02, a busy 2-core machine): a test server on a
thread of the driver's own process (they share the GIL: the 1.1-2.9x of earlier runs; the truth tests
now serve from a process of their own); a raw client opening a fresh connection a request (its own
cost: the server's accept); the driver's timers rounded up to the millisecond (its send lag, about
1 ms in open loop, now in the result as `url.send_lag_p50_s`); a closed loop's turn body built after
its clock was read (now before). What is left is the machine: runs one after the other differ by
5-15% in TTFT when other work shares the cores.

`read_one(url, body, timeout_s)` is one request (`Reading`); `truth_open(url, bodies, starts_s)` sends
`bodies[k]` at `starts_s[k]` (s from its start; open loop) and `truth_closed(url, bodies, users,
duration_s)` keeps `users` requests in flight, the next sent as one ends, until `duration_s` has passed
or the bodies run out; both bounded by `timeout_s` a request. `summary(readings)` gives TTFT p50 and
mean, ITL mean and E2E p50 of the finished ones. A reading that failed keeps its error text.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import urlsplit

from harness.live.openai.stream import DONE, Chunk, api_of, parse_line

__all__ = ["Reading", "TruthSummary", "read_one", "summary", "truth_closed", "truth_open"]

READ_BYTES = 1 << 16


@dataclass
class Reading:
    """One answer as the raw client read it (times in s from the moment before it connected)."""

    ttft_s: float | None = None
    gaps_s: list[float] = field(default_factory=list)   # per token after the first
    e2e_s: float | None = None                          # to the last text event
    tokens: int = 0
    events: int = 0
    error: str | None = None


@dataclass(frozen=True)
class TruthSummary:
    requests: int
    finished: int
    ttft_p50_s: float | None
    ttft_mean_s: float | None
    itl_mean_s: float | None
    e2e_p50_s: float | None
    requests_per_s: float | None = None   # finished over the drive's length (closed loop)


class _Unframer:
    """HTTP/1.1 body bytes out of chunked transfer coding (or passed through)."""

    def __init__(self, chunked: bool) -> None:
        self.chunked, self.buf, self.left, self.ended = chunked, b"", 0, False

    def feed(self, data: bytes) -> bytes:
        if not self.chunked:
            return data
        self.buf += data
        out = bytearray()
        while not self.ended:
            if self.left:
                take = self.buf[:self.left]
                out += take
                self.buf, self.left = self.buf[len(take):], self.left - len(take)
                if self.left:
                    break
                continue
            if self.buf.startswith(b"\r\n"):   # the CRLF after a chunk's data
                self.buf = self.buf[2:]
            end = self.buf.find(b"\r\n")
            if end < 0:
                break
            size = int(self.buf[:end].split(b";", 1)[0] or b"0", 16)
            self.buf = self.buf[end + 2:]
            if size == 0:
                self.ended = True
            self.left = size
        return bytes(out)


def _request(url: str, body: dict[str, Any], headers: dict[str, str] | None, keep: bool
             ) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    if parts.scheme != "http":
        raise ValueError(f"the raw client speaks plain http only, not {parts.scheme}: {url}")
    payload = json.dumps(body).encode()
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
             "Accept: text/event-stream", f"Content-Length: {len(payload)}",
             f"Connection: {'keep-alive' if keep else 'close'}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return host, port, ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


Kept = list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]   # a user's open connection (empty: none yet)


async def _read(url: str, body: dict[str, Any], headers: dict[str, str] | None, out: Reading,
                kept: Kept | None) -> None:
    api = api_of(urlsplit(url).path)
    host, port, raw = _request(url, body, headers, kept is not None)
    start = time.monotonic()
    if kept:
        reader, writer = kept.pop()
    else:
        reader, writer = await asyncio.open_connection(host, port)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reusable = False
    try:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1].decode() if head.count(b" ") >= 1 else "?"
        if status != "200":
            out.error = f"HTTP {status}: {(await reader.read(300)).decode('utf-8', 'replace')}"
            return
        unframe = _Unframer(b"transfer-encoding: chunked" in head.lower())
        events, last, usage, done = b"", None, None, False
        while not unframe.ended:
            data = await reader.read(READ_BYTES)
            now = time.monotonic() - start
            if not data:
                break
            events += unframe.feed(data).replace(b"\r\n", b"\n")
            while b"\n\n" in events and not done:
                event, events = events.split(b"\n\n", 1)
                chunk = parse_line(event.strip().split(b"\n")[-1], api)
                if chunk == DONE:
                    done = True   # a kept connection reads on to the body's end; a closed one stops here
                    break
                if not isinstance(chunk, Chunk) or not chunk.text:
                    continue
                out.events += 1
                n = 1
                if chunk.completion_tokens is not None:
                    n = max(1, chunk.completion_tokens - (usage or 0)) if usage is not None else 1
                    usage = chunk.completion_tokens
                if last is None:
                    out.ttft_s, out.tokens = now, (usage or 1)
                else:
                    out.gaps_s.extend([(now - last) / n] * n)
                    out.tokens += n
                last = out.e2e_s = now
            if done and (kept is None or not unframe.chunked):
                break
        reusable = kept is not None and unframe.ended and b"connection: close" not in head.lower()
    finally:
        if reusable and kept is not None:
            kept.append((reader, writer))
        else:
            writer.close()


async def read_one(url: str, body: dict[str, Any], timeout_s: float = 60.0,
                   headers: dict[str, str] | None = None, kept: Kept | None = None) -> Reading:
    """One streaming request read raw; never raises for what the server or the network does. `kept`:
    a connection to reuse and keep (keep-alive, as the driver's users keep theirs); None: a fresh one."""
    out = Reading()
    try:
        async with asyncio.timeout(timeout_s):
            await _read(url, body, headers, out, kept)
    except TimeoutError:
        out.error = f"timed out after {timeout_s:g} s"
    except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


async def truth_open(url: str, bodies: Sequence[dict[str, Any]], starts_s: Sequence[float], timeout_s: float = 60.0,
                     headers: dict[str, str] | None = None) -> list[Reading]:
    """`bodies[k]` sent at `starts_s[k]` s from the start, whatever came of the ones before (open loop)."""
    if len(bodies) != len(starts_s):
        raise ValueError("one start per body")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    tasks = []
    for body, at in zip(bodies, starts_s):
        await asyncio.sleep(max(0.0, t0 + at - loop.time()))
        tasks.append(asyncio.create_task(read_one(url, body, timeout_s, headers)))
    return list(await asyncio.gather(*tasks))


async def truth_closed(url: str, bodies: Sequence[dict[str, Any]], users: int, duration_s: float,
                       timeout_s: float = 60.0, headers: dict[str, str] | None = None
                       ) -> tuple[list[Reading], float]:
    """`users` requests in flight until `duration_s` has passed (none sent after it) or the bodies
    run out; (the readings, the drive's length in s)."""
    if users < 1 or not duration_s > 0:
        raise ValueError(f"users must be >= 1 and duration_s > 0, got {users}, {duration_s}")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    taken = iter(range(len(bodies)))
    readings: list[Reading] = []

    async def user() -> None:
        kept: Kept = []   # each user keeps its connection, as the driver's pool does
        try:
            while loop.time() - t0 < duration_s:
                k = next(taken, None)
                if k is None:
                    return
                readings.append(await read_one(url, bodies[k], timeout_s, headers, kept))
        finally:
            for _, writer in kept:
                writer.close()

    await asyncio.gather(*(user() for _ in range(users)))
    return readings, loop.time() - t0


def summary(readings: Sequence[Reading], duration_s: float | None = None) -> TruthSummary:
    done = [r for r in readings if r.error is None and r.ttft_s is not None]
    ttft = [r.ttft_s for r in done if r.ttft_s is not None]
    gaps = [g for r in done for g in r.gaps_s]
    e2e = [r.e2e_s for r in done if r.e2e_s is not None]
    return TruthSummary(
        requests=len(readings), finished=len(done),
        ttft_p50_s=statistics.median(ttft) if ttft else None, ttft_mean_s=statistics.fmean(ttft) if ttft else None,
        itl_mean_s=statistics.fmean(gaps) if gaps else None, e2e_p50_s=statistics.median(e2e) if e2e else None,
        requests_per_s=len(done) / duration_s if duration_s else None)
