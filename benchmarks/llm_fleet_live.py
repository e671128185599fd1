"""Live LLM fleet on the chat day through `harness compare --mode live`'s library: routers ranked live and sim.

Usage (from the repository root)::

    python benchmarks/llm_fleet_live.py                      # about 5 minutes on 2 cores
    python benchmarks/llm_fleet_live.py --routers prefix,sglang:cache_aware --duration 20

First the tiny decoder's step cost and front end are fitted on this machine for
`--profile-s` seconds: by default (`--profile fleet`) on the first fleet's own
replicas, all driven at once as the day drives them (`harness.live.llm_fleet_profile`);
`--profile alone` takes `harness profile llm`'s calibration instead, one engine in
this process beside its driver (one GIL: under load its fit parted from the
replicas' steps by 3-9x). Then the live fleet compare
(`harness.analysis.llm.fleet_live`, what `harness compare llm-fleet:... --mode live`
runs) serves each router's fleet of `--replicas` `serve llm-continuous` processes
(prefix caching on) on loopback in turn, measures the router's own cost (probes
through the front against probes direct), drives the live chat day (the same
conversations, text and arrivals for every router) and simulates the same schedule
with the profiled cost, its front end and that router cost, under the sim router
that models the live one (`SIM_OF`: sglang's and vllm's round_robin -> round-robin,
cache_aware -> cache-aware, each as it behaves on the wire). Printed: TTFT p50 and p99 live and sim, live / sim, prefix
hit rate by tokens and live - sim in points, where TTFT went (front in and out, live
medians against the sim's applied constants; the router's share), the checks (hit
rate within 5 points, TTFT p50 within 20%), and the rankings by TTFT p50 and by hit
rate in each mode. The load average is printed before and after.

Every live figure is taken on the machine it runs on, with the driver, the router
and every replica sharing its cores: say what else was running.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.stats import spearmanr  # noqa: E402

from harness.analysis.llm.fleet_live import FITS, LiveFleetCompare, run_live_fleets  # noqa: E402
from harness.live.llm_fleet_drive import LIVE_CHAT  # noqa: E402
from harness.live.llm_fleet_external import EXTERNAL_ROUTERS, external_available  # noqa: E402
from harness.live.llm_fleet_serve import parse_live_fleet  # noqa: E402
from harness.live.llm_profile import profile_llm  # noqa: E402
from targets.llm.cost import StepCost  # noqa: E402

HIT_POINTS, TTFT_REL = 5.0, 0.20


def fmt(x: float | None, unit: str = "ms") -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f}" if unit == "ms" else f"{x:.1%}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_cost(cost: StepCost) -> None:
    print(f"profiled: base {cost.base_s * 1e3:.2f} ms, prefill {cost.per_prefill_token_s * 1e6:.1f} us/token, "
          f"decode {cost.per_decode_seq_s * 1e6:.1f} us/row, context {cost.per_context_token_s * 1e9:.1f} ns/token, "
          f"wake-up {cost.wake_s * 1e3:.2f} ms, front end in {cost.frontend_in_s * 1e3:.2f} ms, "
          f"out {cost.frontend_out_s * 1e3:.2f} ms", flush=True)


def report(runs: dict, names: list[str], sim_day: str) -> None:
    """The live days against one sim day: the table, where TTFT went, the rankings and the checks."""
    print(f"\nagainst {sim_day}:")
    print(f"{'router':<20}{'TTFT p50 ms':>12}{'sim':>7}{'l/s':>6}{'p99 ms':>8}{'sim':>7}{'hit':>7}{'sim':>7}"
          f"{'pts':>6}  checks")
    met = []
    for name in names:
        lv, sm = runs[(name, "chat live")], runs[(name, sim_day)]
        ratio = lv.ttft_s.p50 / sm.ttft_s.p50 if lv.ttft_s.p50 and sm.ttft_s.p50 else None
        pts = ((lv.prefix_hit_rate - sm.prefix_hit_rate) * 100
               if lv.prefix_hit_rate is not None and sm.prefix_hit_rate is not None else None)
        hit_ok = pts is not None and abs(pts) <= HIT_POINTS
        ttft_ok = ratio is not None and abs(ratio - 1) <= TTFT_REL
        met.append((name, hit_ok, ttft_ok))
        print(f"{name:<20}{fmt(lv.ttft_s.p50):>12}{fmt(sm.ttft_s.p50):>7}{'-' if ratio is None else f'{ratio:.2f}':>6}"
              f"{fmt(lv.ttft_s.p99):>8}{fmt(sm.ttft_s.p99):>7}{fmt(lv.prefix_hit_rate, '%'):>7}"
              f"{fmt(sm.prefix_hit_rate, '%'):>7}{'-' if pts is None else f'{pts:+.1f}':>6}  "
              f"hit {'ok' if hit_ok else 'NOT MET'}, TTFT {'ok' if ttft_ok else 'NOT MET'}"
              f"  ({lv.finished}/{lv.requests} finished, per replica {[p.requests for p in lv.per_replica]})")
    print("\nwhere TTFT went (ms): live medians of each request against the sim's constants; the router's own "
          "cost (probes, idle fleet) is part of the sim's; steps l/s against the profile's fit")
    print(f"  {'router':<20}{'in live':>8}{'sim':>6}{'out live':>9}{'sim':>6}{'router in':>10}{'out':>6}"
          f"{'engine live':>12}{'sim':>6}{'steps l/s':>10}")
    for name in names:
        lv, sm = runs[(name, "chat live")], runs[(name, sim_day)]
        eng = (lv.ttft_s.p50 - (lv.front_in_s or 0) - (lv.front_out_s or 0)) if lv.ttft_s.p50 else None
        eng_sim = (sm.ttft_s.p50 - (sm.front_in_s or 0) - (sm.front_out_s or 0)) if sm.ttft_s.p50 else None
        print(f"  {name:<20}{fmt(lv.front_in_s):>8}{fmt(sm.front_in_s):>6}{fmt(lv.front_out_s):>9}"
              f"{fmt(sm.front_out_s):>6}{fmt(lv.router_in_s):>10}{fmt(lv.router_out_s):>6}{fmt(eng):>12}"
              f"{fmt(eng_sim):>6}{'-' if lv.step_slowdown is None else f'{lv.step_slowdown:.2f}':>10}")
    for key, label in ((lambda r: r.ttft_s.p50 or float("inf"), "TTFT p50"),
                       (lambda r: -(r.prefix_hit_rate or 0.0), "hit rate")):
        for day in ("chat live", sim_day):
            ranked = sorted(names, key=lambda n: key(runs[(n, day)]))
            print(f"ranking by {label}, {day.removeprefix('chat ')}: "
                  f"{' < '.join(ranked) if label == 'TTFT p50' else ' > '.join(ranked)}")
        if len(names) >= 3:
            rho = spearmanr([key(runs[(n, "chat live")]) for n in names], [key(runs[(n, sim_day)]) for n in names])
            print(f"  live and sim rankings by {label}: Spearman {float(rho.statistic):.2f}")
    print(f"checks met: hit rate {sum(h for _, h, _ in met)}/{len(met)}, TTFT p50 {sum(t for _, _, t in met)}/{len(met)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--routers", default="round-robin,prefix,kv-aware,sglang:round_robin,sglang:cache_aware,vllm:round_robin,vllm:cache_aware")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--rate", type=float, default=LIVE_CHAT.rate_rps)
    ap.add_argument("--duration", type=float, default=LIVE_CHAT.duration_s)
    ap.add_argument("--profile-s", type=float, default=15.0)
    ap.add_argument("--profile", choices=("fleet", "alone"), default="fleet",
                    help="fit the cost on the fleet's replicas at once (default) or one engine in this process")
    ap.add_argument("--fit", choices=FITS, default="profile",
                    help="the sim's step cost: the profile's for every fleet (default), or each fleet's own day's "
                         "steps fitted again (the front end stays the profile's), so drift between fleets is not "
                         "read as the sim's error; both: each live day against both sims")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the fleet result here")
    args = ap.parse_args()
    routers = [r for r in args.routers.split(",") if r]
    for name, ext in EXTERNAL_ROUTERS.items():
        if any(r.startswith(f"{name}:") for r in routers) and not external_available(name):
            print(f"{name}-router is not installed ({ext.install}): its rows are left out")
            routers = [r for r in routers if not r.startswith(f"{name}:")]
    print(f"load average {load()}", flush=True)
    cost, profile_s = None, None
    if args.profile == "alone":
        print(f"profiling {args.profile_s:g} s, one engine in this process ...", flush=True)
        cost = profile_llm(duration_s=args.profile_s).cost
        print_cost(cost)
    else:
        profile_s = args.profile_s
    fleets = tuple(parse_live_fleet(f"llm-fleet:router={r},replicas={args.replicas}") for r in routers)
    compare = LiveFleetCompare(fleets=fleets, rate_rps=args.rate, duration_s=args.duration, seed=args.seed, cost=cost,
                               profile_s=profile_s, fit=args.fit)
    schedule = compare.schedule()
    print(f"chat-live: {len(schedule)} requests in {args.duration:g} s (sim steps: {args.fit} fit), "
          f"{len(set(schedule.conversation.tolist()))} conversations, {args.replicas} replicas", flush=True)
    result = run_live_fleets(compare, on_run=lambda what: print(f"  {what} (load {load()})", flush=True))
    if profile_s is not None:
        print_cost(StepCost(**result.settings.engine.cost))
    runs = {(r.router, r.day): r for r in result.runs}
    names = [f.router_name for f in fleets]
    for sim_day in result.settings.days[1:]:
        report(runs, names, sim_day)
    print(f"load average {load()}")
    if args.json:
        args.json.write_text(json.dumps(result.to_json(), indent=1))


if __name__ == "__main__":
    main()
