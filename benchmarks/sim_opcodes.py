"""Where a simulated request's work goes: Python bytecodes and calls per request, per function.

Usage: python benchmarks/sim_opcodes.py [--target hardened] [--workload steady] [--duration 1.0] [--top 40]

Runs `--workload` (default steady) for `--duration` simulated seconds under `sys.settrace` with per-opcode
events and prints, per request, the bytecodes each function executed and how often it was
called. Bytecodes and calls are deterministic (no wall clock, no hash seed in them), and
together they predict CPU instructions well: in CPython 3.11 a Python-level call costs about
400-550 instructions, a NamedTuple or small object made through `__init__` 1,400-3,400, a
bytecode a few dozen. Use it to find what to cut; count instructions with
benchmarks/sim_instructions.py. Tracing makes the run ~100x slower: keep `--duration` short.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.loader import load_workload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="hardened")
    ap.add_argument("--workload", default="steady", help="a scenario; phases and faults are kept, stretched or cut to --duration")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    opcodes: Counter = Counter()
    calls: Counter = Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        code = frame.f_code
        key = f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno} {code.co_name}"
        calls[key] += 1

        def local(frame, event, arg):
            if event == "opcode":
                opcodes[key] += 1
            return local
        return local

    workload = load_workload(args.workload).scaled(1.0, args.duration)
    sys.settrace(tracer)
    try:
        n = run_sim(resolve_target(args.target), workload, seed=1).summary.requests.unique
    finally:
        sys.settrace(None)
    print(f"{args.target}, {args.workload} for {args.duration:g} s: {n:,} requests, "
          f"{sum(opcodes.values()) / n:,.0f} bytecodes and {sum(calls.values()) / n:.1f} calls per request")
    print(f"{'bytecodes':>9} {'calls':>6}  function (per request)")
    for key, count in opcodes.most_common(args.top):
        print(f"{count / n:9.1f} {calls[key] / n:6.2f}  {key}")


if __name__ == "__main__":
    main()
