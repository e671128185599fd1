"""The compiled core's CI speed figure: machine instructions per simulated request, against a
committed baseline.

Usage: python benchmarks/core_instructions.py [--record] [--target naive --target "naive spike" ...]
                                              [--preload MODULE] [--baseline FILE]

What ships is the mypyc-compiled core, whose speed the pure-Python bytecode count
(benchmarks/sim_bytecodes.py) does not follow: a change that types a loop for mypyc (a native
loop over unboxed ints in place of `min` and `list.index`) runs more bytecodes and fewer
instructions. This counts the instructions themselves, for each of RUNS: `naive` and `hardened`
on SECONDS of `steady` (per request), and `naive spike`, the naive design's retry storm on 6 s of
`spike` (2.3 attempts a request: the per-attempt path, which the longest runs of `compare` and
`rank` spend their time on). Each runs once in a process of its own under `valgrind
--tool=callgrind`, collecting only inside the virtual-time run (`run_virtual`, so imports, set-up
of the process and the summary are left out), with PYTHONHASHSEED=0; the count divided by the
requests is the figure. Valgrind counts instructions exactly: the same tree gives the same figure
to the unit, whatever else the machine runs. A count takes about 30 s (two at a time).

Without `--record`: each target's figure against the baseline (benchmarks/core_instructions.json);
exit 1 when one rose more than TOLERANCE (a 20% rise always fails), a note where one fell that
far. `--record` writes the figures as the new baseline: do it in the commit that changes them,
saying why. The count depends on the Python build and the C compiler, so a baseline holds the
Python version and machine it was counted on, and another is refused (exit 2), as is a process
without the compiled core or without valgrind (`apt-get install valgrind`).
`--preload MODULE`: import MODULE in the counting process first (tests plant a slowdown so).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sim_bytecodes import TOLERANCE, gate_arguments, judge, report

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().with_suffix(".json")
SECONDS = 1.0          # simulated seconds of `steady` (10,000 req/s)
# Each figure: (target, workload, simulated seconds), run as the suite runs a scenario cut short.
RUNS: dict[str, tuple[str, str, float]] = {
    "naive": ("naive", "steady", SECONDS),
    "hardened": ("hardened", "steady", SECONDS),
    "naive spike": ("naive", "spike", 6.0),   # 72,239 requests, 163,212 attempts: a retry storm
}
COLLECT = "CPyDef_clock___run_virtual"  # the compiled harness.engine.clock.run_virtual

RUN = """
import importlib, json, sys
from harness.engine.sim import run_sim
from targets.native import status
from targets.spec import resolve_target
from workloads.loader import load_workload

target, workload, seconds, preload = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
if not status().startswith("compiled"):
    sys.exit("the compiled core is not running: " + status())
if preload:
    importlib.import_module(preload)
got = run_sim(resolve_target(target), load_workload(workload).scaled(1.0, seconds), seed=1).summary.requests
print(json.dumps({"requests": got.unique, "attempts": got.attempts}))
"""


def build() -> str:
    """The Python build and machine a count holds for."""
    return f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.machine()}"


def count(name: str, preload: str = "", tree: Path = ROOT) -> dict[str, float]:
    """{requests, attempts, instructions_per_request} of the run RUNS[`name`] (see the module doc)."""
    if name not in RUNS:
        raise RuntimeError(f"no such figure {name!r}: one of {', '.join(RUNS)}")
    target, workload, seconds = RUNS[name]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "PYTHONHASHSEED": "0", "PYTHONWARNINGS": "ignore"}
    env.pop("HARNESS_PURE_PYTHON", None)
    out = subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={COLLECT}",
                          "--callgrind-out-file=/dev/null", sys.executable, "-c", RUN, target, workload, str(seconds),
                          preload],
                         env=env, cwd=str(tree), capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"counting {name} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if refs is None:
        raise RuntimeError(f"counting {name}: valgrind printed no instruction count")
    instructions = int(refs.group(1).replace(",", ""))
    ran = json.loads(out.stdout.strip().splitlines()[-1])
    requests = int(ran["requests"])
    if instructions < 100 * requests:  # nothing collected: the compiled run_virtual was not entered
        raise RuntimeError(f"counting {name}: {instructions:,} instructions for {requests:,} requests: "
                           f"was {COLLECT} renamed?")
    return {"requests": requests, "attempts": int(ran["attempts"]), "instructions_per_request": instructions / requests}


def measure(names: tuple[str, ...] = tuple(RUNS), preload: str = "") -> dict[str, dict[str, float]]:
    """Each figure's count, two processes at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(names, pool.map(lambda n: count(n, preload), names)))


def main() -> int:
    args = gate_arguments(__doc__, BASELINE)
    if shutil.which("valgrind") is None:
        print("valgrind not found: apt-get install valgrind", file=sys.stderr)
        return 2
    if not args.record:
        base = json.loads(args.baseline.read_text())
        if base["build"] != build():
            print(f"{args.baseline}: counted on {base['build']}, this is {build()}: instruction counts differ "
                  "between builds (record a baseline for this one)", file=sys.stderr)
            return 2
    try:
        measured = measure(tuple(args.target or RUNS), args.preload)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    for name, got in measured.items():
        target, workload, seconds = RUNS[name]
        print(f"{name:12} {got['instructions_per_request']:9,.0f} instructions per simulated request "
              f"({target} on {seconds:g} s of {workload}: {got['requests']:,.0f} requests, {got['attempts']:,.0f} "
              f"attempts; compiled core, {build()})")
    if args.record:
        args.baseline.write_text(json.dumps({"build": build(), "runs": RUNS, "targets": measured},
                                            indent=2) + "\n")
        print(f"baseline written: {args.baseline}")
        return 0
    return report(*judge(measured, base["targets"], TOLERANCE, "instructions_per_request", "instructions"),
                  "instructions per request")


if __name__ == "__main__":
    sys.exit(main())
