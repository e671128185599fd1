"""`harness compare llm-fleet:... llm-fleet:... --mode live`: each fleet served on loopback, the same chat day driven.

`LiveFleetCompare` names the fleets (`harness.live.llm_fleet_serve.LiveFleet`: the
project's router with any sim policy, or `router=sglang:POLICY` / `vllm:POLICY`), the day's offered
rate and length (the live chat day, `harness.live.llm_fleet_drive.LIVE_CHAT`, sized for
the tiny decoder's 512 tokens), the seed and the SLO. For each fleet in turn:
its replicas and router start (`start_fleet`; a fleet of the same replicas and engine as
the one before keeps those replica processes, their prefix caches flushed, behind its own
front: `RunningFleet.switch_front`), the router's own cost is measured
(`harness.live.llm_fleet_cost`: probes through the front against probes direct), the
day is driven open loop (the same conversations, text and arrivals for every fleet),
and the replicas' figures are read before and after, with their step logs over the day
(`step_slowdown`: how much slower than the sim's cost each step ran). Beside each live run, the sim of
the same schedule (`harness.engine.llm_fleet`) with the sim's step cost (`cost`: from
`harness profile llm`, `--set cost=FILE`; or, with `profile_s`, profiled on the first
fleet's own replicas, all driven at once, before any day: `harness.live.llm_fleet_profile`,
their caches flushed after; with `fit="day"` each fleet's steps fitted again to its own day's
step log, the front end kept: `FITS`), its front end, and the router cost just
measured, under the sim router that models the live one (`SIM_OF`: sglang's and vllm's
`round_robin` as round robin, `cache_aware` as `cache-aware`, sglang-router 0.3.2 as it behaves).

One `fleet` result, as the sim compare's: days "chat live" and "chat sim", the
verdicts of B against A on each, the ranking of the live runs. Bounded: at most
`MAX_DURATION_S` of day and `MAX_REQUESTS` requests, each request abandoned after
`timeout_s` (unfinished), each fleet's start within `START_TIMEOUT_S`; a fleet with
errors ends the compare with a ValueError naming the first.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable

from harness.analysis.llm.compare import engine_settings
from harness.analysis.llm.fleet import judge_fleets, rank_fleets
from harness.engine.llm_fleet import FleetTrace, ReplicaTrace, simulate_fleet
from harness.engine.llm_fleet_metrics import fleet_figures
from harness.live.llm_fleet_cost import RouterCost, measure_router_cost
from harness.live.llm_fleet_drive import LIVE_CHAT, day_texts, drive_fleet, split_ttft
from harness.live.llm_fleet_profile import MAX_PROFILE_S, FleetProfile, profile_replicas
from harness.live.llm_fleet_serve import LiveFleet, RunningFleet, start_fleet
from harness.results.fleet import FleetResult, FleetRun, FleetSettings
from targets.llm.cost import StepCost
from targets.llm.fleet import FleetSpec, parse_fleet
from targets.llm.prefix_cache import PrefixStats
from workloads.llm_days import FleetSchedule, build_fleet_schedule

__all__ = ["FITS", "LIVE_DAY", "LiveFleetCompare", "MAX_DURATION_S", "MAX_REQUESTS", "SIM_OF", "live_run", "run_live_fleets",
           "sim_fleet_of"]

LIVE_DAY = "chat"
MAX_DURATION_S = 300.0
MAX_REQUESTS = 2_000
# Where the sim's step cost comes from: the profile (or `cost`) for every fleet; or, "day", each fleet's
# own day's steps (`StepCost.fit_wake` over its replicas' step log; the front end stays the profile's),
# so that a machine drifting between the first fleet's profile and the last fleet's day (steps 1.1-1.5x
# the profile's fit minutes later, measured) is not read as the sim's error in routing and queueing.
# "both": the profile's as "chat sim" and the day's as "chat sim day-fit", beside the same live days.
FITS = ("profile", "day", "both")
# The sim router that models each shipped router's policy: cache_aware as `cache-aware` (routing.CacheAware:
# sglang-router 0.3.2 as it behaves on the wire: a cold prompt to the least loaded worker, ties to one of them,
# a prompt past the threshold to the worker with its head). vllm-router 0.1.17's, forked from it, behaves the
# same with the same defaults when the workers answer `/v1/completions/render` (it keeps its tree over those
# token ids; without them it routes by load alone): `benchmarks/router_probe.py`.
SIM_OF = {f"{name}:{policy}": sim for name in ("sglang", "vllm")
          for policy, sim in (("round_robin", "round-robin"), ("cache_aware", "cache-aware"),
                              ("power_of_two", "least-tokens"), ("random", "round-robin"))}


@dataclass(frozen=True)
class LiveFleetCompare:
    fleets: tuple[LiveFleet, ...]
    rate_rps: float = LIVE_CHAT.rate_rps
    duration_s: float = LIVE_CHAT.duration_s
    seed: int = 1
    slo_ttft_s: float = 2.0
    slo_tpot_s: float = 0.1
    cost: StepCost | None = None     # the sim's step cost and front end (None: the fleet engine's own)
    timeout_s: float = 30.0
    probes: int = 16
    profile_s: float | None = None   # profile the cost on the first fleet's replicas this long (over `cost`)
    fit: str = "profile"             # "day": each fleet's sim steps fitted to that fleet's own day (FITS)

    def __post_init__(self) -> None:
        if not self.fleets:
            raise ValueError("at least one fleet")
        if not 0 < self.duration_s <= MAX_DURATION_S:
            raise ValueError(f"--duration: a live fleet day runs 0-{MAX_DURATION_S:g} s, got {self.duration_s:g}")
        if not self.rate_rps > 0:
            raise ValueError(f"--rate must be > 0, got {self.rate_rps:g}")
        if self.rate_rps * self.duration_s > MAX_REQUESTS:
            raise ValueError(f"--rate x --duration: {self.rate_rps * self.duration_s:.0f} requests, a live fleet day "
                             f"sends at most {MAX_REQUESTS}")
        if self.profile_s is not None and not 0 < self.profile_s <= MAX_PROFILE_S:
            raise ValueError(f"profile_s: 0-{MAX_PROFILE_S:g} s, got {self.profile_s:g}")
        if self.fit not in FITS:
            raise ValueError(f"fit: one of {', '.join(FITS)}, got '{self.fit}'")
        if not 0 < self.timeout_s <= 120:
            raise ValueError(f"timeout_s: 0-120 s, got {self.timeout_s:g}")

    def schedule(self) -> FleetSchedule:
        day = LIVE_CHAT.model_copy(update={"rate_rps": self.rate_rps, "duration_s": self.duration_s})
        return build_fleet_schedule(day, self.seed, self.fleets[0].fleet.engine.block_size)


def sim_fleet_of(live: LiveFleet, cost: StepCost | None, router: RouterCost | None,
                 front: FleetProfile | None = None) -> FleetSpec:
    """The sim fleet that models `live`: its sim router (SIM_OF for sglang's), `cost`, the router's cost,
    and `front`'s measured front ends drawn per request (a profile's; None: the cost's constants)."""
    text = f"llm-fleet:router={SIM_OF.get(live.router_name, live.router_name)},replicas={live.fleet.replicas}"
    engine = replace(live.fleet.engine, cost=cost) if cost is not None else live.fleet.engine
    spec = parse_fleet(text, base=engine)   # the live fleet's engine knobs, its cost: the sim's
    return replace(spec, label=live.label or text,
                   router_in_s=router.router_in_s if router else 0.0,
                   router_out_s=router.router_out_s if router else 0.0,
                   front_in_samples=front.front_in_samples if front else (),
                   front_out_samples=front.front_out_samples if front else ())


class _Counted:
    """A replica's prefix figures over the day (after - before), as `fleet_figures` reads a cache."""

    def __init__(self, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        b, a = before or {}, after or {}
        self.stats = PrefixStats(**{k: int(a.get(k, 0)) - int(b.get(k, 0))
                                    for k in ("lookups", "prompt_tokens", "hit_tokens", "evictions")})


def live_run(live: LiveFleet, schedule: FleetSchedule, driven: Any, before: dict[str, Any], after: dict[str, Any],
             times: dict[str, dict[str, float]], replica_of: dict[str, int], day: str, rate_rps: float,
             slo_ttft_s: float, slo_tpot_s: float, router: RouterCost | None) -> FleetRun:
    """The live day as a FleetRun: the client's times (`driven.trace`, from the scheduled starts), each
    request's replica (which replica's `/request_times` holds its id), the replicas' figures over the day."""
    seqs = driven.trace.seqs
    reps = []
    for r, (b, a) in enumerate(zip(before["replicas"], after["replicas"])):
        counted = _Counted(b, a)
        reps.append(ReplicaTrace(routed=counted.stats.lookups, busy_s=after["busy_s"][r] - before["busy_s"][r],
                                 cache=counted))
    for seq in seqs:
        seq.replica = replica_of.get(str(seq.id), -1)
    lost = [False] * len(seqs)
    end = max(schedule.duration_s, driven.trace.end_s)
    trace = FleetTrace(seqs, lost, schedule.duration_s, end, driven.trace.itl, reps)
    run = fleet_figures(trace, live.label or live.router_name, live.router_name, day, rate_rps, schedule.turn,
                        slo_ttft_s, slo_tpot_s)
    split = split_ttft(driven, times)
    return run.model_copy(update={"front_in_s": split["front_in_s"], "front_out_s": split["front_out_s"],
                                  "router_in_s": router.router_in_s if router else None,
                                  "router_out_s": router.router_out_s if router else None})


async def _day(c: LiveFleetCompare, fleet: RunningFleet, schedule: FleetSchedule, texts: list[str],
               step_cost: StepCost) -> tuple[FleetRun, RouterCost, list[tuple[int, int, int, float, float]]]:
    """One fleet's day on running replicas behind its front: the router's cost, the drive, the figures."""
    live = fleet.live
    cost = await measure_router_cost(fleet.url, fleet.replica_urls, c.probes, seed=c.seed)
    before = await fleet.figures()
    driven = await drive_fleet(fleet.url, schedule, texts, timeout_s=c.timeout_s)
    after = await fleet.figures()
    steps = [row for log in await fleet.step_logs(before["steps"]) for row in log]
    origin = driven.trace.origin_s
    replica_of: dict[str, int] = {}
    times: dict[str, dict[str, float]] = {}
    for r, seen in enumerate(await fleet.replica_times()):
        # Request ids repeat from one fleet's day to the next on the same replicas: this day's only.
        mine = {rid: t for rid, t in seen.items() if t["arrival_s"] >= origin}
        times.update(mine)
        replica_of.update({rid: r for rid in mine})
    if driven.errors:
        raise ValueError(f"{live.label or live.router_name} live: {driven.errors[0]}"
                         + (f" (and {driven.error_count - 1} more)" if driven.error_count > 1 else ""))
    run = live_run(live, schedule, driven, before, after, times, replica_of, f"{LIVE_DAY} live", c.rate_rps,
                   c.slo_ttft_s, c.slo_tpot_s, cost)
    slowdown = statistics.median(wall / step_cost.step_s(p, d, x, idle) for p, d, x, wall, idle in steps) \
        if steps else None
    return run.model_copy(update={"step_slowdown": slowdown}), cost, steps


async def _days(c: LiveFleetCompare, schedule: FleetSchedule, texts: list[str], on_run: Callable[[str], None] | None
                ) -> tuple[list[tuple[FleetRun, RouterCost, list[tuple[int, int, int, float, float]]]],
                           StepCost | None, FleetProfile | None]:
    """Every fleet's day in turn, and the sim's cost (profiled first on the first fleet's replicas with
    `profile_s`, else `c.cost`); fleets of one shape (replicas, engine) share one set of replicas, each
    fleet's day starting from flushed caches behind its own front."""
    out: list[tuple[FleetRun, RouterCost, list[tuple[int, int, int, float, float]]]] = []
    fleet: RunningFleet | None = None
    cost = c.cost
    profile: FleetProfile | None = None
    try:
        for live in c.fleets:
            if on_run:
                on_run(f"{live.label or live.router_name}: serving and driving")
            if fleet is not None and fleet.serves(live):
                await fleet.switch_front(live)
            else:
                if fleet is not None:
                    await fleet.close()
                    fleet = None
                fleet = await start_fleet(live)
            if c.profile_s is not None and not out:
                if on_run:
                    on_run(f"profiling the step cost on its {len(fleet.replica_urls)} replicas at once, "
                           f"{c.profile_s:g} s")
                profile = await profile_replicas(fleet.replica_urls, c.profile_s)
                cost = profile.cost
                await fleet.flush_caches()
            out.append(await _day(c, fleet, schedule, texts, cost or live.fleet.engine.cost))
    finally:
        if fleet is not None:
            await fleet.close()
    return out, cost, profile


def run_live_fleets(c: LiveFleetCompare, on_run: Callable[[str], None] | None = None) -> FleetResult:
    """Every fleet live on the chat day, each beside its sim; verdicts (two fleets) and the live ranking."""
    names = [f.label or f.router_name for f in c.fleets]
    if len(set(names)) < len(names):
        raise ValueError(f"two fleets have one name: {', '.join(names)}")
    schedule = c.schedule()
    texts = day_texts(schedule)
    runs: list[FleetRun] = []
    days_run, step_cost, profile = asyncio.run(_days(c, schedule, texts, on_run))
    # Each sim day beside the live one: its name, and whether its steps are fitted to the fleet's own day.
    sims = {"profile": [(f"{LIVE_DAY} sim", False)], "day": [(f"{LIVE_DAY} sim", True)],
            "both": [(f"{LIVE_DAY} sim", False), (f"{LIVE_DAY} sim day-fit", True)]}[c.fit]
    for live, (run, cost, steps) in zip(c.fleets, days_run):
        runs.append(run)
        for day, day_fit in sims:
            sim_cost = step_cost
            if day_fit:
                base = step_cost or live.fleet.engine.cost
                sim_cost = replace(StepCost.fit_wake(steps), frontend_in_s=base.frontend_in_s,
                                   frontend_out_s=base.frontend_out_s)
            spec = sim_fleet_of(live, sim_cost, cost, profile)
            sim = fleet_figures(simulate_fleet(spec, schedule), run.fleet, live.router_name, day,
                                c.rate_rps, schedule.turn, c.slo_ttft_s, c.slo_tpot_s)
            runs.append(sim.model_copy(update={"front_in_s": spec.front_in_s, "front_out_s": spec.front_out_s,
                                               "router_in_s": cost.router_in_s, "router_out_s": cost.router_out_s}))
    days = [f"{LIVE_DAY} live", *(day for day, _ in sims)]
    verdicts = {}
    if len(c.fleets) >= 2:
        for day in days:
            a, b = (next(r for r in runs if r.day == day and r.fleet == n) for n in names[:2])
            verdicts[day] = judge_fleets(a, b)
    engine = c.fleets[0].fleet.engine
    if step_cost is not None:
        engine = replace(engine, cost=step_cost)
    settings = FleetSettings(fleets=names, days=days, rate_rps=c.rate_rps, duration_s=c.duration_s, seed=c.seed,
                             slo_ttft_s=c.slo_ttft_s, slo_tpot_s=c.slo_tpot_s, engine=engine_settings(engine),
                             mode="live")
    live_runs = [r for r in runs if r.day == days[0]]
    return FleetResult(settings=settings, runs=runs, verdicts=verdicts, ranking=rank_fleets(live_runs, names))
