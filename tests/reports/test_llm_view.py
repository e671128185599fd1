"""The `llm` view: the ratio table words the typed result; the HTML has one curve per mix."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.analysis.llm.compare import LlmSweep, run_sweep
from harness.results.llm import LlmResult
from reports import llm as view
from reports.page import page_html
from reports.registry import view as view_of
from targets.llm import LlmEngineSpec


@pytest.fixture(scope="module")
def result() -> LlmResult:
    return run_sweep(LlmSweep(mixes=("fixed",), rates_rps=(0.5, 2.0, 6.0), duration_s=20, drain_s=30,
                              engine=LlmEngineSpec(batch_size=4)))


def test_registry_finds_the_view():
    assert view_of("llm") is view


def test_console_view_shows_each_ratio_and_knee(result):
    console = Console(record=True, width=100)
    view.render(result, console)
    text = console.export_text()
    ratio = result.ratios[0]
    rows = view.ratio_rows(result)
    assert rows[0][0] == "fixed" and f"{ratio.b_tpot_tok_s:,.0f}" in text
    expected = "-" if ratio.tpot_ratio is None else f"{ratio.tpot_ratio:.1f}x"
    if ratio.a_tpot_tok_s is None:
        expected = "∞ (A never meets it)"
    assert rows[0][6] == expected
    assert "llm-static on fixed" in text and "llm-continuous on fixed" in text
    assert text.count("knee") == sum(c.knee is not None for c in result.curves)


def test_html_has_a_curve_per_mix_with_its_knee(result):
    sections = view.sections(result)
    assert [s.title for s in sections][:2] == ["Continuous vs run-to-completion batching at the same SLO",
                                               "Throughput vs TPOT: fixed"]
    names = [t.name for t in sections[1].figure.data]
    assert "llm-static" in names and "llm-continuous" in names
    assert "<table>" in sections[0].html
    assert "Throughput vs TPOT" in page_html([result], plotly_js="")
