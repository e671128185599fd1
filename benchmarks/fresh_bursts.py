"""Bursts on fresh connections at `harness serve`: is every request answered, and by its bound?

The keep-alive-free twin of benchmarks/burst_answers.py, against the real server (torch models,
the host's GC settings, the proxy's guard) rather than the torch-free stack: it starts
``harness serve TARGET --port 0`` in a child process, then sends N POST /predict, each on a
fresh connection that says ``Connection: close``, at most ``--at-once`` in flight, in two shapes:

- ``distinct``: a tenant and a request ID each (nothing dedupes, no tenant limit bites);
- ``shared-id``: one tenant and one request ID for all, distinct inputs (one runs; the rest
  are 409, or run after it when it was shed).

The client is the plainest there is (harness.live.burst.fresh_burst): one write of the request,
then read until the server closes, as a client that sent ``Connection: close`` may; an answer
whose connection is never closed leaves it waiting (``--client aiohttp`` reads by Content-Length
and would not notice). Each line gives the answers by status, how many got none, or no end of
their connection, within the client's timeout (20 s, as when the hanging requests were first
measured), the slowest answer from its last byte sent and
how many came later than their bound (the request's deadline, else ten SLOs:
targets.admission.answer_within_s), with the load average before the burst. Loopback only; every
burst is bounded (N requests, each within the client timeout).

    python benchmarks/fresh_bursts.py [--n 2000] [--at-once 500] [--shapes distinct,shared-id]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.live.burst import NOT_CLOSED, Answer, burst, fresh_burst  # noqa: E402

SHAPES = ("distinct", "shared-id")
INPUT_LEN = 512  # the mlp's input


def start_server(target: str, extra: list[str], ready_s: float = 180.0) -> tuple[subprocess.Popen, int]:
    """`harness serve TARGET --port 0`; its proxy's port once it prints that it serves."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli import app; app()", "serve", target, "--port", "0", *extra],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    t_end = time.monotonic() + ready_s
    while time.monotonic() < t_end:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"serving \S+ at http://127\.0\.0\.1:(\d+)/predict", line)
        if m:
            return proc, int(m.group(1))
    proc.terminate()
    raise SystemExit(f"fresh_bursts.py: `harness serve {target}` did not start within {ready_s:g} s")


def body(shape: str, i: int, run: int, deadline_ms: int | None) -> dict:
    x = [float((i * 7 + k) % 13) for k in range(INPUT_LEN)]
    x[0] = float(i)
    x[1] = float(run) + (0.5 if shape != "distinct" else 0.0)  # inputs of its own: a cached input never meets the dedupe
    doc: dict = ({"tenant": f"t{i}", "request_id": f"fresh-{run}-{i}"} if shape == "distinct"
                 else {"tenant": "t0", "request_id": f"fresh-{run}"})
    doc["input"] = x
    if deadline_ms:
        doc["deadline_ms"] = deadline_ms
    return doc


def line(shape: str, n: int, got: list[Answer], bound_s: float, load: float) -> str:
    by = collections.Counter(s for s, _, _ in got)
    waited = by.get("no answer", 0) + by.get(NOT_CLOSED, 0)
    answered = [t for s, _, t in got if isinstance(s, int)]
    late = [t for t in answered if t > bound_s]
    counts = " ".join(f"{s}:{c}" for s, c in sorted(by.items(), key=str))
    return (f"{n:>5} {shape:<9} {counts:<36} | no answer or no end {waited:>4} | from sent: max "
            f"{max(answered, default=0):5.2f} s, over bound {len(late):>4} | load avg {load:.2f}")


async def main(args: argparse.Namespace) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from targets.admission import answer_within_s
    from targets.spec import resolve_target

    slo_s = resolve_target(args.target, {}).slo_s
    deadline_ms = args.deadline_ms or None
    bound_s = answer_within_s(deadline_ms / 1000 if deadline_ms else None, slo_s, args.timeout_s)
    proc, port = start_server(args.target, args.serve_arg or [])
    print(f"harness serve {args.target} on port {port}; {args.n} requests, {args.at_once} at a time, "
          f"Connection: close; deadline_ms {deadline_ms}; bound {bound_s:g} s; client timeout {args.timeout_s:g} s")
    hung = 0
    try:
        for run, shape in enumerate(args.shapes.split(","), 1):
            bodies = [body(shape, i, run, deadline_ms) for i in range(args.n)]
            load = os.getloadavg()[0]
            if args.client == "raw":
                got = await fresh_burst(port, bodies, args.timeout_s, args.at_once)
            else:
                got = await burst(f"http://127.0.0.1:{port}/predict", bodies, args.timeout_s,
                                  at_once=args.at_once, close=True)
            hung += sum(1 for s, _, t in got if not isinstance(s, int) or t > bound_s)
            print(line(shape, args.n, got, bound_s, load), flush=True)
            await asyncio.sleep(args.pause_s)
    finally:
        proc.terminate()
        proc.wait(20)
    return 1 if hung else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="hardened")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--at-once", type=int, default=500)
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--deadline-ms", type=int, default=0, help="each request's deadline_ms (0: none, the SLO bound)")
    p.add_argument("--timeout-s", type=float, default=20.0, help="the client's own timeout")
    p.add_argument("--client", choices=("raw", "aiohttp"), default="raw",
                   help="raw: one write, read until the server closes (what a Connection: close client is "
                        "owed); aiohttp: reads by Content-Length, so it never notices a connection left open")
    p.add_argument("--pause-s", type=float, default=2.0)
    p.add_argument("--serve-arg", action="append", help="one more argument for `harness serve` (repeatable)")
    sys.exit(asyncio.run(main(p.parse_args())))
