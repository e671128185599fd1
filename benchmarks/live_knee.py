"""The live knee against the sim's, on the same fleet, side by side in one session.

Usage (from the repository root; about 3 minutes on 2 cores, padded)::

    python benchmarks/live_knee.py                 # the default live fleet, batches padded to 100 ms
    python benchmarks/live_knee.py --scale 0.1     # a bigger fleet: the front end's CPU binds first
    python benchmarks/live_knee.py --frontend      # also model the front end (harness profile frontend's knobs)

Both sweeps run the very config the live host runs (harness.live.plan.plan_live:
the scaled fleet, API servers and peak), so the only difference is the clock: the
sim's GPUs are the cost model, the live GPUs real torch forward passes padded to
the cost model's time, behind a real proxy and aiohttp servers sharing the
driver's cores. The fleet's ceiling (GPUs x B / batch time) is printed beside them:
a knee near it is the fleet's, not the front end's, and no CPU saving moves it.
With `--frontend`, the sim also gets the front-end knobs `harness profile
frontend` prints (its loop's time per request and per refusal), so a knee the
front end sets is predicted too. Prints the ratio sim / live; issue 26's bar is
within 15%.
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


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="hardened")
    ap.add_argument("--scale", type=float, default=None, help="live scale (default: the machine's default)")
    ap.add_argument("--frontend", action="store_true", help="profile the front end and give the sim its knobs")
    ap.add_argument("--duration", type=float, default=None, help="seconds per sweep step (default: the sweep's)")
    ap.add_argument("--profiles", type=int, default=3, help="with --frontend: hosts profiled, their median used")
    args = ap.parse_args()
    started = time.perf_counter()
    plan = plan_live(args.target, "steady", 1, {}, scale=args.scale)
    cfg = plan.config
    knobs = {"peak_qps": plan.workload.peak_rps, "api_servers": cfg.api_servers, "gpus": cfg.fleet_gpus}
    ceiling = cfg.fleet_gpus * cfg.batch_size / cfg.batch_time_s
    print(f"{args.target}: live fleet {cfg.fleet_gpus} GPU(s) x B={cfg.batch_size} at {cfg.batch_time_s * 1000:g} ms "
          f"(ceiling {ceiling:,.0f} req/s), {cfg.api_servers} API server(s), peak {plan.workload.peak_rps:,.0f} req/s; "
          f"{load()}", flush=True)
    if args.frontend:
        from harness.live.frontend_profile import profile_frontend

        cost = profile_frontend(args.target, duration_s=5.0, pad_to_s=None, scale=args.scale,  # the swept host
                                profiles=args.profiles)
        front = {k: v for k, v in cost.sim_knobs(cfg).items() if k.startswith("frontend_")}
        knobs.update(front)
        each = ", ".join(f"{x * 1e6:,.0f}" for x in cost.profiles_s)
        print(f"  front-end knobs (harness profile frontend, median of {args.profiles}: {each} us): {front}",
              flush=True)
    sim = run_sweep(args.target, "sim", overrides=knobs, duration_s=args.duration)
    print(f"  sim knee:  {sim.max_rate_within_slo or 0:7,.0f} req/s ({sim.wall_s:.0f} s)", flush=True)
    live = run_sweep(args.target, "live", scale=args.scale, duration_s=args.duration,
                     on_step=lambda s: print(f"    live step {s.rate_rps:7,.0f} req/s: goodput {s.goodput_rps:7,.0f}, "
                                             f"{'pass' if s.passed else 'fail'}; {load()}", flush=True))
    print(f"  live knee: {live.max_rate_within_slo or 0:7,.0f} req/s ({live.wall_s:.0f} s); {load()}", flush=True)
    if sim.max_rate_within_slo and live.max_rate_within_slo:
        ratio = sim.max_rate_within_slo / live.max_rate_within_slo
        print(f"sim / live knee: {ratio:.3f} ({(ratio - 1) * 100:+.1f}%); live knee / fleet ceiling "
              f"{live.max_rate_within_slo / ceiling:.0%}; {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
