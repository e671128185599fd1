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


@pytest.mark.parametrize("flaw", [f for f in LLM_FLAWS if not f.fleet], ids=lambda f: f.id)
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


@pytest.mark.parametrize("flaw", [f for f in LLM_FLAWS if f.fleet], ids=lambda f: f.id)
def test_a_fleet_flaw_names_fleet_days_and_fleet_knobs(flaw):
    """A fleet flaw's knobs make a fleet spec either way (its fix measured in tests/harness/test_llm_fleet_flaws.py)."""
    from harness.analysis.llm.fleet_flaws import fleet_spec_text
    from targets.llm.fleet import parse_fleet
    from workloads.llm_days import FLEET_DAYS

    assert set(flaw.exposed_by) <= set(FLEET_DAYS) and flaw.lower_is_better
    present, fixed = (parse_fleet(fleet_spec_text(k)) for k in (flaw.present, flaw.fixed))
    assert present != fixed
