"""Abuse a served target's connection limits on loopback and print the figures.

Starts `python -m targets.http.stack` (the hardened target, a modeled GPU,
default EdgeLimits unless --limits) in a child process, then:

1. holds N idle connections from one address (127.0.0.2): how many the proxy
   holds and refuses, and how long valid requests from a fresh client take;
2. holds N idle connections spread over N/100 addresses (the total cap, and
   eviction of the longest idle);
3. runs S slow senders (one byte every --trickle-s) and measures, for each,
   the time from its first byte to the proxy closing it (408).

    python benchmarks/server_abuse.py [--idle 7000] [--slow 500] [--trickle-s 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUEST = json.dumps({"tenant": "fresh", "input": [1.0, 2.0, 3.0]}).encode()
RAW = (b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
       % len(REQUEST)) + REQUEST


def start_server(limits: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-m", "targets.http.stack", "--limits", limits], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return proc, json.loads(proc.stdout.readline())


def server_fds_and_rss(pid: int) -> tuple[int, float]:
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    rss = next(int(ln.split()[1]) for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
               if ln.startswith("VmRSS")) / 1024
    return fds, rss


async def hold(port: int, n: int, addresses: list[str]) -> tuple[list, int]:
    """Open n connections round robin over `addresses`; return (held, refused at once)."""
    gate = asyncio.Semaphore(400)

    async def one(k: int):
        async with gate:
            try:
                return await asyncio.open_connection("127.0.0.1", port, local_addr=(addresses[k % len(addresses)], 0))
            except OSError:
                return None

    conns = [c for c in await asyncio.gather(*(one(k) for k in range(n))) if c is not None]
    await asyncio.sleep(0.5)
    held, refused = [], 0
    for r, w in conns:
        if r.at_eof() or r._buffer:  # noqa: SLF001 - a refusal (503) is waiting there
            refused += 1
            w.close()
        else:
            held.append((r, w))
    return held, refused


async def fresh_requests(port: int, n: int = 20, src: str = "127.0.0.1") -> list[float]:
    """Seconds to a 200 for n valid requests, each on a new connection."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0))
        writer.write(RAW)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 200"), head[:100]
        out.append(time.perf_counter() - t0)
        writer.close()
    return out


async def slow_senders(port: int, n: int, trickle_s: float, limit_s: float) -> list[float]:
    """Seconds from each sender's first byte to the proxy closing it."""
    async def one(k: int) -> float:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.3", 0))
        rd = asyncio.ensure_future(reader.read())
        t0 = time.perf_counter()
        for i in range(int(limit_s / trickle_s) + 2):
            writer.write(RAW[i:i + 1])
            await asyncio.wait({rd}, timeout=trickle_s)
            if rd.done():
                writer.close()
                return time.perf_counter() - t0
        rd.cancel()
        writer.close()
        return float("inf")

    return list(await asyncio.gather(*(one(k) for k in range(n))))


def fmt(xs: list[float]) -> str:
    xs = sorted(xs)
    return (f"n={len(xs)} p50={statistics.median(xs) * 1000:.1f} ms p99={xs[int(0.99 * (len(xs) - 1))] * 1000:.1f} ms "
            f"max={xs[-1] * 1000:.1f} ms")


async def main(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"fd limit here: {hard}")
    proc, ready = start_server(args.limits)
    port, pid, lim = ready["port"], ready["pid"], ready["limits"]
    print(f"server pid {pid}, proxy port {port}; limits {lim}")
    try:
        print(f"baseline fresh requests: {fmt(await fresh_requests(port))}")
        held, refused = await hold(port, args.idle, ["127.0.0.2"])
        fds, rss = server_fds_and_rss(pid)
        print(f"[1] {args.idle} idle from one address: {len(held)} held, {refused} refused at once (503); "
              f"server fds {fds}, RSS {rss:.0f} MiB")
        print(f"    fresh client while held: {fmt(await fresh_requests(port))}")
        for _, w in held:
            w.close()
        await asyncio.sleep(1.0)
        addrs = [f"127.0.1.{k}" for k in range(1, args.idle // 100 + 1)]
        held, refused = await hold(port, args.idle, addrs)
        fds, rss = server_fds_and_rss(pid)
        print(f"[2] {args.idle} idle from {len(addrs)} addresses: {len(held)} still open, {refused} closed "
              f"(refused, or evicted as the longest idle to make room); "
              f"server fds {fds}, RSS {rss:.0f} MiB")
        print(f"    fresh client while held: {fmt(await fresh_requests(port, src='127.0.0.9'))}")
        for _, w in held:
            w.close()
        await asyncio.sleep(1.0)
        t0 = time.perf_counter()
        slow_task = asyncio.ensure_future(slow_senders(port, args.slow, args.trickle_s, 3 * lim["header_timeout_s"]))
        await asyncio.sleep(1.0)
        during = await fresh_requests(port, 10)
        closed = await slow_task
        print(f"[3] {args.slow} slow senders (a byte every {args.trickle_s:g} s), header timeout "
              f"{lim['header_timeout_s']:g} s: first byte to close {fmt(closed)}; "
              f"{sum(c == float('inf') for c in closed)} never closed; run {time.perf_counter() - t0:.1f} s")
        print(f"    fresh client meanwhile: {fmt(during)}")
        import urllib.request

        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        print("metrics:\n  " + "\n  ".join(ln for ln in text.splitlines()
                                           if ln.startswith(("harness_proxy_refused", "harness_proxy_closed",
                                                             "harness_proxy_accepted"))))
    finally:
        proc.stdin.close()
        proc.wait(10)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--idle", type=int, default=7000)
    p.add_argument("--slow", type=int, default=500)
    p.add_argument("--trickle-s", type=float, default=3.0)
    p.add_argument("--limits", default="{}", help="EdgeLimits fields as JSON for the server")
    asyncio.run(main(p.parse_args()))
