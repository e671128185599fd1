"""Whether two result files hold the same figures: every value of one equals the other's,
except what says how or where a run was made (wall time, package versions, the file format's
schema version, the runs the run cache gave back).

Usage: python benchmarks/same_figures.py A.json B.json [--ignore KEY ...]

For checks that a change of machinery changes no result: the Ray executor against the local
process pool (same seeds, same jobs), a faster engine against the previous commit. Prints how
many figures were compared and every one that differs (path, A's value, B's value); exits 1
if any differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# How a file was made, not what it measured: wall time, package versions, the format's
# version (`schema`, harness.results.io.SCHEMA), so a file of an older schema compares by its
# figures alone, and which runs the run cache gave back (`cached_runs`, harness.engine.run_cache).
HOW_MADE = {"wall_s", "versions", "schema", "cached_runs"}


def differences(a: Any, b: Any, ignore: set[str], path: str = "") -> tuple[int, list[tuple[str, Any, Any]]]:
    """(figures compared, [(path, a's, b's)]) over the two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        count, out = 0, []
        for key in sorted(set(a) | set(b)):
            if key in ignore:
                continue
            n, d = differences(a.get(key), b.get(key), ignore, f"{path}/{key}")
            count, out = count + n, out + d
        return count, out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        count, out = 0, []
        for i, (x, y) in enumerate(zip(a, b)):
            n, d = differences(x, y, ignore, f"{path}[{i}]")
            count, out = count + n, out + d
        return count, out
    return 1, ([] if a == b else [(path or "/", a, b)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--ignore", action="append", default=[], help="a key to skip wherever it appears (repeatable)")
    args = ap.parse_args()
    with open(args.a) as fa, open(args.b) as fb:
        a, b = json.load(fa), json.load(fb)
    count, diffs = differences(a, b, HOW_MADE | set(args.ignore))
    print(f"{count:,} figures compared; {len(diffs)} differ")
    for path, x, y in diffs[:50]:
        print(f"  {path}: {str(x)[:60]} != {str(y)[:60]}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
