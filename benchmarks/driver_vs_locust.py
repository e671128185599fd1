"""The open-loop HTTP driver against Locust, on one core each, same server, same run.

Usage (from the repository root)::

    python benchmarks/driver_vs_locust.py            # about 1.5 minutes
    python benchmarks/driver_vs_locust.py --quick    # a smoke run, about 30 s

A trivial aiohttp server (POST /predict answers a small JSON) runs in a child
process pinned to the last core. Then, each pinned to core 0:

1. the harness's driver (Driver + Client + HttpTransport on uvloop, the code a
   live run uses) sends open-loop Poisson traffic at a ladder of rates, a few
   seconds each; a rate is *sustained* when at least 99% of its requests were
   answered OK and the p99 send lag (first byte written minus scheduled start)
   stayed under --max-lag-ms;
2. Locust (FastHttpUser, headless, one process, --users users, no wait time:
   closed loop, as fast as it can) runs for the same time in a subprocess.

Printed: per rate, the driver's achieved rate, p50/p99 send lag and CPU
microseconds per request; Locust's requests/s, p99 latency and CPU per
request; and the verdict, requests per CPU-second (a core's worth) of each and
their ratio. When the server saturates before the driver does, the per-core
figure (CPU per request) is the fair comparison, and the table says so.
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

from harness.driver import Driver  # noqa: E402
from harness.http_transport import HttpTransport, Payloads, new_loop  # noqa: E402
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="fewer, shorter steps")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds per driver step and for Locust")
    ap.add_argument("--rates", default="2000,4000,6000,8000,10000,12000,14000", help="driver ladder, req/s")
    ap.add_argument("--users", type=int, default=50, help="Locust users")
    ap.add_argument("--max-lag-ms", type=float, default=5.0, help="sustained: p99 send lag under this")
    args = ap.parse_args()
    if args.serve:
        _pin((os.cpu_count() or 1) - 1)
        serve(args.serve)
        return
    if args.quick:
        args.seconds, args.rates = 2.0, "2000,6000,10000"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        _pin(0)
        print(f"server: trivial aiohttp on core {(os.cpu_count() or 1) - 1}; clients on core 0; "
              f"{args.seconds:g} s per step; load average {os.getloadavg()[0]:.1f}")
        drive(port, 1000, 1.0, 50)  # warm-up: connections, code paths
        print(f"{'driver rate':>11} {'achieved':>9} {'ok %':>6} {'lag p50':>8} {'lag p99':>8} {'CPU-us/req':>10} {'conns':>6}")
        steps = []
        for rate in (float(r) for r in args.rates.split(",")):
            r = drive(port, rate, args.seconds, 50)
            steps.append(r)
            ok = r["ok"] / r["sent"]
            sustained = ok >= 0.99 and r["lag_p99_ms"] <= args.max_lag_ms
            r["sustained"] = sustained
            print(f"{rate:>11,.0f} {r['achieved']:>9,.0f} {100 * ok:>6.1f} {r['lag_p50_ms']:>6.2f}ms "
                  f"{r['lag_p99_ms']:>6.2f}ms {r['cpu_us']:>10.0f} {r['connections']:>6}"
                  f"{'' if sustained else '  not sustained'}")
        with tempfile.TemporaryDirectory() as tmp:
            loc = locust(port, args.seconds * 2, args.users, Path(tmp))
        print(f"Locust FastHttpUser, {args.users} users, headless: {loc['rps']:,.0f} req/s, p50 {loc['p50_ms']:.0f} ms, "
              f"p99 {loc['p99_ms']:.0f} ms, {loc['failures']} failures, {loc['cpu_us']:.0f} CPU-us/req "
              f"({100 * loc['cpu_share']:.0f}% of a core)")
        best = max((r for r in steps if r["sustained"]), key=lambda r: r["achieved"], default=None)
        cpu_us = float(np.median([r["cpu_us"] for r in steps if r["sustained"]] or [np.nan]))
        per_core = 1e6 / cpu_us
        loc_core = 1e6 / loc["cpu_us"]
        print(f"driver: highest sustained open-loop rate {best['achieved'] if best else 0:,.0f} req/s "
              f"(p99 send lag {best['lag_p99_ms'] if best else float('nan'):.2f} ms); "
              f"median {cpu_us:.0f} CPU-us/req = {per_core:,.0f} req per CPU-second")
        print(f"Locust: {loc['rps']:,.0f} req/s closed loop; {loc_core:,.0f} req per CPU-second")
        print(f"per core: driver / Locust = {per_core / loc_core:.2f}x (goal >= 1.5x)")
        if best and best is steps[-1]:
            print("note: the top rate of the ladder was sustained; raise --rates to find the driver's limit")
        elif best and best["rate"] * 1.3 < steps[-1]["rate"] and steps[-1]["cpu_us"] * steps[-1]["achieved"] < 0.9e6:
            print("note: the driver had CPU to spare when it stopped keeping up: the server was the limit")
    finally:
        server.terminate()
        server.wait(5)


if __name__ == "__main__":
    main()
