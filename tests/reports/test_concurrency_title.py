"""The concurrency sweep's table says where its knee is, or why there is none."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.results.llm_traffic import ConcurrencyPoint, ConcurrencySweep
from reports.llm_traffic import concurrency_table


def _sweep(rps: list[float], knee: int | None) -> ConcurrencySweep:
    levels = [1, 2, 4, 8, 16][:len(rps)]
    points = [ConcurrencyPoint(concurrency=n, requests_per_s=r, output_tok_s=r * 10, ttft_p50_s=0.01, ttft_p90_s=0.02,
                               e2e_p50_s=0.1, tpot_p50_s=0.005, max_in_flight=n) for n, r in zip(levels, rps)]
    return ConcurrencySweep(target="t", mix="short", step_duration_s=5.0, points=points,
                            knee=knee, knee_concurrency=None if knee is None else levels[knee])


def _title(c: ConcurrencySweep) -> str:
    console = Console(width=120, record=True)
    console.print(concurrency_table(c))
    return console.export_text().splitlines()[0].strip()


@pytest.mark.parametrize("rps, knee, said", [
    ([3.0, 6.0, 12.0, 12.0, 12.0], 2, "knee at concurrency 4"),
    ([3.0, 6.0, 12.0, 24.0, 48.0], None, "no knee (still rising at 16)"),
    ([0.0, 0.0, 0.0], None, "no knee (no level was answered)"),
    ([3.0, 6.0], None, "5 s a level"),
])
def test_the_title_says_the_knee_or_why_there_is_none(rps: list[float], knee: int | None, said: str) -> None:
    assert _title(_sweep(rps, knee)).endswith(said)


def test_the_page_shows_the_sweep_table_the_terminal_shows() -> None:
    from types import SimpleNamespace

    from reports.llm_traffic import table_html, traffic_sections

    c = _sweep([3.0, 6.0, 12.0, 12.0, 12.0], 2)
    html = table_html(concurrency_table(c))
    assert html.count("<tr>") == 6 and "<th>users</th>" in html and "<td>4 *</td>" in html
    sections = traffic_sections(SimpleNamespace(runs=[], concurrency=c))
    assert [s.title for s in sections] == ["concurrency sweep, 5 s a level: knee at concurrency 4"]
    assert sections[0].figure is not None and sections[0].html == html
