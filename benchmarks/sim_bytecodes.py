"""The CI speed figure: Python bytecodes per simulated request, against a committed baseline.

Usage: python benchmarks/sim_bytecodes.py [--record] [--target naive --target hardened]
                                          [--preload MODULE] [--baseline FILE]

Wall time and even the sim-to-heapq ratio move by a third on a shared machine; the number of
bytecodes a simulated request executes does not move at all (no clock, fixed seeds, fixed
PYTHONHASHSEED). Each target is counted in a process of its own running the pure-Python core
(HARNESS_PURE_PYTHON=1: mypyc-compiled code runs no bytecodes), so the figure is the same on
a machine with the compiled core and one without. In that process `steady` runs once untraced
(imports and first-call caches), then SHORT_S and LONG_S of simulated time under
`sys.settrace` with opcode events; the figure is the difference in bytecodes over the
difference in requests, so each run's set-up and summary cancel out.

Without `--record`: each target's figure against the baseline (benchmarks/sim_bytecodes.json);
exit 1 when one rose more than TOLERANCE (a 20% rise always fails), with a note where one fell
that far (record the gain). `--record` writes the figures as the new baseline: do it in the
commit that changes them, saying why. The counts depend on the Python version's bytecode, so
a baseline holds one `python` (major.minor) and another version is refused (exit 2).
`--preload MODULE`: import MODULE in the counting process first (tests plant a slowdown so).
Python calls per request are shown beside, not gated. A count takes about 2-4 s per target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().with_suffix(".json")
TARGETS = ("naive", "hardened")
SHORT_S, LONG_S = 0.05, 0.15   # simulated seconds of `steady` (10,000 req/s): 1,000 requests apart
TOLERANCE = 0.10               # a rise beyond 10% fails; the bar is that 20% must

COUNT = """
import importlib, json, sys
from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.loader import load_workload

target, short_s, long_s, preload = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
if preload:
    importlib.import_module(preload)
config, steady = resolve_target(target), load_workload("steady")
counts = {"bytecodes": 0, "calls": 0}

def local(frame, event, arg):
    if event == "opcode":
        counts["bytecodes"] += 1
    return local

def tracer(frame, event, arg):
    frame.f_trace_opcodes, frame.f_trace_lines = True, False
    counts["calls"] += 1
    return local

def traced(seconds):
    counts.update(bytecodes=0, calls=0)
    sys.settrace(tracer)
    try:
        n = run_sim(config, steady.scaled(1.0, seconds), seed=1).summary.requests.unique
    finally:
        sys.settrace(None)
    return n, counts["bytecodes"], counts["calls"]

run_sim(config, steady.scaled(1.0, short_s), seed=1)  # warm: imports, caches, first calls
(n0, b0, c0), (n1, b1, c1) = traced(short_s), traced(long_s)
print(json.dumps({"requests": n1 - n0, "bytecodes_per_request": (b1 - b0) / (n1 - n0),
                  "calls_per_request": (c1 - c0) / (n1 - n0)}))
"""


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def count(target: str, preload: str = "", tree: Path = ROOT) -> dict[str, float]:
    """{requests, bytecodes_per_request, calls_per_request} of `target` (see the module doc)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "PYTHONHASHSEED": "0", "HARNESS_PURE_PYTHON": "1", "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", COUNT, target, str(SHORT_S), str(LONG_S), preload],
                         env=env, cwd=str(tree), capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"counting {target} failed: {out.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def measure(targets: tuple[str, ...] = TARGETS, preload: str = "") -> dict[str, dict[str, float]]:
    """Each target's count, the targets' processes side by side."""
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        return dict(zip(targets, pool.map(lambda t: count(t, preload), targets)))


def judge(measured: dict[str, dict[str, float]], baseline: dict[str, dict[str, float]],
          tolerance: float = TOLERANCE, key: str = "bytecodes_per_request",
          unit: str = "bytecodes") -> tuple[list[str], list[str]]:
    """(failures, notes): a target whose `key` figure (bytecodes per request; the compiled
    core's gate, benchmarks/core_instructions.py, passes its instructions) rose more than
    `tolerance` over its baseline fails; one with no baseline fails (record it); one that fell
    that far is a note."""
    failures, notes = [], []
    for target, got in measured.items():
        if target not in baseline:
            failures.append(f"{target}: no baseline (run with --record)")
            continue
        was, now = baseline[target][key], got[key]
        change = now / was - 1
        if change > tolerance:
            failures.append(f"{target}: {now:,.0f} {unit} per simulated request, {change:+.1%} over the "
                            f"baseline's {was:,.0f} (at most {tolerance:+.0%})")
        elif change < -tolerance:
            notes.append(f"{target}: {change:+.1%} under the baseline: record the gain (--record)")
    return failures, notes


def gate_arguments(doc: str, baseline: Path) -> argparse.Namespace:
    """A speed gate's command line (this one's, benchmarks/core_instructions.py's)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--target", action="append", default=None)
    ap.add_argument("--record", action="store_true", help="write the figures as the new baseline")
    ap.add_argument("--preload", default="", help="a module to import before counting")
    ap.add_argument("--baseline", type=Path, default=baseline)
    return ap.parse_args()


def main() -> int:
    args = gate_arguments(__doc__, BASELINE)
    measured = measure(tuple(args.target or TARGETS), args.preload)
    for target, got in measured.items():
        print(f"{target:10} {got['bytecodes_per_request']:9,.1f} bytecodes {got['calls_per_request']:7.1f} calls "
              f"per simulated request ({got['requests']:,.0f} requests, pure-Python core, Python {python_version()})")
    if args.record:
        args.baseline.write_text(json.dumps({"python": python_version(), "short_s": SHORT_S, "long_s": LONG_S,
                                             "targets": measured}, indent=2) + "\n")
        print(f"baseline written: {args.baseline}")
        return 0
    base = json.loads(args.baseline.read_text())
    if base["python"] != python_version():
        print(f"{args.baseline}: counted under Python {base['python']}, this is {python_version()}: "
              f"bytecodes differ between versions (record a baseline for this one)", file=sys.stderr)
        return 2
    return report(*judge(measured, base["targets"]), "bytecodes per request")


def report(failures: list[str], notes: list[str], figure: str) -> int:
    """Print a judgement (`judge`'s) and give the exit status: 1 if anything failed."""
    for line in notes:
        print(f"note: {line}")
    for line in failures:
        print(f"FAIL: {line}")
    print(f"{figure}: " + ("FAIL" if failures else "pass"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
