"""The rank's LLM section: every LLM flaw present and fixed on each mix that exposes it, ranked by its cost,
typed into the rank result and cited by the review."""

from __future__ import annotations

import pytest

from harness.analysis.llm.rank import NOISE_WORSE, llm_rank, worse_x
from harness.results.llm_rank import LlmRank
from harness.analysis.rank import rank
from harness.engine.jobs import Jobs
from harness.results.rank import NOISE_GOODPUT, RankResult
from targets.llm.flaws import LLM_FLAWS


@pytest.fixture
def section(llm_rank_30s: LlmRank) -> LlmRank:
    """llm_rank(seed=1, duration_s=30), built once a session (tests/conftest.py)."""
    return llm_rank_30s


def test_every_llm_flaw_is_measured_on_each_exposing_mix_and_ranked(section):
    assert sorted(f.id for f in section.flaws) == sorted(f.id for f in LLM_FLAWS)
    assert [f.rank for f in section.flaws] == list(range(1, len(LLM_FLAWS) + 1))
    by_id = {f.id: f for f in LLM_FLAWS}
    for entry in section.flaws:
        flaw = by_id[entry.id]
        assert [c.mix for c in entry.costs] == list(flaw.exposed_by) and entry.mix in flaw.exposed_by
        w = entry.worst()
        assert w.symptom == flaw.symptom and entry.worse_x == worse_x(w)
        assert entry.goodput_loss == pytest.approx((w.goodput_fixed_rps - w.goodput_present_rps) / w.rate_rps)


def test_the_order_follows_goodput_lost_then_the_symptom_ratio(section):
    flaws = section.flaws
    for a, b in zip(flaws, flaws[1:]):
        steps_a, steps_b = a.goodput_loss // NOISE_GOODPUT, b.goodput_loss // NOISE_GOODPUT
        assert steps_a > steps_b or (steps_a == steps_b and (a.worse_x or float("inf")) >= (b.worse_x or 0))


def test_each_fix_moves_its_symptom_the_right_way_and_is_measurable(section):
    for entry in section.flaws:
        w = entry.worst()
        flaw = next(f for f in LLM_FLAWS if f.id == entry.id)
        if flaw.lower_is_better:
            assert w.symptom_present > w.symptom_fixed
        else:
            assert w.symptom_present < w.symptom_fixed
        assert entry.measurable and (entry.worse_x is None or entry.worse_x >= NOISE_WORSE
                                     or entry.goodput_loss >= NOISE_GOODPUT)


def test_the_dominant_tenant_flaw_is_costed_by_the_small_tenants_ttft(section):
    entry = next(f for f in section.flaws if f.id == "request-count-limits")
    w = entry.worst()
    assert entry.mix == "dominant-tenant" and w.symptom == "small_tenants_ttft_p99_s"
    assert entry.worse_x == pytest.approx(w.symptom_present / w.symptom_fixed) and entry.worse_x > 1


@pytest.mark.slow  # a real (tiny) request-level ablation in a worker process beside it
def test_rank_result_includes_the_llm_flaws_and_round_trips():
    result = rank(["night"], seed=1, jobs=Jobs(workers=1), duration_scale=0.1, flaws=["full-batch-only"],
                  interactions=False, llm=llm_rank)
    assert result.llm is not None
    assert {f.id for f in result.llm.flaws} == {f.id for f in LLM_FLAWS}
    assert RankResult.from_json(result.to_json()) == result
    old = result.to_json()
    old.pop("llm")
    assert RankResult.from_json(old).llm is None   # rank documents written before the section still load
