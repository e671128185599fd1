"""Live canary rollouts: does the live analysis promote a good canary and roll back bad ones?

Usage (from the repository root)::

    python benchmarks/canary_live.py                        # good, slow, wrong x 3 seeds: about 3 minutes
    python benchmarks/canary_live.py --seeds 5 --day erroring --day wrong-behind-exact-cache

Each rollout starts a live `hardened` host shrunk to `--rate` (200 req/s),
serving the baseline MLP (seed-0 weights) on its GPU workers and the canary on
workers of its own (harness.live.canary_host), padded to the design's 100 ms
batch; open-loop traffic from one seed runs the plan `benchmarks/canary_live_plan.toml`
(25% -> 50%, 3 s a step) and each step is judged by the same `judge` as the sim.
Days (harness.analysis.canary.live.LIVE_DAYS): good (same weights), slow (same
weights, 1.5x batch time), wrong (seed-1 weights), erroring (2% 5xx),
wrong-behind-exact-cache (the doc's cache hides the canary; wrong-version answers counted).

Printed per rollout: the decision, when, the failed checks, the canary's answers
(blast radius), wrong-version cache answers, and per step the canary's and
baseline's answers, median latencies (their ratio) and label distance; then
the machine's load (`uptime`), since every latency here is wall-clock on a shared machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.canary.live import DEFAULT_LIVE_DAYS, run_canary_live  # noqa: E402

PLAN = str(ROOT / "benchmarks" / "canary_live_plan.toml")


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--day", action="append", help="live canary day (repeatable; default good, slow, wrong)")
    p.add_argument("--rate", type=float, default=200.0)
    p.add_argument("--plan", default=PLAN)
    args = p.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    result = run_canary_live([args.plan], "hardened", args.seeds, 1, args.day or list(DEFAULT_LIVE_DAYS), args.rate,
                             on_done=lambda d, n: print(f"  {d}/{n} rollouts", file=sys.stderr, flush=True))
    for cell in result.cells:
        print(f"\n{cell.day} (should {'roll back' if cell.bad else 'promote'}): rollback {cell.rollback_share:.0%}, "
              f"promote {cell.promote_share:.0%}, median decision {cell.median_decision_s or 0:.1f} s, "
              f"median blast radius {cell.median_blast_radius or 0:.0f}, wrong-version answers {cell.wrong_version}")
        for r in cell.runs:
            print(f"  seed {r.seed}: {r.decision} at {r.decided_at_s or 0:.1f} s, step {r.step}, "
                  f"failed {','.join(r.failed) or '-'}, canary answers {r.canary_requests}, "
                  f"wrong-version {r.wrong_version}, mean batch ms "
                  + ", ".join(f"{v} {_ms(b)}" for v, b in r.batch_s.items()))
            for s in r.steps:
                ratio = (f"{s.canary_median_s / s.baseline_median_s:.2f}"
                         if s.canary_median_s and s.baseline_median_s else "-")
                other = f", unversioned {s.unversioned}" if s.unversioned else ""
                print(f"    {s.weight:.0%}: {s.action:8} canary {s.canary_answers} ({s.canary_errors} 5xx) "
                      f"p50 {_ms(s.canary_median_s)} ms | baseline {s.baseline_answers} ({s.baseline_errors} 5xx) "
                      f"p50 {_ms(s.baseline_median_s)} ms | ratio {ratio} | label JS "
                      f"{'-' if s.output_distance is None else f'{s.output_distance:.2f}'}{other}")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
