"""Which batching policy is best at low and at peak load, and why.

Runs the hardened target with each batching policy (full, dynamic, greedy,
adaptive, rate) from one shared queue, at peak (10,000 QPS) on several fleet
sizes and at low traffic (20 QPS), and prints p50/p99, mean batch fill and GPU
utilisation.
Usage: python benchmarks/batching_policies.py [--duration 20]
"""

from __future__ import annotations

import argparse

from harness.engine.jobs import Jobs, SimJob


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    policies = {
        "full": "batching=full",
        "dynamic": "batching=dynamic",
        "greedy": "batching=greedy",
        "adapt10%": "batching=adaptive,reserve_fraction=0.1",
        "adapt25%": "batching=adaptive,reserve_fraction=0.25",
        "rate": "batching=rate",
    }
    cases = [("steady", g, p) for g in (33, 36, 41) for p in policies]
    cases += [("low-traffic", 41, p) for p in policies]
    # admission off: the batching policy alone decides.
    jobs = [SimJob(f"hardened:{policies[p]},gpus={g},admission=false", w, 1, {},
                   args.duration if w == "steady" else 120) for w, g, p in cases]
    docs = Jobs(workers=args.jobs).run(jobs)
    print(f"{'workload':12} {'gpus':>4} {'policy':8} {'p50 ms':>7} {'p99 ms':>7} {'fill':>6} {'util':>6} {'goodput':>8}")
    for (w, g, p), d in zip(cases, docs):
        s = d.to_json()["summary"]
        lat = s["latency_s"]
        f = lambda x: "never" if x is None else f"{1000 * x:.0f}"
        print(f"{w:12} {g:4} {p:8} {f(lat['p50']):>7} {f(lat['p99']):>7} {s['gpu']['batch_fill']:6.2f} "
              f"{s['gpu']['utilization']:6.2f} {100 * s['goodput_ratio']:7.1f}%")


if __name__ == "__main__":
    main()
