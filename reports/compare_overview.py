"""The first screen of a `compare` report: who won, in one line; the headline figure of
every scenario for both sides in one chart (goodput, inside its ceiling); a link to each
scenario's sections.

Reads only the typed result: the winners are `CompareResult.winners()`, the ceilings
`CompareResult.ceiling_pair`; over seeds a side's goodput is the mean of its headline
verdict, with its 95% interval as an error bar.
"""

from __future__ import annotations

import html as _html

import plotly.graph_objects as go

from harness.results.compare import CompareResult, Winner
from reports.charts import FONT, SIDE_COLORS
from reports.page import Section

__all__ = ["TABLE_ANCHOR", "goodput_figure", "overview_sections", "scenario_anchor", "verdict_line"]

TABLE_ANCHOR = "compare-table"  # the 'A vs B in every scenario' table, for scenarios without runs


def scenario_anchor(name: str) -> str:
    """The id of a scenario's first section (its verdict, else its summary)."""
    return "scenario-" + "".join(ch if ch.isalnum() else "-" for ch in name.lower())


def verdict_line(result: CompareResult) -> str:
    """'hardened (B) won 11 of 11 scenarios (naive (A) 0, tie 0)': goodput first, then p99."""
    wins = list(result.winners().values())
    a, b, tie = wins.count(Winner.A), wins.count(Winner.B), wins.count(Winner.TIE)
    n = len(wins)
    sides = sorted(((b, f"{result.b} (B)"), (a, f"{result.a} (A)")), key=lambda x: -x[0])
    (top, top_name), (other, other_name) = sides
    cut = (f" (PARTIAL: {len(result.partial.finished)} of "
           f"{len(result.partial.finished) + len(result.partial.unfinished)} scenarios finished)"
           if result.partial else "")
    if top == other:
        return f"Neither side won more: {result.b} (B) {b}, {result.a} (A) {a}, tie {tie} of {n} scenarios{cut}."
    return f"{top_name} won {top} of {n} scenarios ({other_name} {other}, tie {tie}){cut}."


def _goodput(result: CompareResult, name: str, side: int) -> tuple[float | None, float | None]:
    """(goodput, half-width of its 95% interval or None) of one side in one scenario."""
    sv = result.verdicts.get(name)
    v = sv.figure("goodput_ratio") if sv is not None else None
    if v is not None:
        mean, ci = (v.a, v.b)[side], (v.a_ci, v.b_ci)[side]
        return mean, None if ci is None else ci.half_width
    return result.pair(name)[side].goodput_ratio, None


def goodput_figure(result: CompareResult) -> go.Figure:
    """Per scenario, each side's goodput (solid bar) inside its ceiling (pale bar: what any
    design could answer within the SLO on that side's fleet); the better side under the name."""
    names = list(result.scenarios)
    winners = result.winners()
    marks = {Winner.A: f"<b style='color:{SIDE_COLORS[0]}'>A</b>", Winner.B: f"<b style='color:{SIDE_COLORS[1]}'>B</b>",
             Winner.TIE: "tie"}
    ticks = [f"{w}<br>{marks[winners[w]]}" for w in names]
    fig = go.Figure()
    for side, (label, color) in enumerate(((f"A: {result.a}", SIDE_COLORS[0]), (f"B: {result.b}", SIDE_COLORS[1]))):
        ceil = [c.ceiling_ratio if c is not None else None for c in (result.ceiling_pair(w)[side] for w in names)]
        if any(c is not None for c in ceil):
            fig.add_trace(go.Bar(x=ticks, y=[None if c is None else 100 * c for c in ceil], offsetgroup=str(side),
                                 name=f"{label} ceiling", marker=dict(color=color, opacity=0.22),
                                 hovertemplate="%{x}: ceiling %{y:.1f}%<extra>" + _html.escape(label) + "</extra>"))
        vals = [_goodput(result, w, side) for w in names]
        y = [None if g is None else 100 * g for g, _ in vals]
        err = [0.0 if h is None else 100 * h for _, h in vals]
        fig.add_trace(go.Bar(x=ticks, y=y, offsetgroup=str(side), name=f"{label} goodput", marker_color=color,
                             error_y=dict(type="data", array=err, visible=any(err)),
                             text=[None if v is None else f"{v:.0f}" for v in y], textposition="inside",
                             hovertemplate="%{x}: goodput %{y:.1f}%<extra>" + _html.escape(label) + "</extra>"))
    fig.update_layout(title=dict(text="goodput in every scenario (solid) inside its ceiling (pale: any design's best "
                                      "on that fleet); the better side under each name", y=0.98, font=dict(size=14)),
                      template="plotly_white", font=FONT, height=420, barmode="group", bargap=0.25,
                      margin=dict(l=70, r=30, t=50, b=40), legend=dict(orientation="h", y=1.06, x=0, yanchor="bottom"))
    fig.update_yaxes(title_text="goodput (% of requests within SLO)", range=[0, 105])
    fig.update_xaxes(title_text="scenario", title_standoff=4)
    return fig


def overview_sections(result: CompareResult) -> list[Section]:
    """The lead sections: the verdict with links to each scenario, then the goodput chart."""
    links = " · ".join(
        f"<a href='#{scenario_anchor(w) if w in result.runs else TABLE_ANCHOR}'>{_html.escape(w)}</a>"
        for w in result.scenarios)
    html = (f"<p class='verdict'><b>{_html.escape(verdict_line(result))}</b> Better: goodput first, then p99 "
            f"(a difference within the noise threshold is a tie).</p><p class='links'>Scenarios: {links}</p>")
    out = [Section("verdict", html=html, lead=True)]
    if result.scenarios:
        out.append(Section("goodput and its ceiling, A and B, every scenario", goodput_figure(result), lead=True))
    return out
