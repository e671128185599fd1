"""The rank view's LLM section: the LLM flaws ranked, each present -> fixed, terminal and HTML.

Reads only `harness.results.llm_rank.LlmRank` (the rank result's `llm`); the
figures are decided there, this only words them.
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.llm_rank import LlmFlawRank, LlmRank
from reports.fmt import fmt_n, fmt_pct, fmt_x
from reports.llm import symptom_words
from reports.page import Section

__all__ = ["HEADERS", "render", "rows", "section"]

HEADERS = ("#", "LLM flaw", "mix", "req/s", "lost", "worse", "symptom, present -> fixed")


def _worse(f: LlmFlawRank) -> str:
    return fmt_x(f.worse_x, 1) if f.worse_x is not None else "∞"


def rows(llm: LlmRank) -> list[tuple[str, ...]]:
    """One row per LLM flaw in rank order, its worst mix's figures."""
    out: list[tuple[str, ...]] = []
    for f in llm.flaws:
        c = f.worst()
        out.append((str(f.rank), f.id + ("" if f.measurable else " (noise)"), c.mix, f"{c.rate_rps:g}",
                    fmt_pct(f.goodput_loss), _worse(f), symptom_words(c)))
    return out


def _legend(llm: LlmRank) -> str:
    fleet = next((c for f in llm.flaws for c in f.costs if c.replicas is not None), None)
    fleets = ("" if fleet is None else f" A fleet flaw (its mix a fleet day) on {fleet.replicas} replicas behind "
                                        "a router, the same conversations both ways.")
    return (f"LLM engine (sim): each flaw's knobs present and fixed on the same arrivals ({llm.duration_s:g} s, seed "
            f"{llm.seed}) of the mix that exposes it.{fleets} lost: goodput lost (share of the offered rate, SLO TTFT "
            f"{llm.slo_ttft_s:g} s and TPOT {llm.slo_tpot_s:g} s); worse: how many times worse its symptom is. "
            f"Score: {llm.score}.")


def render(llm: LlmRank, console: Console) -> None:
    t = Table(title="LLM flaws: each present against fixed", box=box.SIMPLE_HEAD, header_style="bold",
              pad_edge=False)
    for h in HEADERS[:-1]:  # the symptom goes in the lines below: 80 columns
        t.add_column(h, justify="right" if h in ("#", "req/s", "lost", "worse") else "left", no_wrap=True)
    for row in rows(llm):
        t.add_row(*row[:-1])
    console.print(t)
    for f, row in zip(llm.flaws, rows(llm)):
        c = f.worst()
        console.print(f"{f.rank}. {f.id}: {row[-1]}, goodput {fmt_n(c.goodput_present_rps)} -> "
                      f"{fmt_n(c.goodput_fixed_rps)} req/s ({c.present} -> {c.fixed}).", highlight=False)
    console.print(_legend(llm), style="dim", highlight=False)


def section(llm: LlmRank) -> Section:
    head = "".join(f"<th>{_html.escape(h)}</th>" for h in (*HEADERS, "knobs, present -> fixed"))
    body = "".join(
        "<tr>" + "".join(f"<td>{_html.escape(cell)}</td>" for cell in (*row, f"{f.worst().present} -> "
                                                                        f"{f.worst().fixed}")) + "</tr>"
        for row, f in zip(rows(llm), llm.flaws))
    return Section("LLM flaws, ranked", html=f"<table class='data'><tr>{head}</tr>{body}</table>", note=_legend(llm))
