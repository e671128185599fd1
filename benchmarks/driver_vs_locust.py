"""The open-loop HTTP driver against Locust, on one core each, same server, same run.

Usage (from the repository root)::

    python benchmarks/driver_vs_locust.py            # about 2 minutes
    python benchmarks/driver_vs_locust.py --quick    # a smoke run, under a minute

Servers run in a child process pinned to the last core; clients are pinned to
core 0, so each gets at most one core:

1. against a trivial aiohttp server (POST /predict answers a small JSON):
   the harness's driver (Driver + Client + HttpTransport on uvloop, the code a
   live run uses) sends open-loop Poisson traffic at a ladder of rates, a few
   seconds each; a rate is *sustained* when at least 99% of its requests were
   answered OK and the p99 send lag (first byte written minus scheduled start)
   stayed under --max-lag-ms. Then Locust (FastHttpUser, headless, one
   process, --users users, no wait time: closed loop, as fast as it can) runs
   against the same server in a subprocess;
2. the same ladder against a minimal httptools responder, which costs the
   server side far less than aiohttp, so the driver's own ceiling shows.

Printed: per rate, the achieved rate, p50/p99 send lag and the driver's CPU
microseconds per request; Locust's requests/s, latency and CPU per request;
the highest sustained rates; and requests per CPU-second (a core's worth) of
driver and Locust, with their ratio. One aiohttp server on one core saturates
near 10,000 req/s (less on a busy machine), so against it the per-core figure
is the fair comparison. Other work on the machine shows up as send lag.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.engine.driver import Driver  # noqa: E402
from harness.live.driver_loop import new_loop, quiet_gc  # noqa: E402
from harness.live.http_transport import HttpTransport  # noqa: E402
from harness.live.payloads import Payloads  # noqa: E402
from targets.client import ClientPolicy  # noqa: E402
from targets.config import Backoff  # noqa: E402
from workloads.arrivals import build_schedule  # noqa: E402
from workloads.model import ConstantPhase, Tenant, WorkloadConfig  # noqa: E402

TEMPLATE = '{"tenant": "{{tenant}}", "input": [{{content}}, 1.5, 2.5]}'
BODY = '{"tenant": "t0", "input": [7, 1.5, 2.5]}'


def _pin(core: int) -> None:
    try:
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        pass


def serve(port: int) -> None:
    """The trivial server (child process)."""
    from aiohttp import web

    async def predict(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"output": {"label": 1}, "cached": False})

    app = web.Application()
    app.router.add_post("/predict", predict)
    import uvloop

    uvloop.install()
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def serve_raw(port: int) -> None:
    """A minimal HTTP/1.1 responder (httptools on uvloop, about 10 CPU-us a request),
    so the driver's own ceiling shows rather than aiohttp's (child process)."""
    import httptools
    import uvloop

    body = b'{"output": {"label": 1}, "cached": false}'
    response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    class Responder(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            self.transport = transport
            self.parser = httptools.HttpRequestParser(self)

        def data_received(self, data: bytes) -> None:
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                self.transport.close()

        def on_message_complete(self) -> None:
            self.transport.write(response)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Responder, "127.0.0.1", port, backlog=4096)
        await server.serve_forever()

    uvloop.run(main())


class _Sink:
    def __init__(self) -> None:
        self.ok = 0
        self.bad = 0

    def attempt(self, status, sent_s: float, latency_s: float) -> None:
        if status == 200:
            self.ok += 1
        else:
            self.bad += 1

    def finish(self, index: int, status, done_s: float, attempts: int) -> None:
        pass


def drive(port: int, rate: float, seconds: float, connections: int) -> dict:
    """One open-loop step on this (pinned) process; CPU measured around the drive only."""
    wl = WorkloadConfig(name="bench", phases=(ConstantPhase(duration_s=seconds, rate_rps=rate),),
                        tenants=(Tenant(name="t0", share=1.0, connections=connections),))
    schedule = build_schedule(wl, seed=int(rate))
    policy = ClientPolicy(timeout_s=2.0, retries=0, backoff=Backoff.NONE, backoff_base_s=0.05, backoff_cap_s=1.0,
                          request_ids=False, retry_budget=None, honour_retry_after=False, propagate_deadline=False)
    sink = _Sink()
    out: dict = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        tr = HttpTransport("127.0.0.1", port, "/predict", Payloads("mlp", template=TEMPLATE))
        await tr.open({"t0": connections})
        t0 = loop.time() + 0.05
        tr.begin(t0, schedule.sched_s.tolist())
        cpu, wall = time.process_time(), time.perf_counter()
        with quiet_gc():
            await Driver(schedule, policy, tr, sink, random.Random(1)).run(t0)
        out["cpu_s"], out["wall_s"] = time.process_time() - cpu, time.perf_counter() - wall
        out.update(tr.stats())
        tr.close()

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
    n = len(schedule)
    lag = out["send_lag_s"]
    return {"rate": rate, "sent": n, "ok": sink.ok, "bad": sink.bad, "achieved": sink.ok / seconds,
            "lag_p50_ms": 1000 * lag["p50"], "lag_p99_ms": 1000 * lag["p99"],
            "cpu_us": 1e6 * out["cpu_s"] / max(1, n), "connections": out["max_open_connections"]}


def locust(port: int, seconds: float, users: int, workdir: Path) -> dict:
    locustfile = workdir / "locustfile.py"
    locustfile.write_text(textwrap.dedent(f"""
        from locust import FastHttpUser, constant, task

        class Predict(FastHttpUser):
            wait_time = constant(0)

            @task
            def predict(self):
                self.client.post("/predict", data={BODY!r}, headers={{"Content-Type": "application/json"}})
    """))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(users), "-r", str(users),
         "-t", f"{seconds:g}s", "--host", f"http://127.0.0.1:{port}", "--csv", str(workdir / "loc"),
         "--only-summary", "--loglevel", "ERROR"],
        capture_output=True, text=True, preexec_fn=lambda: _pin(0), timeout=seconds + 60)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = list(csv.DictReader(open(workdir / "loc_stats.csv")))
    total = next(r for r in rows if r["Name"] == "Aggregated")
    n = int(total["Request Count"])
    return {"rps": float(total["Requests/s"]), "requests": n, "failures": int(total["Failure Count"]),
            "p50_ms": float(total["50%"]), "p99_ms": float(total["99%"]), "cpu_us": 1e6 * cpu / max(1, n),
            "cpu_share": cpu / wall, "rc": proc.returncode}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(flag: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, __file__, flag, str(port)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server {flag} did not start")


def ladder(port: int, rates: str, seconds: float, max_lag_ms: float) -> list[dict]:
    drive(port, 1000, 1.0, 50)  # warm-up: connections, code paths
    print(f"{'driver rate':>11} {'achieved':>9} {'ok %':>6} {'lag p50':>8} {'lag p99':>8} {'CPU-us/req':>10} {'conns':>6}")
    steps = []
    for rate in (float(r) for r in rates.split(",")):
        r = drive(port, rate, seconds, max(50, int(rate * 0.025)))  # 25 ms of concurrency pre-opened
        ok = r["ok"] / r["sent"]
        r["sustained"] = ok >= 0.99 and r["lag_p99_ms"] <= max_lag_ms
        steps.append(r)
        print(f"{rate:>11,.0f} {r['achieved']:>9,.0f} {100 * ok:>6.1f} {r['lag_p50_ms']:>6.2f}ms "
              f"{r['lag_p99_ms']:>6.2f}ms {r['cpu_us']:>10.0f} {r['connections']:>6}"
              f"{'' if r['sustained'] else '  not sustained'}")
    return steps


def _best(steps: list[dict]) -> str:
    best = max((r for r in steps if r["sustained"]), key=lambda r: r["achieved"], default=None)
    if best is None:
        return "none sustained"
    return f"{best['achieved']:,.0f} req/s (p99 send lag {best['lag_p99_ms']:.2f} ms, {best['cpu_us']:.0f} CPU-us/req)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve-raw", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="fewer, shorter steps")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds per driver step and for Locust")
    ap.add_argument("--rates", default="1000,2000,4000,6000,8000,10000", help="ladder against aiohttp, req/s")
    ap.add_argument("--raw-rates", default="4000,8000,12000,16000,20000,25000",
                    help="ladder against the minimal responder, req/s")
    ap.add_argument("--users", type=int, default=50, help="Locust users")
    ap.add_argument("--max-lag-ms", type=float, default=10.0, help="sustained: p99 send lag under this")
    args = ap.parse_args()
    last = (os.cpu_count() or 1) - 1
    if args.serve or args.serve_raw:
        _pin(last)
        serve(args.serve) if args.serve else serve_raw(args.serve_raw)
        return
    if args.quick:
        args.seconds, args.rates, args.raw_rates = 2.0, "2000,4000", "8000,16000"
    _pin(0)
    print(f"servers on core {last}, clients on core 0; {args.seconds:g} s per step; "
          f"load average {os.getloadavg()[0]:.1f} (other work on these cores shows as send lag)")
    port = _free_port()
    server = _start("--serve", port)
    try:
        print("\n1. against the trivial aiohttp server")
        steps = ladder(port, args.rates, args.seconds, args.max_lag_ms)
        with tempfile.TemporaryDirectory() as tmp:
            loc = locust(port, args.seconds * 2, args.users, Path(tmp))
        print(f"Locust FastHttpUser, {args.users} users, headless: {loc['rps']:,.0f} req/s, p50 {loc['p50_ms']:.0f} ms, "
              f"p99 {loc['p99_ms']:.0f} ms, {loc['failures']} failures, {loc['cpu_us']:.0f} CPU-us/req "
              f"({100 * loc['cpu_share']:.0f}% of a core)")
    finally:
        server.terminate()
        server.wait(5)
    port = _free_port()
    server = _start("--serve-raw", port)
    try:
        print("\n2. against a minimal responder (the driver's own ceiling on one core)")
        raw = ladder(port, args.raw_rates, args.seconds, args.max_lag_ms)
    finally:
        server.terminate()
        server.wait(5)
    sustained = [r for r in steps if r["sustained"]] or steps
    top = max(sustained, key=lambda r: r["achieved"])
    median_us = float(np.median([r["cpu_us"] for r in sustained]))
    print(f"\ndriver vs aiohttp server: highest sustained {_best(steps)}")
    print(f"driver vs minimal responder: highest sustained {_best(raw)}")
    print(f"requests per CPU-second (one core's worth): Locust {1e6 / loc['cpu_us']:,.0f} flat out; driver "
          f"{1e6 / top['cpu_us']:,.0f} at its highest sustained rate on the same server "
          f"({loc['cpu_us'] / top['cpu_us']:.2f}x Locust), {1e6 / median_us:,.0f} as the median over its "
          f"sustained rates, low ones included ({loc['cpu_us'] / median_us:.2f}x); goal >= 1.5x")


if __name__ == "__main__":
    main()
