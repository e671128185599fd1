"""How fast the sim fleet runs: 16 LLM replicas over 600 s of the chat day, per router.

Usage: python benchmarks/fleet_speed.py [--replicas 16] [--duration 600] [--rate 48]
       [--routers round-robin,prefix] [--profile]

Builds the day once (its schedule time is printed apart), then simulates each router's
fleet over it and prints, per router: requests, engine steps, wall and CPU seconds
(`time.process_time`, which other work on a shared machine disturbs less than wall time),
simulated requests per CPU second and microseconds per step. The issue's bar is the whole
600 s day under a minute on this machine. `--profile` runs the first router under cProfile
and prints the 15 costliest functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from harness.analysis.llm.fleet import day_of
from harness.engine.llm_fleet import simulate_fleet
from targets.llm.fleet import parse_fleet
from workloads.llm_days import build_fleet_schedule


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=16)
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--rate", type=float, default=None, help="requests/s (default: the chat day's own)")
    ap.add_argument("--day", default="chat")
    ap.add_argument("--routers", default="round-robin,least-tokens,prefix,kv-aware")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    day = day_of(args.day, args.rate, args.duration)
    t0 = time.perf_counter()
    schedule = build_fleet_schedule(day, 1, 16)
    print(f"{args.day}: {len(schedule)} requests over {day.duration_s:g} s at {day.rate_rps:g} req/s, "
          f"{args.replicas} replicas; schedule built in {time.perf_counter() - t0:.1f} s")
    print(f"{'router':13s} {'requests':>8s} {'steps':>8s} {'wall s':>7s} {'CPU s':>6s} {'req/CPU-s':>9s} "
          f"{'us/step':>7s}")
    for k, router in enumerate(args.routers.split(",")):
        fleet = parse_fleet(f"llm-fleet:router={router},replicas={args.replicas}")
        prof = cProfile.Profile() if args.profile and k == 0 else None
        w0, c0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        trace = simulate_fleet(fleet, schedule, drain_s=60.0)
        if prof is not None:
            prof.disable()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        steps = sum(r.steps for r in trace.replicas)
        print(f"{router:13s} {len(schedule):8d} {steps:8d} {wall:7.1f} {cpu:6.1f} {len(schedule) / cpu:9.0f} "
              f"{cpu / steps * 1e6:7.1f}")
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
