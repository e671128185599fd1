"""Each LLM flaw's knobs are real, and its fix measurably helps on the mix that exposes it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from targets.llm import LlmEngineSpec, LlmPolicy
from targets.llm.flaws import LLM_FLAWS
from targets.llm.knobs import engine_with
from workloads.llm import LENGTH_MIXES, build_llm_schedule, mix_workload


def spec_of(knobs: dict) -> LlmEngineSpec:
    rest = {k: v for k, v in knobs.items() if k != "policy"}
    return replace(engine_with(LlmEngineSpec(batch_size=8), rest), policy=LlmPolicy(knobs["policy"]))


@pytest.mark.parametrize("flaw", LLM_FLAWS, ids=lambda f: f.id)
def test_fix_beats_flaw_where_exposed(flaw):
    assert set(flaw.exposed_by) <= set(LENGTH_MIXES)
    rate = flaw.rate_rps or 2.0
    sched = build_llm_schedule(mix_workload(flaw.exposed_by[0], rate, 60), 1)

    def measure(knobs: dict):
        return run_figures(simulate(spec_of(knobs), sched, drain_s=60), knobs["policy"], "x", rate,
                           sched.tenants, slo_ttft_s=2.0, slo_tpot_s=0.1)

    bad, good = measure(flaw.present), measure(flaw.fixed)
    if flaw.lower_is_better:  # seconds: the longest stall of a running decode, the other tenants' TTFT p99
        assert good.figure(flaw.symptom) < bad.figure(flaw.symptom) / 2
    else:
        assert getattr(good, flaw.symptom) > getattr(bad, flaw.symptom) + 0.2
