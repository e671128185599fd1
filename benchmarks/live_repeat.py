"""The same live run (and, with --sweep, the same live sweep) N times, each on a fresh server:
how much does each figure move? "Repeatable" as a number.

Each repeat is a fresh process tree, so nothing a previous repeat warmed carries over:

- run (default): `harness run TARGET --mode live` at the default live scale; the run starts its
  own host (proxy, API servers, torch workers) and stops it after. With --served: a fresh
  `harness serve TARGET --pad-to-s 0` (harness.live.serve_child) driven by URL with
  `harness run URL --mode live -w steady --rate R --duration D`, twice, so the first run after
  a server start is set beside the second (the warm-first-run check of issue 36);
- --sweep: also `harness sweep TARGET --mode live` (each step on its own fresh host).

Prints one line per repeat, then each figure's median, min, max and spread % ((max - min) /
median) over the repeats: p50, p99 and goodput of the run, the knee of the sweep. Loopback only;
every command is bounded (the run's duration, the sweep's step cap, a timeout per command).

    python benchmarks/live_repeat.py [--n 5] [--target hardened] [--duration S] [--sweep]
    python benchmarks/live_repeat.py --served [--rate 200] [--duration 5] [--n 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.live.serve_child import start_serve, stop_serve  # noqa: E402

HARNESS = [sys.executable, "-c", "from harness.cli import app; app()"]
TIMEOUT_S = 1800.0  # a command that runs past this is stopped and its repeat reported as failed


def harness(args: list[str], out: Path) -> dict | None:
    """`harness ARGS --out OUT --quiet`; the result document, or None (with why, on stderr)."""
    try:
        done = subprocess.run(HARNESS + args + ["--out", str(out), "--quiet"], cwd=ROOT, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"  harness {' '.join(args)}: over {TIMEOUT_S:g} s, stopped", file=sys.stderr)
        return None
    if not out.exists():
        print(f"  harness {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"  harness {' '.join(args)}: exit {done.returncode} ({done.stderr.strip()[-200:]})", file=sys.stderr)
    return json.loads(out.read_text())


def run_figures(doc: dict | None) -> dict[str, float | None]:
    """p50 / p99 (ms; a request not answered OK counts as infinitely slow, so p99 is None when
    over 1% were not), p99 of the OK answers (ms) and goodput (req/s) of a run result."""
    if doc is None:
        return {"p50_ms": None, "p99_ms": None, "p99_ok_ms": None, "goodput_rps": None}
    s = doc["summary"]

    def ms(block: str, q: str) -> float | None:
        v = s[block].get(q)
        return None if v is None else 1000 * v
    return {"p50_ms": ms("latency_s", "p50"), "p99_ms": ms("latency_s", "p99"),
            "p99_ok_ms": ms("latency_ok_s", "p99"), "goodput_rps": s.get("goodput_rps")}


def spread(values: list[float | None]) -> str:
    got = sorted(v for v in values if v is not None)
    if not got:
        return "none measured"
    med = statistics.median(got)
    pct = 100 * (got[-1] - got[0]) / med if med else float("nan")
    missing = "" if len(got) == len(values) else f"  ({len(values) - len(got)} of {len(values)} missing)"
    return f"median {med:9.2f}  min {got[0]:9.2f}  max {got[-1]:9.2f}  spread {pct:5.1f}%{missing}"


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5, help="repeats (default 5)")
    ap.add_argument("--target", default="hardened")
    ap.add_argument("--duration", type=float, default=None, help="run seconds (default: the workload's; "
                    "--served: 5)")
    ap.add_argument("--served", action="store_true", help="drive a fresh `harness serve` by URL, two runs each")
    ap.add_argument("--rate", type=float, default=200.0, help="--served: req/s (default 200)")
    ap.add_argument("--runs", type=int, default=2, help="--served: runs per fresh server (default 2); "
                    "a third shows whether the second is warm or still warming")
    ap.add_argument("--warmup", type=float, default=None, help="--served: each run's --warmup seconds "
                    "(default: harness run's)")
    ap.add_argument("--sweep", action="store_true", help="also sweep the target live N times")
    args = ap.parse_args()
    if not 1 <= args.n <= 20:
        print("live_repeat.py: --n must be 1-20", file=sys.stderr)
        return 2
    if not 2 <= args.runs <= 5:
        print("live_repeat.py: --runs must be 2-5", file=sys.stderr)
        return 2
    warm = [] if args.warmup is None else ["--warmup", f"{args.warmup:g}"]
    figures: dict[str, list[float | None]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1, args.n + 1):
            if args.served:
                proc, url = start_serve(args.target, ["--pad-to-s", "0"])
                try:
                    runs = [run_figures(harness(["run", url, "--mode", "live", "-w", "steady", "--rate",
                                                 f"{args.rate:g}", "--duration", f"{args.duration or 5:g}", *warm],
                                                Path(tmp) / f"run-{i}-{k}.json")) for k in range(1, args.runs + 1)]
                finally:
                    stop_serve(proc)
                for k, f in enumerate(runs, 1):
                    for name, v in f.items():
                        figures.setdefault(f"run {k} {name}", []).append(v)
                first, second = runs[:2]
                ratio = {q: (first[q] / second[q] if first[q] and second[q] else None) for q in ("p50_ms", "p99_ms")}
                for q, r in ratio.items():
                    figures.setdefault(f"first/second {q[:3]}", []).append(r)
                print(f"repeat {i}: first p50 {fmt(first['p50_ms'])} p99 {fmt(first['p99_ms'])} ms | second p50 "
                      f"{fmt(second['p50_ms'])} p99 {fmt(second['p99_ms'])} ms | first/second p50 "
                      f"{fmt(ratio['p50_ms'])}x p99 {fmt(ratio['p99_ms'])}x"
                      + "".join(f" | run {k} p50 {fmt(f['p50_ms'])} p99 {fmt(f['p99_ms'])} ms"
                                for k, f in enumerate(runs[2:], 3)), flush=True)
            else:
                extra = [] if args.duration is None else ["--duration", f"{args.duration:g}"]
                f = run_figures(harness(["run", args.target, "--mode", "live", *extra], Path(tmp) / f"run-{i}.json"))
                for name, v in f.items():
                    figures.setdefault(f"run {name}", []).append(v)
                print(f"repeat {i}: run p50 {fmt(f['p50_ms'])} ms, p99 {fmt(f['p99_ms'])} ms (of OK answers "
                      f"{fmt(f['p99_ok_ms'])}), goodput {fmt(f['goodput_rps'])} req/s", flush=True)
            if args.sweep:
                doc = harness(["sweep", args.target, "--mode", "live"], Path(tmp) / f"sweep-{i}.json")
                knee = None if doc is None else doc.get("max_rate_within_slo")
                figures.setdefault("sweep knee_rps", []).append(knee)
                why = "" if doc is None or not doc.get("inconclusive") else f" ({doc['inconclusive']})"
                tries = 0 if doc is None else sum(1 for s in doc["steps"] if s.get("try_no", 1) > 1)
                print(f"repeat {i}: sweep knee {fmt(knee)} req/s, {tries} re-run steps{why}", flush=True)
    print(f"\n{args.n} repeats of {args.target} in {time.perf_counter() - started:,.0f} s, each on a fresh server")
    for name, values in figures.items():
        print(f"  {name:<24} {spread(values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
