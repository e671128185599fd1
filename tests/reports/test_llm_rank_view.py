"""The rank view's LLM section: the LLM flaws ranked, in 80 columns and in HTML, every figure the result's."""

from __future__ import annotations

import functools

from rich.console import Console

from harness.analysis.llm.rank import llm_rank
from reports import rank as rank_view
from reports.fmt import fmt_pct
from reports.llm import symptom_words
from tests.reports.test_rank_review_gate import synthetic_rank


@functools.cache
def _with_llm():
    return synthetic_rank().model_copy(update={"llm": llm_rank(seed=1, duration_s=30)})


def test_the_terminal_view_ranks_the_llm_flaws_with_their_symptoms_in_80_columns():
    result = _with_llm()
    console = Console(width=80, record=True, color_system=None)
    rank_view.render(result, console)
    text = console.export_text()
    assert "LLM flaws: each present against fixed" in text
    for f in result.llm.flaws:
        assert f.id in text and fmt_pct(f.goodput_loss) in text and symptom_words(f.worst()) in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_html_has_an_llm_section_and_a_rank_without_one_has_none():
    titles = [s.title for s in rank_view.sections(_with_llm())]
    assert "LLM flaws, ranked" in titles
    assert "LLM flaws, ranked" not in [s.title for s in rank_view.sections(synthetic_rank())]
