"""The live driver's own CPU per request, and its send lag, over 1 and N driver processes.

Usage (from the repository root)::

    python benchmarks/driver_cpu.py                     # 600 and 800 req/s, 1 and 2 processes, 10 s each
    python benchmarks/driver_cpu.py --rates 400 --procs 1 --seconds 5
    python benchmarks/driver_cpu.py --priority normal   # the driver at normal CPU priority

The target is a minimal HTTP/1.1 responder (benchmarks/driver_vs_locust.py
--serve-raw, about 10 CPU-us a request) in its own process, so what is
measured is the driver: a live run (harness.live.run.LiveRun, the code `harness
run URL --mode live` runs) of the `steady` workload (ten tenants, hardened's
client policy: request IDs, deadlines, retries; MLP-sized bodies) with no
warm-up. Printed per step: requests, the driver's CPU microseconds per request
over the drive (process CPU time, summed over the driver processes), its share
of a core, send lag p50 / p99, the garbage collector's passes during the drive
(1 process only), and the machine's load average beside it. CPU per request is
the stable figure on a shared machine; lag and load are printed to be judged
together. `--priority normal` keeps the driver at normal priority (by default it
takes the realtime class where allowed, harness.live.driver_loop.driver_priority):
a driver that is late handles several events per wake-up, so it spends less CPU per
request than a punctual one; compare CPU per request at one priority.
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.live.plan import plan_live  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "driver_vs_locust.py"), "--serve-raw",
                             str(port)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the responder did not start")


def step(port: int, rate: float, seconds: float, procs: int) -> dict:
    plan = plan_live(f"http://127.0.0.1:{port}/predict", "steady", seed=1, overrides={"slo_s": 0.5},
                     duration_s=seconds, rate_rps=rate, warmup_s=0, driver_procs=procs)
    plan = replace(plan, config=plan.config.model_copy(update={   # hardened's client policy
        "request_ids": True, "propagate_deadline": True, "client_timeout_s": 1.0, "client_retries": 3}))
    runner = plan.runner()
    before = [s["collections"] for s in gc.get_stats()]
    res = runner.run()
    after = [s["collections"] for s in gc.get_stats()]
    live, r = res.summary.live or {}, res.summary.requests
    per = (live.get("driver_procs") or {}).get("per_process") or []
    cpu_s = sum(p["cpu_s"] for p in per) if per else (runner.drive_cpu_s or 0.0)
    lag = live.get("send_lag_s") or {}
    return {"rate": rate, "procs": procs, "requests": r.unique, "attempts": r.attempts, "ok": r.succeeded,
            "cpu_us": 1e6 * cpu_s / max(1, r.attempts), "cpu_share": cpu_s / max(1e-9, runner.end_s),
            "lag_p50_ms": 1000 * (lag.get("p50") or 0.0), "lag_p99_ms": 1000 * (lag.get("p99") or 0.0),
            "gc": [a - b for a, b in zip(after, before)] if procs == 1 else None,
            "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="600,800", help="comma-separated offered rates (req/s)")
    ap.add_argument("--procs", default="1,2", help="comma-separated driver process counts")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--priority", choices=("auto", "normal"), default="auto")
    args = ap.parse_args()
    if args.priority == "normal":
        import functools

        import harness.live.run as live_run
        from harness.live.driver_loop import driver_priority

        live_run.driver_priority = functools.partial(driver_priority, realtime=False, nice=0)
    port = _free_port()
    server = _server(port)
    print(f"{os.cpu_count()} CPUs; load before: {os.getloadavg()}")
    print(f"{'rate':>6} {'procs':>5} {'requests':>8} {'attempts':>8} {'ok':>6} {'CPU-us/attempt':>14} "
          f"{'core share':>10} {'lag p50 ms':>10} {'lag p99 ms':>10} {'gc passes (gen0/1/2)':>20} {'load':>5}")
    try:
        for rate in (float(x) for x in args.rates.split(",")):
            for procs in (int(x) for x in args.procs.split(",")):
                s = step(port, rate, args.seconds, procs)
                gcs = "/".join(str(x) for x in s["gc"]) if s["gc"] else "-"
                print(f"{s['rate']:6.0f} {s['procs']:5d} {s['requests']:8,} {s['attempts']:8,} {s['ok']:6,} "
                      f"{s['cpu_us']:14.1f} {s['cpu_share']:10.1%} {s['lag_p50_ms']:10.2f} {s['lag_p99_ms']:10.2f} "
                      f"{gcs:>20} {s['load']:5.2f}", flush=True)
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
