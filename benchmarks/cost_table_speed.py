"""Wall time of one ``CostTable.seconds`` lookup: what a table-driven sim pays per batch.

Usage: python benchmarks/cost_table_speed.py [--calls 200000]
Prints microseconds per call for memoised keys (a sim asks the same few batch sizes and
lengths again and again) and for fresh keys (interpolation each time). Budget: well under
the simulator's cost per request (about 20 us; see sim_speed.py), so a table costs a sim
no more than the constant model. A printout, not a test: wall-clock timings belong here.
"""

from __future__ import annotations

import argparse
import time

from targets.cost_table import CostPoint, CostTable

GRID = CostTable("bench", "cpu", "-", 1, tuple(
    CostPoint(b, n, 0.001 * b + 0.0001 * n) for n in (16, 32, 64, 128) for b in (1, 2, 4, 8, 16, 32, 64)))


def per_call_us(calls: int, keys: list[tuple[int, int]], fresh: bool) -> float:
    start = time.perf_counter()
    for i in range(calls):
        if fresh and i % len(keys) == 0:
            GRID._cache.clear()  # every key misses: time the interpolation itself
        b, n = keys[i % len(keys)]
        GRID.seconds(b, n)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200_000)
    args = ap.parse_args()
    keys = [(1 + i % 64, 16 + i % 100) for i in range(1000)]
    print(f"memoised keys: {per_call_us(args.calls, keys[:20], fresh=False):6.2f} us per call")
    print(f"fresh keys:    {per_call_us(args.calls, keys, fresh=True):6.2f} us per call")


if __name__ == "__main__":
    main()
