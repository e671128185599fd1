"""The dominant-tenant day for an LLM engine, over seeds: what a request-count limit, a token limit and a
priority class leave of the small tenants' time to first token; and the same day live (`--live`).

Usage: python benchmarks/llm_tenant_day.py [SEEDS]   (default 6; sim only, ~0.1 CPU-s a run)
Per seed, on `workloads.llm` "dominant-tenant" at the `request-count-limits` flaw's rate: the chats alone
(bulk's requests removed), then the flaw present (tenant_rps), fixed (tenant_tok_s), fixed with delay
instead of shed, and present with bulk demoted (tenant_priority=bulk:1). Each cell: the worst TTFT p99 of
the tenants other than bulk / share of all requests within the SLO / bulk's requests shed.

       python benchmarks/llm_tenant_day.py --live [--rate R] [--duration S]   (~1 min)
The day served live by the tiny decoder on 127.0.0.1 (CPU), each request's tenant sent as OpenAI's
`user`: once behind a request-count limit, once behind a token limit, `--duration` s each (default 20).
The day is scaled to the tiny model's 512-token context (`LIVE_DAY`: three chat tenants, 80% of the
requests, and bulk, 20% with ~12x a chat's tokens: the sim's 10% would be ~10 bulk requests in 20 s at a
CPU's rates, too few to show anything reliably), and so is its engine (`LIVE_KV_BLOCKS`: a KV cache of
about two bulk requests, as the sim's flaw shows bulk filling the cache): the limits are the flaw's two
kinds scaled to it: `tenant_rps` twice a chat tenant's request rate (no chat is held to it, and bulk,
asking less, passes whole) against `tenant_tok_s` 1.25x a chat tenant's token rate. Unless `--rate`
says, the rate is picked for this machine: the engine is profiled first (`harness profile llm`, ~10 s),
and the lowest rate where the sim so calibrated shows the flaw (request-limited, the small tenants'
TTFT p99 is over the 2 s SLO) is used: live, server, driver and engine share one process and its
cores, so the live engine is slower than its step cost, and a higher rate overloads both sides. Prints
the small tenants' TTFT p99 on each side, live and in sim, their ratio, bulk's 429s, and the load
average beside every timed figure (a shared machine inflates them; the ratio is the figure to read).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import replace

from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from targets.llm import LlmEngineSpec
from targets.llm.flaws import LLM_FLAWS
from targets.llm.knobs import engine_with
from workloads.llm import LengthDist, LlmSchedule, LlmWorkload, TenantLengths, build_llm_schedule, mix_workload

FLAW = next(f for f in LLM_FLAWS if f.id == "request-count-limits")
RATE = FLAW.rate_rps or 7.0


def _knobs(knobs: dict) -> LlmEngineSpec:
    return engine_with(LlmEngineSpec(), {k: v for k, v in knobs.items() if k != "policy"})


def _cell(spec: LlmEngineSpec, sched: LlmSchedule) -> str:
    r = run_figures(simulate(spec, sched, 60), "llm-continuous", "dominant-tenant", RATE, sched.tenants, 2.0, 0.1)
    bulk = r.per_tenant.get("bulk")
    p99 = r.small_tenants_ttft_p99_s
    if p99 is None:  # the chats alone: every tenant is small
        p99 = max(t.ttft_s.p99 or 0.0 for t in r.per_tenant.values())
    return f"{p99:7.2f} s/{r.slo_attainment:4.0%}/{bulk.shed if bulk else 0:3d}"


def sim_table(seeds: int) -> None:
    cases = {"present": FLAW.present, "fixed": FLAW.fixed, "fixed, delay": {**FLAW.fixed, "over_limit": "delay"},
             "present + priority": {**FLAW.present, "tenant_priority": "bulk:1"}}
    print(f"dominant-tenant at {RATE:g} req/s, 60 s; cells: others' TTFT p99 / within SLO / bulk shed")
    print("seed  " + "".join(f"{name:>24}" for name in ["chats alone", *cases]))
    started = time.process_time()
    for seed in range(1, seeds + 1):
        sched = build_llm_schedule(mix_workload("dominant-tenant", RATE, 60), seed)
        keep = sched.tenant != sched.tenants.index("bulk")
        alone = replace(sched, arrival_s=sched.arrival_s[keep], prompt_tokens=sched.prompt_tokens[keep],
                        output_tokens=sched.output_tokens[keep], tenant=sched.tenant[keep])
        cells = [_cell(LlmEngineSpec(), alone), *(_cell(_knobs(k), sched) for k in cases.values())]
        print(f"{seed:4d}  " + "".join(f"{c:>24}" for c in cells))
    print(f"{time.process_time() - started:.1f} CPU-s")


# -- live -----------------------------------------------------------------------------------------

CHAT_SHARE, CHAT_TOKENS = 0.8 / 3, 24 + 12   # each chat tenant's share of requests; its mean prompt + output
LIVE_KV_BLOCKS = 64                           # x 16 tokens: about two bulk requests
RATES = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)
SLO_TTFT_S, SLO_TPOT_S = 2.0, 0.1
LIVE_DAY = LlmWorkload(
    name="dominant-tenant-live", rate_rps=1.0, duration_s=20.0,
    prompt=LengthDist.of_lognormal(24, 0.5, 100), output=LengthDist.of_lognormal(12, 0.5, 32),
    tenants={"chat-a": CHAT_SHARE, "chat-b": CHAT_SHARE, "chat-c": CHAT_SHARE, "bulk": 1 - 3 * CHAT_SHARE},
    tenant_lengths={"bulk": TenantLengths(prompt=LengthDist.of_lognormal(300, 0.2, 340),
                                          output=LengthDist.of_lognormal(120, 0.2, 160))})


def live_limits(rate_rps: float) -> dict[str, dict]:
    """The flaw's two kinds of limit, scaled to the live day at `rate_rps` (module doc)."""
    chat_rps = CHAT_SHARE * rate_rps
    return {"request limit": {"tenant_rps": round(2 * chat_rps, 2), "tenant_burst_requests": 10},
            "token limit": {"tenant_tok_s": round(1.25 * chat_rps * CHAT_TOKENS), "tenant_burst_tokens": 600}}


def _pick_rate(base: LlmEngineSpec, duration_s: float) -> float:
    """The lowest rate on a grid where the sim (calibrated: `base.cost`) shows the flaw: the request-limited
    day holds the small tenants' TTFT p99 over the SLO. The lowest, because live the server, the driver
    and the engine share this process and its cores, which the step cost does not count."""
    for rate in RATES:
        sched = build_llm_schedule(LIVE_DAY.model_copy(update={"rate_rps": rate, "duration_s": duration_s}), 1)
        run = run_figures(simulate(engine_with(base, live_limits(rate)["request limit"]), sched), "sim", "day",
                          rate, sched.tenants, SLO_TTFT_S, SLO_TPOT_S)
        if (run.small_tenants_ttft_p99_s or 0.0) > SLO_TTFT_S:
            return rate
    return RATES[-1]


def live_day(rate_rps: float | None, duration_s: float) -> None:
    from harness.live.llm_drive import serve_and_drive
    from harness.live.llm_profile import LIVE_ENGINE, profile_llm

    cost = profile_llm(rate_rps=6.0, duration_s=8.0, threads=1).cost
    base = replace(LIVE_ENGINE, kv_blocks=LIVE_KV_BLOCKS, cost=cost)
    how = "as given" if rate_rps else "picked by the profiled sim"
    rate_rps = rate_rps or _pick_rate(base, duration_s)
    sched = build_llm_schedule(LIVE_DAY.model_copy(update={"rate_rps": rate_rps, "duration_s": duration_s}), 1)
    print(f"live dominant-tenant day: {len(sched)} requests over {duration_s:g} s at {rate_rps:g} req/s ({how}); "
          f"tenants {', '.join(sched.tenants)}; bulk asks {_tokens_share(sched):.0%} of the tokens")
    p99s = {}
    for name, knobs in live_limits(rate_rps).items():
        spec = engine_with(base, knobs)
        load = os.getloadavg()[0]
        served = asyncio.run(serve_and_drive(spec, sched, threads=1))
        live, sim = (run_figures(t, name, "day", rate_rps, sched.tenants, SLO_TTFT_S, SLO_TPOT_S)
                     for t in (served.live, served.sim))
        p99s[name] = (live.small_tenants_ttft_p99_s, sim.small_tenants_ttft_p99_s)
        bulk, chats_shed = live.per_tenant["bulk"], sum(t.shed for n, t in live.per_tenant.items() if n != "bulk")
        print(f"  {name:13} {', '.join(f'{k}={v:g}' for k, v in knobs.items())}: small tenants' TTFT p99 "
              f"live {p99s[name][0]:.3f} s (sim {p99s[name][1]:.3f} s); bulk 429s {bulk.shed}/{bulk.requests}, "
              f"chats' 429s {chats_shed}; live unfinished {live.unfinished}, errors {len(served.errors)}"
              f"{f' ({served.errors[0]})' if served.errors else ''}; load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    (rl, rs), (tl, ts) = p99s["request limit"], p99s["token limit"]
    print(f"small tenants' TTFT p99, request limit / token limit: live x{rl / tl:.1f}, sim x{rs / ts:.1f}")


def _tokens_share(sched: LlmSchedule) -> float:
    asked = sched.prompt_tokens + sched.output_tokens
    return float(asked[sched.tenant == sched.tenants.index("bulk")].sum() / asked.sum())


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("seeds", nargs="?", type=int, default=6, help="sim seeds (without --live)")
    args.add_argument("--live", action="store_true", help="serve the day live on the tiny decoder (CPU)")
    args.add_argument("--rate", type=float, help="live: offered req/s (default: picked for this machine)")
    args.add_argument("--duration", type=float, default=20.0, help="live: seconds of arrivals per side")
    a = args.parse_args()
    if a.live:
        live_day(a.rate, a.duration)
    else:
        sim_table(a.seeds)


if __name__ == "__main__":
    main()
