"""A live compare a user can start: the bad-day suite shortened to a bounded time, and each
scenario's live verdict set beside the sim's for the same scale.

Shortening (`live_plan`): as `harness review` shortens its sim runs (harness.analysis.
shorten), but in wall-clock terms, since a live run costs its length whatever its rate:
a stationary script keeps its first `LIVE_RUN_S` seconds; a script with a disturbance
(spike, fault, burst) keeps `LIVE_BEFORE_S` of calm before it, the disturbance itself
(up to `LIVE_DISTURBANCE_S`, never less than the flaws it exposes need to show:
harness.analysis.exposure) and `LIVE_AFTER_S` of recovery after it. Each run also
has its warm-up (harness.live.warmup) and its host's start. `--duration` still cuts
every script to one length instead.

The sim beside it (`sim_beside`): every finished scenario run again in sim, both
sides, on the very configs the live runs used (the scaled fleet, the shortened and
scaled workload, the same seed), judged the same way. Where the two winners differ,
either the sim misses something the live machine does (its front end, its cores) or
the live run was invalid; the result says which scenarios agree.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.analysis.compare.verdicts import add_verdicts
from harness.analysis.exposure import scenario_needs
from harness.analysis.shorten import Shortening, plan, plan_for_json, shorten
from harness.analysis.variants import knobs_of, variant
from harness.engine.sim import run_sim
from harness.results.compare import CompareResult, Winner
from targets.config import TargetConfig
from targets.flaws import FLAWS
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["LIVE_AFTER_S", "LIVE_BEFORE_S", "LIVE_DISTURBANCE_S", "LIVE_RUN_S", "live_plan", "plan_for_json", "sim_beside",
           "workload_of"]

LIVE_RUN_S = 20.0           # a stationary script: its first 20 s
LIVE_BEFORE_S = 3.0         # calm kept before a disturbance
LIVE_DISTURBANCE_S = 10.0   # the longest disturbance kept (a flaw's need may ask for more)
LIVE_AFTER_S = 10.0         # recovery kept after it: enough to see whether a storm outlives its trigger


def live_plan(names: list[str]) -> dict[str, dict[str, Any]]:
    """{scenario: {"shortening", "full_s", "run_s", "kept", ...}} (harness.analysis.shorten.plan)
    for a live compare of `names`."""
    by_id = {f.id: f for f in FLAWS}
    flaw_scenarios = {f.id: [w for w in f.exposed_by if w in names] for f in FLAWS}
    _, good = knobs_of("hardened")
    needs = scenario_needs(flaw_scenarios, {fid: by_id[fid].exposed_by for fid in flaw_scenarios},
                           {fid: variant(good, by_id[fid].present) for fid in flaw_scenarios})
    # request_budget 1: every stationary script is cut to min_s, the live length.
    return plan(names, 1.0, request_budget=1.0, min_s=LIVE_RUN_S, before_s=LIVE_BEFORE_S,
                disturbance_s=LIVE_DISTURBANCE_S, after_s=LIVE_AFTER_S, needs=needs)


def workload_of(shortenings: dict[str, Shortening | None]) -> Callable[[str], WorkloadConfig]:
    """name -> the workload a live compare runs (shortened where the plan says)."""
    return lambda name: shorten(load_workload(name), shortenings.get(name))


def sim_beside(result: CompareResult, seed: int) -> dict[str, dict[str, Any]]:
    """{scenario: {"live", "sim": winner ("A", "B", "tie"), "agree", "goodput": {side: [live, sim]},
    "shed": {side: [live, sim]}}} for every scenario the live compare judged: both sides run
    again in sim on the live runs' own configs."""
    out: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    scenarios: dict[str, dict[str, Any]] = {}
    for name in result.scenarios:
        ra, rb = result.run_pair(name)
        pair = {}
        for side, live in ((result.a, ra), (result.b, rb)):
            pair[side] = run_sim(TargetConfig.model_validate(live.target_config),
                                 WorkloadConfig.model_validate(live.workload_config), seed=seed)
        runs[name] = pair
        scenarios[name] = {side: r.summary for side, r in pair.items()}
    sim = add_verdicts(CompareResult(a=result.a, b=result.b, seed=seed, mode="sim", scenarios=scenarios, runs=runs))
    live_won, sim_won = result.winners(), sim.winners()
    for name in result.scenarios:
        la, lb = result.pair(name)
        sa, sb = sim.pair(name)
        out[name] = {
            "live": _name(live_won[name]), "sim": _name(sim_won[name]), "agree": live_won[name] == sim_won[name],
            "goodput": {result.a: [la.goodput_ratio, sa.goodput_ratio], result.b: [lb.goodput_ratio, sb.goodput_ratio]},
            "shed": {result.a: [la.outcomes.shed.share, sa.outcomes.shed.share],
                     result.b: [lb.outcomes.shed.share, sb.outcomes.shed.share]},
        }
    return out


def _name(w: Winner) -> str:
    return {Winner.A: "A", Winner.B: "B"}.get(w, "tie")
