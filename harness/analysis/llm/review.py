"""The review's LLM answer: "The model is an LLM generating tokens one at a time. How does batching change?"

Measured, in a few seconds of simulation: the compare sweep of the doc's
batching applied to an LLM (`llm-static`: B requests run to completion)
against iteration-level batching (`llm-continuous`) on two length mixes, with
`REVIEW_DURATION_S` of arrivals per rate (shorter than `compare`'s default, so
capacities sit on a coarser grid), which gives each mix's throughput ratio at
equal TPOT SLO and the reasons measured at static's best point (idle slots,
padding, head-of-line queue wait, useful decode rows per step). Then every flaw
of the LLM catalogue (`targets.llm.flaws`) with its knobs present and fixed on
each mix that exposes it, at the flaw's own rate or `FLAW_RATE_RPS`, on the
same arrivals both ways (`flaw_costs`; a fleet flaw on a small fleet on its fleet day,
`harness.analysis.llm.fleet_flaws`; `harness rank` runs the same and ranks
them, `harness.analysis.llm.rank`). The review cites the rank's costs
(`llm_answer(flaws=...)`) rather than measuring them twice.
"""

from __future__ import annotations

from dataclasses import replace

from harness.analysis.llm.compare import LlmSweep, run_sweep
from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from harness.results.llm import LlmFlawCost, LlmResult, LlmRun
from targets.llm import LlmEngineSpec, LlmPolicy
from targets.llm.flaws import LLM_FLAWS, LlmFlaw
from targets.llm.knobs import engine_with
from workloads.llm import build_llm_schedule, mix_workload

__all__ = ["FLAW_RATE_RPS", "REVIEW_DURATION_S", "flaw_costs", "llm_answer"]

REVIEW_DURATION_S = 60.0   # arrivals per sweep point; ~3 CPU-s for the whole sweep
FLAW_RATE_RPS = 2.0        # well inside continuous batching's capacity on every exposing mix
FLAW_DURATION_S = 60.0
FLEET_DURATION_X = 2.0     # a fleet flaw's day runs this many times the arrivals of an engine flaw's


def _spec(engine: LlmEngineSpec, knobs: dict[str, object]) -> LlmEngineSpec:
    rest = {k: v for k, v in knobs.items() if k != "policy"}
    return replace(engine_with(engine, rest), policy=LlmPolicy(knobs["policy"]))


def _words(knobs: dict[str, object]) -> str:
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in knobs.items())


def _flaw_cost(flaw: LlmFlaw, mix: str, sweep: LlmSweep, rate_rps: float, duration_s: float) -> LlmFlawCost:
    sched = build_llm_schedule(mix_workload(mix, rate_rps, duration_s), sweep.seed)

    def measure(knobs: dict[str, object]) -> LlmRun:
        trace = simulate(_spec(sweep.engine, knobs), sched, sweep.drain_s)
        return run_figures(trace, str(knobs["policy"]), mix, rate_rps, sched.tenants, sweep.slo_ttft_s,
                           sweep.slo_tpot_s)

    bad, good = measure(flaw.present), measure(flaw.fixed)
    return LlmFlawCost(
        id=flaw.id, doc_item=flaw.doc_item, failure=flaw.failure, fix=flaw.fix, present=_words(flaw.present),
        fixed=_words(flaw.fixed), mix=mix, rate_rps=rate_rps, symptom=flaw.symptom,
        symptom_present=bad.figure(flaw.symptom), symptom_fixed=good.figure(flaw.symptom),
        goodput_present_rps=bad.goodput_rps, goodput_fixed_rps=good.goodput_rps,
        ttft_p50_present_s=bad.ttft_s.p50, ttft_p50_fixed_s=good.ttft_s.p50)


def flaw_costs(sweep: LlmSweep, rate_rps: float = FLAW_RATE_RPS,
               duration_s: float = FLAW_DURATION_S) -> list[LlmFlawCost]:
    """Every LLM flaw on every mix that exposes it, on `sweep`'s engine, seed and SLO, at the flaw's own
    rate (else `rate_rps`)."""
    from harness.analysis.llm.fleet_flaws import fleet_flaw_cost

    fleet_s = FLEET_DURATION_X * duration_s   # a chat day needs a few think times for its turns to pile up
    return [fleet_flaw_cost(flaw, mix, sweep.engine, sweep.seed, sweep.slo_ttft_s, sweep.slo_tpot_s,
                            duration_s=fleet_s) if flaw.fleet
            else _flaw_cost(flaw, mix, sweep, flaw.rate_rps or rate_rps, duration_s)
            for flaw in LLM_FLAWS for mix in flaw.exposed_by]


def llm_answer(seed: int = 1, duration_s: float = REVIEW_DURATION_S,
               flaws: list[LlmFlawCost] | None = None) -> LlmResult:
    """Static against continuous batching over the sweep's rates on two mixes, then the LLM flaws:
    `flaws` as given (the rank's, cited), or measured here when None."""
    sweep = LlmSweep(policies=(LlmPolicy.STATIC.value, LlmPolicy.CONTINUOUS.value), duration_s=duration_s,
                     seed=seed)
    return run_sweep(sweep).model_copy(update={"flaws": flaw_costs(sweep) if flaws is None else flaws})
