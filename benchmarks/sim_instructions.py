"""CPU instructions per simulated request, counted by valgrind: a speed figure that other work
on the machine cannot disturb (wall and CPU time on a shared 2-core machine drift +-30%).

Usage: python benchmarks/sim_instructions.py [--target naive --target hardened] [--against DIR]
                                             [--hash-seeds 0,1,2]
Runs `steady` for 0.2 s and for 1.0 s of simulated time under `valgrind --tool=cachegrind
--cache-sim=no` and divides the difference in instructions by the 8,000 requests between them
(imports and set-up cancel out). `--against DIR`: the same for another checkout of the project
(e.g. `git worktree add /tmp/base <commit>`), printed beside it as a ratio. Needs valgrind
(`apt-get install valgrind`); each count takes about a minute.

Python randomises string hashing per process, and with it how dicts keyed by tenant names and
request IDs collide: one run's count moved by up to 10% between processes. Each figure is
therefore the mean over fixed `PYTHONHASHSEED`s (`--hash-seeds`), the same seeds for both trees.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = """
import sys
from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.loader import load_workload
run_sim(resolve_target(sys.argv[1]), load_workload("steady").scaled(1.0, float(sys.argv[2])), seed=1)
"""


def instructions(tree: Path, target: str, seconds: float, hash_seed: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": str(hash_seed)}
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, "-c", RUN, target, str(seconds)],
                         env=env, cwd="/", capture_output=True, text=True, check=True)
    return int(re.search(r"I\s+refs:\s+([\d,]+)", out.stderr).group(1).replace(",", ""))


def per_request(tree: Path, target: str, hash_seeds: list[int]) -> float:
    counts = [instructions(tree, target, 1.0, h) - instructions(tree, target, 0.2, h) for h in hash_seeds]
    return sum(counts) / len(counts) / 8_000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", action="append", default=None)
    ap.add_argument("--against", type=Path, default=None, help="another checkout to count beside this one")
    ap.add_argument("--hash-seeds", default="0,1,2", help="PYTHONHASHSEEDs to average over (comma-separated)")
    args = ap.parse_args()
    seeds = [int(h) for h in args.hash_seeds.split(",")]
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found: apt-get install valgrind")
    print(f"{'target':10} {'instructions/request':>21}" + (f" {'against':>10} {'ratio':>6}" if args.against else ""))
    for target in args.target or ["naive", "hardened"]:
        here = per_request(ROOT, target, seeds)
        line = f"{target:10} {here:21,.0f}"
        if args.against:
            there = per_request(args.against, target, seeds)
            line += f" {there:10,.0f} {there / here:5.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
