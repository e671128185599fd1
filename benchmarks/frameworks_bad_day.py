"""Real serving frameworks on the bad days: LitServe, Ray Serve and BentoML, default and tuned, against
hardened.

Usage (from the repository root, with `pip install -e '.[frameworks]'`; about 35 minutes on 2 cores
at the defaults: 4 scenarios x 7 targets, each a shortened live run after its warm-up)::

    python benchmarks/frameworks_bad_day.py                          # scale 1/32: 312 req/s steady
    python benchmarks/frameworks_bad_day.py --scale 0.1              # the issue's scale: 938 req/s steady
    python benchmarks/frameworks_bad_day.py -w spike -t hardened -t litserve --warmup 2   # a quick look
    python benchmarks/frameworks_bad_day.py --set batch_size=8     # B=8: one GPU's worth is 80 req/s

Every target runs the same live scale, so the same fleet (hardened's: 80% utilisation
and N+1 workers, each batch held to the doc's 100 ms) and the same clients (hardened's);
only the server differs. Each bad-day script is shortened for live as `harness compare
--mode live` shortens it (harness.analysis.compare.live.live_plan). Prints one markdown
table (goodput, p99 of OK answers, shed, timed out, attempts per request, recovery after
the disturbance, and who was at fault when a run was not clean: harness.live.validity),
the machine and its load average beside each run, and writes every figure as JSON (--out).

Figures from a shared or busy machine are noisy (tails varied 3-20x between single runs
here): compare rows of one table, quote ratios, and re-measure on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.compare.live import live_plan, workload_of  # noqa: E402
from harness.live.plan import plan_live  # noqa: E402
from targets.frameworks import FRAMEWORKS, installed_version  # noqa: E402
from targets.spec import parse_overrides, resolve_target  # noqa: E402

SCENARIOS = ("steady", "spike", "slowdown", "dominant-tenant")


def default_targets() -> list[str]:
    out = ["hardened"]
    for fw in FRAMEWORKS.values():
        if installed_version(fw):
            out += [fw.name, fw.tuned_spec()]
    return out


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}"


def row(target: str, scenario: str, res: Any, load: tuple[float, float]) -> dict[str, Any]:
    s = res.summary
    o = s.outcomes
    judged = (s.live or {}).get("validity") or {}
    fw = (s.live or {}).get("framework") or {}
    return {"scenario": scenario, "target": target, "version": fw.get("version"),
            "offered_rps": s.offered_rps, "goodput_rps": s.goodput_rps, "goodput_ratio": s.goodput_ratio,
            "p99_ok_s": s.latency_ok_s.p99, "shed": o.shed.share, "timed_out": o.timed_out.share,
            "failed": o.failed.share, "amplification": s.amplification,
            "recovered_after_s": s.recovery.recovered_after_s, "disturbance_end_s": s.recovery.disturbance_end_s,
            "batch_fill": s.gpu.batch_fill, "utilization": s.gpu.utilization, "gpus": s.gpu.count,
            "valid": s.valid, "fault": judged.get("fault"), "invalid_reasons": s.invalid_reasons,
            "send_lag_p99_s": ((s.live or {}).get("send_lag_s") or {}).get("p99"),
            "machine_cpu_busy": (s.live or {}).get("machine_cpu_busy"), "load_before": load[0], "load_after": load[1]}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:,.0f} ms"


def _recovery(r: dict[str, Any]) -> str:
    if r["disturbance_end_s"] is None:
        return "n/a"
    return "never" if r["recovered_after_s"] is None else f"{r['recovered_after_s']:.1f} s"


def _fault(r: dict[str, Any]) -> str:
    return {"none": "clean", "target": "target overloaded", "driver": "INVALID: driver",
            "both": "INVALID: driver + target overloaded"}.get(r["fault"] or "", r["fault"] or "-")


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| scenario | target | goodput | p99 ok | shed | timed out | attempts/req | recovery | run | load 1m |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['target']} | {r['goodput_rps']:,.0f} req/s ({_pct(r['goodput_ratio'])}) "
                     f"| {_ms(r['p99_ok_s'])} | {_pct(r['shed'])} | {_pct(r['timed_out'])} "
                     f"| {r['amplification'] or 0:.2f} | {_recovery(r)} | {_fault(r)} "
                     f"| {r['load_before']:.1f} -> {r['load_after']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1 / 32, help="live scale, the same for every target")
    ap.add_argument("-w", "--workload", action="append", help=f"scenario (repeatable; default: {', '.join(SCENARIOS)})")
    ap.add_argument("-t", "--target", action="append", help="a target spec (repeatable; default: hardened, then "
                    "each installed framework with its defaults and its tuned knobs)")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up seconds per run (default: the harness's)")
    ap.add_argument("--duration", type=float, default=None, help="cut every script to this many seconds "
                    "(default: the live compare's shortening)")
    ap.add_argument("--set", dest="set_", action="append", default=[], metavar="KEY=VALUE",
                    help="a design knob for every side, e.g. batch_size=8: a smaller B makes a GPU's share of the "
                         "traffic smaller, so the smallest live scale (one GPU's worth) offers fewer requests/s")
    ap.add_argument("--out", type=Path, default=Path("runs/frameworks_bad_day.json"))
    args = ap.parse_args()
    scenarios = args.workload or list(SCENARIOS)
    targets = args.target or default_targets()
    overrides = parse_overrides(args.set_)
    base = resolve_target("hardened", overrides)
    shortened = workload_of({w: p["shortening"] for w, p in live_plan(scenarios).items()}) \
        if args.duration is None else None
    print(f"machine: {machine()}; scale {args.scale:g}; targets: {', '.join(targets)}"
          + (f"; design knobs {overrides}" if overrides else ""), flush=True)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    runs = [(scenario, target) for scenario in scenarios for target in targets]
    for scenario, target in runs:
        plan = plan_live(target, scenario, 1, overrides, args.duration, None, args.scale, scale_from=base,
                         warmup_s=args.warmup,
                         workload_config=shortened(scenario) if shortened is not None else None)
        before = os.getloadavg()[0]
        try:
            res = plan.run()
        except RuntimeError as exc:  # a server that would not start: said, and the table goes on
            print(f"  {scenario:16} {target:40} did not run: {exc}", flush=True)
            continue
        if res.summary.partial:  # Ctrl-C or SIGTERM: the table stops with what finished
            print("  interrupted: the table holds the runs that finished", flush=True)
            break
        rows.append(row(target, scenario, res, (before, os.getloadavg()[0])))
        r = rows[-1]
        print(f"  {scenario:16} {target:40} goodput {r['goodput_rps']:7,.0f} req/s ({_pct(r['goodput_ratio'])}), "
              f"p99 ok {_ms(r['p99_ok_s'])}, {_fault(r)}, load {r['load_before']:.1f}", flush=True)
    print(f"\n{table(rows)}\n\nmachine: {machine()}; scale {args.scale:g}; "
          f"{time.perf_counter() - started:,.0f} s in all", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine(), "scale": args.scale, "design": overrides, "rows": rows},
                                   indent=1))
    print(f"figures: {args.out}")


if __name__ == "__main__":
    main()
