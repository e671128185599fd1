"""Live LLM fleet on the chat day: routers ranked behind the project's router and behind sglang-router, sim beside.

Usage (from the repository root)::

    python benchmarks/llm_fleet_live.py                      # about 4 minutes on 2 cores
    python benchmarks/llm_fleet_live.py --routers prefix,sglang:cache_aware --duration 20

First `harness profile llm`'s calibration (`--profile-s` seconds) fits the tiny
decoder's step cost and front end on this machine. Then for each router a fleet of
`--replicas` `serve llm-continuous` processes (prefix caching on) starts behind it
(`harness.live.llm_fleet_serve`) and is driven with the live chat day
(`harness.live.llm_fleet_drive.LIVE_CHAT`: the same conversations, the same text,
the same arrivals for every router), open loop; the replicas' prefix figures and
the project's router's own cost are read after. Beside each live row, the sim of
the same schedule with the profiled cost and the sim router that models it
(sglang's round_robin -> round-robin, cache_aware -> prefix). Printed: TTFT p50
and p99, prefix hit rate by tokens, live - sim in points and live / sim TTFT p50,
and the ranking by TTFT p50 in each mode.

Every live figure is taken on the machine it runs on, with the driver, the router
and every replica sharing its cores: say what else was running.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.engine.llm_fleet import simulate_fleet  # noqa: E402
from harness.engine.llm_fleet_metrics import fleet_figures  # noqa: E402
from harness.live.llm_fleet_drive import LIVE_CHAT, day_texts, drive_fleet, split_ttft, ttft_figures  # noqa: E402
from harness.live.llm_fleet_serve import parse_live_fleet, sglang_available, start_fleet  # noqa: E402
from harness.live.llm_profile import profile_llm  # noqa: E402
from workloads.llm_days import build_fleet_schedule  # noqa: E402

# The sim router that models each sglang policy. cache_aware sends a request to the worker with the longest
# prefix match unless the load is imbalanced past its thresholds (64 requests, 1.5x): at this load, never;
# so prefix affinity without a load bound (whose hit rate it matched: 83.3% both, in the first run).
SIM_OF = {"sglang:round_robin": "round-robin", "sglang:cache_aware": "prefix,load_factor=0",
          "sglang:power_of_two": "least-tokens"}


async def live_row(router: str, replicas: int, schedule, texts) -> dict:
    live = parse_live_fleet(f"llm-fleet:router={router},replicas={replicas}")
    fleet = await start_fleet(live)
    try:
        before = await fleet.figures()
        driven = await drive_fleet(fleet.url, schedule, texts)
        after = await fleet.figures()
        split = split_ttft(driven, await fleet.request_times())
    finally:
        await fleet.close()
    hit = after["hit_tokens"] - before["hit_tokens"]
    prompt = after["prompt_tokens"] - before["prompt_tokens"]
    lookups = [a - b for a, b in zip(after["lookups"], before["lookups"])]
    return {**ttft_figures(driven), "error_texts": driven.errors, "hit_rate": hit / prompt if prompt else None, "per_replica": lookups,
            "router_cost": after.get("router_cost"), "evictions": after["evictions"], "split": split}


def sim_row(router: str, replicas: int, schedule, cost, front_s: float) -> dict:
    """The sim of the same schedule. The fleet sim (harness.engine.llm_fleet) prices steps only: it does not
    apply StepCost's front-end terms, which a single engine's sim does, so they are added here, `front_s` =
    in + out: a constant delay of every arrival shifts the whole day, and adds exactly that to each TTFT."""
    live = parse_live_fleet(f"llm-fleet:router={SIM_OF.get(router, router)},replicas={replicas}")
    fleet = replace(live.fleet, engine=replace(live.fleet.engine, cost=cost))
    run = fleet_figures(simulate_fleet(fleet, schedule), fleet.name, fleet.router, schedule.name, LIVE_CHAT.rate_rps,
                        schedule.turn, 1.0, 0.1)
    p50, p99 = run.ttft_s.p50, run.ttft_s.p99
    return {"ttft_p50_s": p50 + front_s if p50 is not None else None,
            "ttft_p99_s": p99 + front_s if p99 is not None else None, "engine_ttft_p50_s": p50,
            "hit_rate": run.prefix_hit_rate, "finished": run.finished,
            "per_replica": [p.requests for p in run.per_replica]}


def fmt(x: float | None, unit: str = "ms") -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f}" if unit == "ms" else f"{x:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--routers", default="round-robin,prefix,kv-aware,sglang:round_robin,sglang:cache_aware")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--rate", type=float, default=LIVE_CHAT.rate_rps)
    ap.add_argument("--duration", type=float, default=LIVE_CHAT.duration_s)
    ap.add_argument("--profile-s", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args()
    routers = [r for r in args.routers.split(",") if r]
    if any(r.startswith("sglang:") for r in routers) and not sglang_available():
        print("sglang-router is not installed (pip install 'inference-harness[sglang]'): its rows are left out")
        routers = [r for r in routers if not r.startswith("sglang:")]
    day = LIVE_CHAT.model_copy(update={"rate_rps": args.rate, "duration_s": args.duration})
    schedule = build_fleet_schedule(day, args.seed)
    texts = day_texts(schedule)
    print(f"chat-live: {len(schedule)} requests in {args.duration:.0f} s, "
          f"{len(set(schedule.conversation.tolist()))} conversations, {args.replicas} replicas; profiling ...")
    cost = profile_llm(duration_s=args.profile_s).cost
    print(f"profiled: base {cost.base_s * 1e3:.2f} ms, prefill {cost.per_prefill_token_s * 1e6:.1f} us/token, "
          f"front end in {cost.frontend_in_s * 1e3:.2f} ms, out {cost.frontend_out_s * 1e3:.2f} ms")
    rows = []
    for router in routers:
        live = asyncio.run(live_row(router, args.replicas, schedule, texts))
        sim = sim_row(router, args.replicas, schedule, cost, cost.frontend_in_s + cost.frontend_out_s)
        sp = live["split"]
        live_front = sp["front_in_s"] + sp["front_out_s"] if sp["matched"] else None
        rows.append({"router": router, "live": live, "sim": sim, "live_front_s": live_front})
        print(f"  {router}: live {live['finished']}/{live['requests']} finished, per replica {live['per_replica']}"
              + (f"; first error: {live['error_texts'][0][:100]}" if live["error_texts"] else ""), flush=True)
    print(f"\n{'router':<20}{'TTFT p50 ms':>12}{'sim':>7}{'l/s':>6}{'p99 ms':>8}{'sim':>7}{'hit':>7}{'sim':>7}"
          f"{'pts':>6}")
    for row in rows:
        lv, sm = row["live"], row["sim"]
        ratio = lv["ttft_p50_s"] / sm["ttft_p50_s"] if lv["ttft_p50_s"] and sm["ttft_p50_s"] else None
        pts = (lv["hit_rate"] - sm["hit_rate"]) * 100 if lv["hit_rate"] is not None and sm["hit_rate"] is not None else None
        print(f"{row['router']:<20}{fmt(lv['ttft_p50_s']):>12}{fmt(sm['ttft_p50_s']):>7}"
              f"{'-' if ratio is None else f'{ratio:.2f}':>6}{fmt(lv['ttft_p99_s']):>8}{fmt(sm['ttft_p99_s']):>7}"
              f"{fmt(lv['hit_rate'], '%'):>7}{fmt(sm['hit_rate'], '%'):>7}{'-' if pts is None else f'{pts:+.1f}':>6}")
    print(f"\nwhere live TTFT went (medians, ms; profiled front end {fmt(cost.frontend_in_s)} in, "
          f"{fmt(cost.frontend_out_s)} out):")
    print(f"  {'router':<20}{'front in':>9}{'engine':>8}{'out':>6}{'sim eng':>9}{'l/s eng':>9}"
          f"{'sim+live front':>16}{'l/s':>6}")
    for row in rows:
        sp, sm, lv = row["live"]["split"], row["sim"], row["live"]
        if not sp["matched"]:
            print(f"  {row['router']:<20}(no request ids came through: the front does not forward X-Request-Id)")
            continue
        eng = sm["engine_ttft_p50_s"]
        with_front = eng + row["live_front_s"] if eng is not None else None
        print(f"  {row['router']:<20}{fmt(sp['front_in_s']):>9}{fmt(sp['engine_ttft_s']):>8}{fmt(sp['front_out_s']):>6}"
              f"{fmt(eng):>9}{sp['engine_ttft_s'] / eng if eng else float('nan'):>9.2f}{fmt(with_front):>16}"
              f"{lv['ttft_p50_s'] / with_front if with_front else float('nan'):>6.2f}")
    for mode in ("live", "sim"):
        ranked = sorted(rows, key=lambda r: r[mode]["ttft_p50_s"] or float("inf"))
        print(f"ranking by TTFT p50, {mode}: {' < '.join(r['router'] for r in ranked)}")
    costs = [(r["router"], r["live"]["router_cost"]) for r in rows if r["live"].get("router_cost")]
    for name, c in costs:
        print(f"our router ({name}): route p50 {c['route_us_p50']} us, p99 {c['route_us_p99']} us, "
              f"CPU {c['cpu_us_per_request']} us/request over {c['requests']} requests")
    if args.json:
        args.json.write_text(json.dumps({"cost": vars(cost), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
