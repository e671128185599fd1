"""The project's layer-4 proxy against HAProxy in front of the same live target, side by side.

Usage (from the repository root; about 15 minutes on 2 cores with the knees)::

    python benchmarks/balancer_haproxy.py                       # naive and hardened, steady and spike, knees
    python benchmarks/balancer_haproxy.py --no-knee --duration 10
    python benchmarks/balancer_haproxy.py --scale 0.1           # a bigger fleet: the front end binds first

For each target and workload it runs `harness run --mode live` twice at one scale, once behind
the project's proxy (`--balancer python`, on the API servers' event loop) and once behind HAProxy
(`--balancer haproxy`, a process of its own: naive mode tcp round robin, hardened mode http
with a capped queue answering 503, targets.http.haproxy), back to back so the machine's load
drifts as little as possible between the two; then the live knee both ways (`harness sweep
--mode live`). Prints goodput, p99, HAProxy's own 503s and the knee, each line with the load
average when it ended: on a shared machine the figures move with it, so compare the two
balancers within one line pair, not across sessions.

Measured 2026-12-01 on the 2-core machine, one run each, load average 1-2 and the normal CPU
policy (earlier the same day, under load 9-75 with this process set to SCHED_IDLE by another
user's timing runs, steps failed at any rate: re-measure on a quiet machine before quoting):

    default scale (1/32: 3 GPUs, ceiling 960 req/s, 1 API server)  python       haproxy
    hardened steady 313 req/s: goodput / p99                       100% / 164   100% / 164 ms
    hardened spike  377 req/s: goodput / p99                       100% / 163   100% / 162 ms
    hardened live knee (sweep)                                     884          923 req/s
    naive steady 313 req/s: goodput / p99                          99.6% / 277  99.6% / 274 ms
    naive spike 377 req/s: goodput                                 24.5%        24.5%
    scale 0.094 (5 GPUs, ceiling 1,600 req/s, 1 API server)
    hardened steady 940 req/s: goodput / p99                       100% / 177   100% / 165 ms
    hardened live knee (sweep)                                     1,446        1,510 req/s

The default fleet's knee is the GPUs' (92-96% of the ceiling) either way; with a bigger fleet the
front end binds, and HAProxy in its own process moves the knee 4% (one sweep each, within the
search's 5% tolerance). Naive's knee is below the sweep's floor both ways (full batches only).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.sweep import run_sweep  # noqa: E402
from harness.live.plan import plan_live  # noqa: E402

BALANCERS = ("python", "haproxy")


_POLICIES = {os.SCHED_OTHER: "normal", os.SCHED_IDLE: "IDLE", os.SCHED_BATCH: "batch", os.SCHED_RR: "rr",
             os.SCHED_FIFO: "fifo"}


def load() -> str:
    """The 1-minute load average, and this process's CPU policy (another user may have set it to
    SCHED_IDLE: then the figures say more about the machine than about the balancers)."""
    return f"load {os.getloadavg()[0]:.1f}, {_POLICIES.get(os.sched_getscheduler(0), '?')}"


def run_line(target: str, workload: str, balancer: str, scale: float | None, duration_s: float) -> str:
    plan = plan_live(target, workload, 1, {}, duration_s=duration_s, scale=scale, device="cpu", balancer=balancer)
    res = plan.run()
    s = res.summary
    b = (s.live or {}).get("balancer") or {}
    p99 = s.latency_s.p99 if s.latency_s is not None else None
    assert b.get("kind") == balancer, f"ran behind {b.get('kind')}, not {balancer}"
    return (f"  {target:9s} {workload:7s} {balancer:8s} offered {s.offered_rps:7,.0f} req/s  "
            f"goodput {s.goodput_rps:7,.1f} req/s ({100 * (s.goodput_ratio or 0):5.1f}%)  "
            f"p99 {'-' if p99 is None else f'{p99 * 1000:7.1f} ms'}  shed {s.outcomes.shed.count:6,}  balancer 5xx {b.get('own_5xx', 0):6,}  "
            f"{'valid' if s.valid else 'INVALID'}; {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", nargs="+", default=["naive", "hardened"])
    ap.add_argument("--workloads", nargs="+", default=["steady", "spike"])
    ap.add_argument("--scale", type=float, default=None, help="live scale (default: the machine's default)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--step-duration", type=float, default=None, help="seconds per sweep step (default: the sweep's)")
    ap.add_argument("--no-knee", action="store_true", help="skip the live sweeps")
    ap.add_argument("--balancers", nargs="+", default=list(BALANCERS), choices=BALANCERS,
                    help="which balancers, in this order (run it both ways round to see the machine's drift)")
    args = ap.parse_args()
    started = time.perf_counter()
    for target in args.targets:
        plan = plan_live(target, "steady", 1, {}, scale=args.scale)
        cfg = plan.config
        ceiling = cfg.fleet_gpus * cfg.batch_size / cfg.batch_time_s
        print(f"{target}: {cfg.fleet_gpus} GPU(s) x B={cfg.batch_size} at {cfg.batch_time_s * 1000:g} ms (ceiling "
              f"{ceiling:,.0f} req/s), {cfg.api_servers} API server(s), scale {plan.scale:.4g}; {load()}", flush=True)
        for workload in args.workloads:
            for balancer in args.balancers:
                print(run_line(target, workload, balancer, args.scale, args.duration), flush=True)
        if args.no_knee:
            continue
        for balancer in args.balancers:
            sw = run_sweep(target, "live", scale=args.scale, duration_s=args.step_duration, device="cpu",
                           balancer=balancer)
            steps = ", ".join(f"{s.rate_rps:,.0f}{'+' if s.passed else '-'}" for s in sw.steps)
            print(f"  {target:9s} knee     {balancer:8s} {sw.max_rate_within_slo or 0:7,.0f} req/s "
                  f"(first failing {sw.first_failing_rate or 0:,.0f}; steps {steps}; {sw.wall_s:.0f} s); {load()}",
                  flush=True)
    print(f"{time.perf_counter() - started:.0f} s in all; {load()}")


if __name__ == "__main__":
    main()
