"""Soak a served target with unique request IDs and many tenant names; print its RSS.

Starts `python -m targets.http.stack` (the hardened target, a modeled GPU)
in a child process and sends --requests requests, closed loop at
--concurrency (so at the rate the target serves), each with a unique
request_id, tenants drawn from --tenants names, inputs from a pool of
--inputs distinct ones (0: every input unique). The server's RSS is read at
every --every requests; the figure that matters is the growth from the
sample at --baseline requests to the end.

    python benchmarks/server_soak.py [--requests 200000] [--tenants 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid: int) -> float:
    return next(int(ln.split()[1]) for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ln.startswith("VmRSS")) / 1024


async def soak(args: argparse.Namespace, port: int, pid: int) -> None:
    url = f"http://127.0.0.1:{port}/predict"
    rng = random.Random(1)
    pool = [[rng.random() for _ in range(16)] for _ in range(args.inputs)]
    codes: dict[int, int] = {}
    samples: list[tuple[int, float, float]] = []
    sent = 0
    t0 = time.perf_counter()
    deadline = t0 + args.max_s

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal sent
        while sent < args.requests and time.perf_counter() < deadline:
            k = sent
            sent += 1
            x = pool[k % len(pool)] if pool else [float(k), 1.0, 2.0]
            body = {"tenant": f"tenant-{rng.randrange(args.tenants)}", "request_id": f"soak-{k}", "input": x}
            async with session.post(url, json=body) as r:
                await r.read()
                codes[r.status] = codes.get(r.status, 0) + 1
            done = sum(codes.values())
            if done % args.every == 0:
                samples.append((done, time.perf_counter() - t0, rss_mib(pid)))
                print(f"  {done:>8,} answered  {time.perf_counter() - t0:7.1f} s  RSS {samples[-1][2]:.1f} MiB",
                      flush=True)

    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - t0
    done = sum(codes.values())
    end_rss = rss_mib(pid)
    base = next((s for s in samples if s[0] >= args.baseline), samples[0] if samples else (0, 0.0, end_rss))
    print(f"{done:,} requests in {elapsed:.1f} s ({done / elapsed:,.0f} req/s); codes {dict(sorted(codes.items()))}")
    print(f"RSS at {base[0]:,} requests: {base[2]:.1f} MiB; at the end: {end_rss:.1f} MiB; "
          f"growth {100 * (end_rss / base[2] - 1):+.1f}%")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    print("bounded state at the end:\n  " + "\n  ".join(
        ln for ln in text.splitlines() if ln.startswith(("harness_state_entries", "harness_state_limit"))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--tenants", type=int, default=10_000)
    p.add_argument("--inputs", type=int, default=1000, help="distinct inputs (0: each one unique)")
    p.add_argument("--concurrency", type=int, default=48)
    p.add_argument("--every", type=int, default=20_000)
    p.add_argument("--baseline", type=int, default=20_000)
    p.add_argument("--max-s", type=float, default=540.0, help="stop early after this long")
    p.add_argument("--set", default='{"api_servers": 2, "gpus": 2, "batch_time_s": 0.005}')
    args = p.parse_args()
    proc = subprocess.Popen([sys.executable, "-m", "targets.http.stack", "--set", args.set], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    ready = json.loads(proc.stdout.readline())
    print(f"server pid {ready['pid']}, proxy port {ready['port']}, RSS {rss_mib(ready['pid']):.1f} MiB at start")
    try:
        asyncio.run(soak(args, ready["port"], ready["pid"]))
    finally:
        proc.stdin.close()
        proc.wait(10)


if __name__ == "__main__":
    main()
