"""The compiled core's CI speed figure: machine instructions per simulated request, against a
committed baseline.

Usage: python benchmarks/core_instructions.py [--record] [--target naive --target hardened]
                                              [--preload MODULE] [--baseline FILE]

What ships is the mypyc-compiled core, whose speed the pure-Python bytecode count
(benchmarks/sim_bytecodes.py) does not follow: a change that types a loop for mypyc (a native
loop over unboxed ints in place of `min` and `list.index`) runs more bytecodes and fewer
instructions. This counts the instructions themselves: each target runs SECONDS of `steady`
once in a process of its own under `valgrind --tool=callgrind`, collecting only inside the
virtual-time run (`run_virtual`, so imports, set-up of the process and the summary are left
out), with PYTHONHASHSEED=0; the count divided by the requests is the figure. Valgrind counts
instructions exactly: the same tree gives the same figure to the unit, whatever else the
machine runs. A count takes about 25 s (the two targets side by side).

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

from sim_bytecodes import TARGETS, TOLERANCE, gate_arguments, judge, report

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().with_suffix(".json")
SECONDS = 1.0          # simulated seconds of `steady` (10,000 req/s)
COLLECT = "CPyDef_clock___run_virtual"  # the compiled harness.engine.clock.run_virtual

RUN = """
import importlib, json, sys
from harness.engine.sim import run_sim
from targets.native import status
from targets.spec import resolve_target
from workloads.loader import load_workload

target, seconds, preload = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if not status().startswith("compiled"):
    sys.exit("the compiled core is not running: " + status())
if preload:
    importlib.import_module(preload)
n = run_sim(resolve_target(target), load_workload("steady").scaled(1.0, seconds), seed=1).summary.requests.unique
print(json.dumps({"requests": n}))
"""


def build() -> str:
    """The Python build and machine a count holds for."""
    return f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.machine()}"


def count(target: str, preload: str = "", tree: Path = ROOT) -> dict[str, float]:
    """{requests, instructions_per_request} of `target` (see the module doc)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "PYTHONHASHSEED": "0", "PYTHONWARNINGS": "ignore"}
    env.pop("HARNESS_PURE_PYTHON", None)
    out = subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={COLLECT}",
                          "--callgrind-out-file=/dev/null", sys.executable, "-c", RUN, target, str(SECONDS), preload],
                         env=env, cwd=str(tree), capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"counting {target} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if refs is None:
        raise RuntimeError(f"counting {target}: valgrind printed no instruction count")
    instructions = int(refs.group(1).replace(",", ""))
    requests = int(json.loads(out.stdout.strip().splitlines()[-1])["requests"])
    if instructions < 100 * requests:  # nothing collected: the compiled run_virtual was not entered
        raise RuntimeError(f"counting {target}: {instructions:,} instructions for {requests:,} requests: "
                           f"was {COLLECT} renamed?")
    return {"requests": requests, "instructions_per_request": instructions / requests}


def measure(targets: tuple[str, ...] = TARGETS, preload: str = "") -> dict[str, dict[str, float]]:
    """Each target's count, the targets' processes side by side."""
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        return dict(zip(targets, pool.map(lambda t: count(t, preload), targets)))


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
        measured = measure(tuple(args.target or TARGETS), args.preload)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    for target, got in measured.items():
        print(f"{target:10} {got['instructions_per_request']:9,.0f} instructions per simulated request "
              f"({got['requests']:,.0f} requests, compiled core, {build()})")
    if args.record:
        args.baseline.write_text(json.dumps({"build": build(), "seconds": SECONDS, "targets": measured},
                                            indent=2) + "\n")
        print(f"baseline written: {args.baseline}")
        return 0
    return report(*judge(measured, base["targets"], TOLERANCE, "instructions_per_request", "instructions"),
                  "instructions per request")


if __name__ == "__main__":
    sys.exit(main())
