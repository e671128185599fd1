"""Do sim and live agree at small scale? Same targets, same arrivals, both modes.

Usage (from the repository root)::

    python benchmarks/sim_vs_live.py                       # about 2 minutes
    python benchmarks/sim_vs_live.py --rates 250 --duration 10

For each rate and target (naive, hardened), the design is shrunk exactly as
`harness run --mode live --scale 1/32` shrinks it (one naive GPU, one API
server; hardened sized by its own rule), the `steady` workload is run at that
rate in sim (virtual time, constant 100 ms cost model) and live (real HTTP
through the layer-4 proxy to aiohttp servers, MLP forward passes on the CPU
padded to 100 ms by TorchExecutor's pad_to_s), with the same seed, so both
modes see the very same request schedule. Live runs are warm: each first
sends `--warmup` seconds (default 5) of the same rate, left out of its figures
(harness.live.warmup), since sim has no cold start to compare a fresh server's
first seconds with; the warm-up's own p99 is printed as `cold p99`. Printed: p50, p99 and goodput side
by side for sim, live, and sim again told the batch time live measured
(`cal`), with live / sim ratios, the measured batch time and the driver's
send lag.

Where they differ, the causes are live's own costs, which sim does not model:
the padded batch overruns 100 ms by the thread hand-off and sleep precision,
more so on a busy machine (a fleet at utilisation near 1 turns a few percent
of extra service time into queueing, timeouts and retries), HTTP and proxy
hops (about a millisecond), and the driver's send lag. When `cal` matches
live, the simulator is right about the system it was told about.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.results import RunResult  # noqa: E402
from harness.live.run import LiveRun  # noqa: E402
from harness.live.scaling import scale_for_live  # noqa: E402
from harness.live.host import HostSpec  # noqa: E402
from harness.live.warmup import DEFAULT_WARMUP_S  # noqa: E402
from harness.engine.sim import run_sim  # noqa: E402
from targets.spec import resolve_target  # noqa: E402
from workloads.loader import load_workload  # noqa: E402

SCALE = 1 / 32  # one of the doc's 32 GPUs


def _figures(result: RunResult) -> dict:
    s = result.to_json()["summary"]
    return {"p50": s["latency_s"]["p50"], "p99": s["latency_s"]["p99"], "goodput": s["goodput_ratio"],
            "shed": s["requests"]["shed"], "timed_out": s["requests"]["timed_out"], "lost": s["requests"]["lost"]}


def _ms(x: float | None) -> str:
    return "never" if x is None else f"{1000 * x:.0f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ratio(live: float | None, sim: float | None) -> str:
    if live is None or sim is None or sim == 0:
        return "-"
    return f"{live / sim:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="200,280", help="offered req/s, comma-separated")
    ap.add_argument("--targets", default="naive,hardened")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of traffic per run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--warmup", type=float, default=DEFAULT_WARMUP_S, help="s of warm-up traffic per live run")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    args = ap.parse_args()
    base = load_workload("steady")
    rows = []
    for rate in (float(r) for r in args.rates.split(",")):
        wl = base.scaled(rate / base.peak_rps, args.duration)
        for target in args.targets.split(","):
            cfg, info = scale_for_live(resolve_target(target), SCALE)
            sim = run_sim(cfg, wl, seed=args.seed)
            spec = HostSpec(config=cfg.model_dump(mode="json"), model="mlp", device=args.device, pad_to_s=0.1,
                            tenants=[t.name for t in wl.tenants], seed=args.seed)
            live = LiveRun(cfg, wl, args.seed, spec, scaling=info, warmup_s=args.warmup).run()
            ls = live.summary.live or {}
            batch_s = ls.get("batch_s_mean") or 0.1
            # The same sim, told the batch time live actually had (hand-offs and a busy machine included).
            # Only the service time changes: same fleet, same batching deadline.
            cal_cfg = cfg.model_copy(update={"batch_time_s": batch_s, "gpus": cfg.fleet_gpus,
                                             "max_wait_s": cfg.effective_max_wait_s})
            cal = run_sim(cal_cfg, wl, seed=args.seed)
            ex = ls.get("executors") or {}
            util = rate * 0.1 / (cfg.batch_size * cfg.fleet_gpus)
            rows.append({"rate": rate, "target": target, "gpus": cfg.fleet_gpus, "utilization": util,
                         "sim": _figures(sim), "live": _figures(live), "calibrated": _figures(cal),
                         "batch_ms": 1000 * batch_s, "overruns": ex.get("overruns"),
                         "send_lag_p99_ms": 1000 * (ls["send_lag_s"]["p99"] or 0),
                         "driver_behind": ls["driver_behind"], "partial": live.summary.partial,
                         "cold_p99": (ls.get("cold_start") or {}).get("p99_s")})
            r = rows[-1]
            print(f"{target} at {rate:g} req/s done: sim p99 {_ms(r['sim']['p99'])}, live p99 {_ms(r['live']['p99'])}",
                  file=sys.stderr)
    print("latency in ms; sim: 100 ms batches; live: real; cal: sim with live's measured batch time;\n"
          "load: offered rate / the fleet's rate at full batches")
    print(f"{'rate':>4} {'target':<8} {'load':>4} | {'p50 sim':>7} {'live':>5} {'cal':>5} | "
          f"{'p99 sim':>7} {'live':>5} {'cal':>5} | {'goodput sim':>11} {'live':>5} {'cal':>5}")
    for r in rows:
        s, v, c = r["sim"], r["live"], r["calibrated"]
        print(f"{r['rate']:>4.0f} {r['target']:<8} {r['utilization']:>4.2f} | {_ms(s['p50']):>7} {_ms(v['p50']):>5} "
              f"{_ms(c['p50']):>5} | {_ms(s['p99']):>7} {_ms(v['p99']):>5} {_ms(c['p99']):>5} | "
              f"{_pct(s['goodput']):>11} {_pct(v['goodput']):>5} {_pct(c['goodput']):>5}")
    print("\nlive / sim:")
    for r in rows:
        s, v = r["sim"], r["live"]
        print(f"  {r['target']} at {r['rate']:g} req/s ({r['gpus']} GPU): p50 {_ratio(v['p50'], s['p50'])}, "
              f"p99 {_ratio(v['p99'], s['p99'])}, goodput {_ratio(v['goodput'], s['goodput'])}; batch "
              f"{r['batch_ms']:.1f} ms ({r['overruns']} compute overruns); send lag p99 "
              f"{r['send_lag_p99_ms']:.1f} ms{' (driver fell behind)' if r['driver_behind'] else ''}; "
              f"cold p99 {_ms(r['cold_p99'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
