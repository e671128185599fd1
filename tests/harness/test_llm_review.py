"""The review's LLM answer: static against continuous batching on two mixes with the reasons measured, each
LLM flaw's cost, embedded in the review and worded from its figures alone."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.analysis.llm.review import llm_answer
from harness.analysis.review.run import llm_part, review
from harness.engine.jobs import Jobs
from harness.results.review import ReviewResult
from reports.fmt import fmt_n, fmt_x
from reports.llm import answer
from reports.review import narrative, render
from targets.llm.flaws import LLM_FLAWS

pytestmark = pytest.mark.slow  # a real (short) sweep: ~1.5 CPU-s, and a small review


@pytest.fixture(scope="module")
def result():
    return llm_answer(seed=1, duration_s=20)


def test_continuous_beats_static_at_equal_tpot_on_two_mixes_for_the_measured_reasons(result):
    assert [c.mix for c in result.ratios] == ["lognormal", "sharegpt-like"]
    for c in result.ratios:
        assert (c.a, c.b) == ("llm-static", "llm-continuous")
        assert c.tpot_ratio is not None and c.tpot_ratio > 2
        assert c.a_idle_slot_share > 0.2 and c.a_padding_share > 0.2          # run-to-completion waste
        assert c.a_useful_decode_rows < c.a_mean_decode_rows
        assert c.a_queue_wait_p50_s > 10 * c.b_queue_wait_p50_s              # head-of-line


def test_every_llm_flaw_is_measured_on_each_mix_that_exposes_it_and_its_fix_helps(result):
    assert [(f.id, f.mix) for f in result.flaws] == [(f.id, m) for f in LLM_FLAWS for m in f.exposed_by]
    lower = {f.id: f.lower_is_better for f in LLM_FLAWS}
    for f in result.flaws:
        if lower[f.id]:
            assert f.symptom_fixed < f.symptom_present
        else:
            assert f.symptom_fixed > f.symptom_present


def test_the_words_quote_the_figures(result):
    text = "\n".join(answer(result))
    for c in result.ratios:
        assert f"{c.mix}" in text and fmt_x(c.tpot_ratio, 1) in text and fmt_n(c.b_tpot_tok_s) in text
    assert all(f.id in text for f in result.flaws) and "idle" in text and "padding" in text


def test_the_review_embeds_the_llm_part_and_words_it():
    d = review(flaw_scenarios={"full-batch-only": ["night"]}, scale=0.2, jobs=Jobs(workers=1), parts=[llm_part(1)])
    assert d.llm is not None and d.llm.ratios and d.llm.flaws and not d.notes
    assert d.rank.llm is not None and d.llm.flaws == [c for f in d.rank.llm.flaws for c in f.costs]  # cited
    assert ReviewResult.from_json(d.to_json()).llm == d.llm
    assert set(answer(d.llm)) <= set(narrative(d))
    console = Console(width=80, record=True, color_system=None)
    render(d, console)
    out = console.export_text()
    assert "Follow-up: an LLM generating tokens" in out and "LLM flaws" in out
    assert max(len(line) for line in out.splitlines()) <= 80
