"""The rank view's LLM section: the LLM flaws ranked, in 80 columns and in HTML, every figure the result's."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.results.llm_rank import LlmRank
from harness.results.rank import RankResult
from reports import rank as rank_view
from reports.fmt import fmt_pct
from reports.llm import symptom_words
from tests.reports.test_rank_review_gate import synthetic_rank


@pytest.fixture
def with_llm(llm_rank_30s: LlmRank) -> RankResult:
    """A rank with the LLM section of llm_rank(seed=1, duration_s=30) (built once a session: tests/conftest.py)."""
    return synthetic_rank().model_copy(update={"llm": llm_rank_30s})


def test_the_terminal_view_ranks_the_llm_flaws_with_their_symptoms_in_80_columns(with_llm):
    result = with_llm
    console = Console(width=80, record=True, color_system=None)
    rank_view.render(result, console)
    text = console.export_text()
    assert "LLM flaws: each present against fixed" in text
    for f in result.llm.flaws:
        assert f.id in text and fmt_pct(f.goodput_loss) in text and symptom_words(f.worst()) in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_html_has_an_llm_section_and_a_rank_without_one_has_none(with_llm):
    titles = [s.title for s in rank_view.sections(with_llm)]
    assert "LLM flaws, ranked" in titles
    assert "LLM flaws, ranked" not in [s.title for s in rank_view.sections(synthetic_rank())]
