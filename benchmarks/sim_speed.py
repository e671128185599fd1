"""Simulated requests per wall second, on one core.

Usage: python benchmarks/sim_speed.py [--duration 60]
Runs `naive` and `hardened` on the `steady` workload (10,000 QPS Poisson) and
prints unique requests, attempts and wall time. Goal: >= 40,000 simulated
requests per wall second for naive on one core.
"""

from __future__ import annotations

import argparse
import time

from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.loader import load_workload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--workload", default="steady")
    args = ap.parse_args()
    wl = load_workload(args.workload).scaled(1.0, args.duration)
    print(f"{'target':10} {'requests':>9} {'attempts':>9} {'wall s':>7} {'req/s':>8}")
    for name in ("naive", "hardened"):
        t0 = time.perf_counter()
        s = run_sim(resolve_target(name), wl, seed=1).to_json()["summary"]
        wall = time.perf_counter() - t0
        n = s["requests"]["unique"]
        print(f"{name:10} {n:9,} {s['requests']['attempts']:9,} {wall:7.2f} {n / wall:8,.0f}")


if __name__ == "__main__":
    main()
