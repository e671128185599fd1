"""The LLM catalogue's fleet flaws measured: a small fleet with the flaw's knobs present and fixed, one day.

A fleet flaw (`targets.llm.flaws`, `fleet=True`) names `llm-fleet` knobs (router,
load_factor, prefix_caching, ...). Each is measured on `FLAW_REPLICAS` replicas at
`FLAW_RATE_RPS` (15 req/s per replica once its conversations pile up: past round robin's knee, so
the flaw costs goodput, not only TTFT; at 6 per replica, near the knee, both flaws cost TTFT p50
alone: 40 -> 28 ms and 194 -> 28 ms) for `duration_s` (default `FLAW_DURATION_S`; the rank and review give twice an
engine flaw's arrivals, `harness.analysis.llm.review.FLEET_DURATION_X`), both sides on the same seeded conversations,
with the engine and SLO of the caller's sweep. The cost carries the symptom (TTFT p50),
goodput, both sides' prefix hit rates, the tokens the prefix cache saved with the fix, and
the day's exact repeats (`fleet_forms.exact_repeat_share`): what the doc's exact-payload
cache could serve of the same traffic, so the review can set the two caches side by side.
About 2-4 CPU-seconds per flaw.
"""

from __future__ import annotations

from dataclasses import replace

from harness.analysis.llm.fleet import day_of
from harness.analysis.llm.fleet_forms import exact_repeat_share
from harness.engine.llm_fleet import simulate_fleet
from harness.engine.llm_fleet_metrics import fleet_figures
from harness.results.fleet import FleetRun
from harness.results.llm import LlmFlawCost
from targets.llm import LlmEngineSpec
from targets.llm.fleet import FLEET, parse_fleet
from targets.llm.flaws import LlmFlaw
from workloads.llm_days import build_fleet_schedule

__all__ = ["FLAW_DURATION_S", "FLAW_RATE_RPS", "FLAW_REPLICAS", "fleet_flaw_cost", "fleet_spec_text"]

FLAW_REPLICAS = 4
FLAW_RATE_RPS = 60.0      # 15 req/s per replica: past round robin's knee (16 replicas: 80-96 req/s)
FLAW_DURATION_S = 120.0
_DRAIN_S = 60.0


def _words(knobs: dict[str, object]) -> str:
    return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in knobs.items())


def fleet_spec_text(knobs: dict[str, object], replicas: int = FLAW_REPLICAS) -> str:
    """The `llm-fleet:...` spec of a flaw's side."""
    return f"{FLEET}:replicas={replicas},{_words(knobs)}"


def fleet_flaw_cost(flaw: LlmFlaw, day_name: str, engine: LlmEngineSpec, seed: int, slo_ttft_s: float,
                    slo_tpot_s: float, rate_rps: float = FLAW_RATE_RPS,
                    duration_s: float = FLAW_DURATION_S) -> LlmFlawCost:
    """`flaw` present and fixed on `day_name` (a fleet day), the replicas `engine`'s settings with prefix
    caching on, as a fleet's replicas have it (the flaw's knobs over them)."""
    engine = replace(engine, prefix_caching=True)
    day = day_of(day_name, flaw.rate_rps or rate_rps, duration_s)
    schedule = build_fleet_schedule(day, seed, engine.block_size)

    def measure(knobs: dict[str, object]) -> FleetRun:
        spec = parse_fleet(fleet_spec_text(knobs), engine)
        trace = simulate_fleet(spec, schedule, _DRAIN_S)
        return fleet_figures(trace, spec.name, spec.router, day_name, day.rate_rps, schedule.turn, slo_ttft_s,
                             slo_tpot_s)

    bad, good = measure(flaw.present), measure(flaw.fixed)
    return LlmFlawCost(
        id=flaw.id, doc_item=flaw.doc_item, failure=flaw.failure, fix=flaw.fix, present=_words(flaw.present),
        fixed=_words(flaw.fixed), mix=day_name, rate_rps=day.rate_rps, symptom=flaw.symptom,
        symptom_present=bad.ttft_s.p50, symptom_fixed=good.ttft_s.p50,
        goodput_present_rps=bad.goodput_rps, goodput_fixed_rps=good.goodput_rps,
        ttft_p50_present_s=bad.ttft_s.p50, ttft_p50_fixed_s=good.ttft_s.p50, replicas=FLAW_REPLICAS,
        prefix_hit_present=bad.prefix_hit_rate or 0.0, prefix_hit_fixed=good.prefix_hit_rate or 0.0,
        tokens_saved_fixed=good.tokens_saved, prompt_tokens=good.prompt_tokens,
        exact_repeat_share=exact_repeat_share(schedule))
