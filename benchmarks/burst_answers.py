"""Concurrent bursts at a served target on loopback: is every request answered, and how soon?

Starts `python -m targets.http.stack` (hardened, at the live scale `harness serve` runs here
by default: one API server, three modeled GPUs, 312.5 req/s peak, so tenant limits bite) in a
child process, then fires bursts of N concurrent POST /predict from one client address, each on
its own connection, in three shapes:

- ``same-id``: one tenant, one request ID, N distinct inputs (one runs; the rest are 409s, or
  run after it when it was shed);
- ``same-input``: one tenant, one request ID, one input (they coalesce onto one computation, at
  most 256 wait on it, the rest get 429);
- ``distinct``: N request IDs over ``--tenants`` tenants (tenant limits and admission shed).

For each it prints the answers by status; the slowest answer and the p99 as the client saw
them (connect, queueing and its own CPU included); from the request's last byte sent (what the
server can bound), the slowest answer and how many came later than the bound (each request's
deadline, else ten SLOs: targets.admission.answer_within_s); how many got no answer within the
client's timeout (20 s, as when the hanging requests were first measured); and the kernel's
listen-queue overflows over the burst (TcpExtListenOverflows, the whole machine's: a dropped
SYN is retried 1, 3, 7, 15 s later).

``--gpu-death N`` adds one more burst, in this process (a stack of its own, so the GPUs can be
killed under it): N ``same-input`` requests, and every GPU taken down once a batch is running.

    python benchmarks/burst_answers.py [--bursts 2000,6000] [--deadline-ms 1000] [--guard] [--gpu-death 300]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.live.burst import Answer, burst, gpus_die_when_busy  # noqa: E402
LIVE_SCALE = '{"api_servers": 1, "peak_qps": 312.5}'  # what `harness serve hardened` runs here
SHAPES = ("same-id", "same-input", "distinct")


def start_server(knobs: str, guard: bool) -> tuple[subprocess.Popen, dict]:
    cmd = [sys.executable, "-m", "targets.http.stack", "--target", "hardened", "--set", knobs]
    proc = subprocess.Popen(cmd + (["--guard"] if guard else []), cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    return proc, json.loads(proc.stdout.readline())


def listen_overflows() -> int | None:
    try:
        head, values = [ln.split() for ln in Path("/proc/net/netstat").read_text().splitlines()
                        if ln.startswith("TcpExt:")][:2]
    except (OSError, ValueError):
        return None
    return int(dict(zip(head, values)).get("ListenOverflows", 0))


def body(shape: str, i: int, tenants: int, deadline_ms: int | None, run: int) -> dict:
    rid = {"same-id": f"burst-{run}", "same-input": f"burst-{run}"}.get(shape, f"burst-{run}-{i}")
    x = [1.0, 2.0, 3.0] if shape == "same-input" else [float(i), 1.0, 2.0]
    doc = {"tenant": f"t{i % tenants}" if shape == "distinct" else "t0", "request_id": rid, "input": x}
    if deadline_ms:
        doc["deadline_ms"] = deadline_ms
    return doc


async def shaped(port: int, shape: str, n: int, tenants: int, deadline_ms: int | None, timeout_s: float,
                 run: int, during=None) -> list[Answer]:
    """n concurrent requests of `shape` (harness.live.burst): (status, seconds, seconds since sent)."""
    bodies = [body(shape, i, tenants, deadline_ms, run) for i in range(n)]
    return await burst(f"http://127.0.0.1:{port}/predict", bodies, timeout_s, during)


async def gpu_death(n: int, knobs: str, deadline_ms: int | None, timeout_s: float, bound_s: float) -> str:
    """n same-input requests at a stack in this process whose GPUs all die once a batch runs."""
    from targets.http.stack import start_stack
    from targets.spec import resolve_target

    stack = await start_stack(resolve_target("hardened", json.loads(knobs)))
    try:
        got = await shaped(stack.port, "same-input", n, 1, deadline_ms, timeout_s, 0,
                           during=gpus_die_when_busy(stack.target))
    finally:
        await stack.stop()
    return line("GPUs die", n, got, bound_s, None)


def line(shape: str, n: int, got: list[Answer], bound_s: float, overflows: int | None) -> str:
    by = collections.Counter(s for s, _, _ in got)
    times = sorted(t for _, t, _ in got)
    p99 = times[int(0.99 * (len(times) - 1))]
    late = [t - bound_s for s, _, t in got if t > bound_s and s != "no answer"]
    counts = " ".join(f"{s}:{c}" for s, c in sorted(by.items()))
    return (f"{n:>5} {shape:<10} {counts:<40} max {times[-1]:5.2f} s p99 {p99:5.2f} s | from sent: max "
            f"{max(t for _, _, t in got):5.2f} s, over bound {len(late):>4} (by <= {max(late, default=0):4.2f} s) | "
            f"no answer {by.get('no answer', 0):>4} | "
            f"listen overflows {'?' if overflows is None else overflows}")


async def main(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from targets.spec import resolve_target

    cfg = resolve_target("hardened", json.loads(args.set))
    deadline_ms = args.deadline_ms or None
    bound_s = deadline_ms / 1000 if deadline_ms else 10 * cfg.slo_s  # targets.admission.answer_within_s
    proc, ready = start_server(args.set, args.guard)
    print(f"server pid {ready['pid']}, proxy port {ready['port']}, knobs {args.set}, guard {args.guard}; "
          f"deadline_ms {deadline_ms}; bound {bound_s:g} s; client timeout {args.timeout_s:g} s")
    try:
        run = 0
        for n in (int(x) for x in args.bursts.split(",") if x):
            for shape in args.shapes.split(","):
                run += 1
                before = listen_overflows()
                got = await shaped(ready["port"], shape, n, args.tenants, deadline_ms, args.timeout_s, run)
                after = listen_overflows()
                print(line(shape, n, got, bound_s, None if before is None or after is None else after - before),
                      flush=True)
                await asyncio.sleep(args.pause_s)
    finally:
        proc.stdin.close()
        proc.wait(10)
    if args.gpu_death:
        print(await gpu_death(args.gpu_death, args.set, deadline_ms, args.timeout_s, bound_s), flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bursts", default="2000,6000")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--tenants", type=int, default=8)
    p.add_argument("--deadline-ms", type=int, default=1000, help="each request's deadline_ms (0: none)")
    p.add_argument("--timeout-s", type=float, default=20.0, help="the client's own timeout")
    p.add_argument("--set", default=LIVE_SCALE, help="hardened's knobs as JSON")
    p.add_argument("--guard", action="store_true", help="the proxy's guard, as `harness serve` has it")
    p.add_argument("--pause-s", type=float, default=2.0)
    p.add_argument("--gpu-death", type=int, default=0, help="N: one more burst whose GPUs die under it")
    asyncio.run(main(p.parse_args()))
