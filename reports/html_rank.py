"""HTML sections for "rank" documents: the flaw ranking as a table and a bar
chart (top three highlighted), and a flaw x scenario heatmap of costs.

Reads only the rank document (see /tmp/contracts.md, "rank"): per flaw its
worst-case cost when put back into `hardened` (goodput loss 0..1, p99
increase in seconds or None for 'became never answered', wasted GPU-s), the
gain of fixing it alone in `naive`, and the same per scenario.
"""

from __future__ import annotations

import html as _html
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.console import fmt_pct, fmt_s
from reports.page import Section
from reports.html_run import FONT

TOP = "#d7301f"
OTHER = "#9e9e9e"
GAIN_TOP = "#238b45"
GAIN_OTHER = "#a1d99b"


def _ordered(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(doc.get("flaws") or [], key=lambda f: f.get("rank", 10**6))


def _label(f: dict[str, Any], top: set[str]) -> str:
    star = " ★" if f["id"] in top else ""
    return f"{f.get('rank', '?')}. {f['id']}{star}"


def _p99(x: float | None) -> str:
    if x is None:
        return "never answered"
    return ("+" if x >= 0 else "-") + fmt_s(abs(x))


def ranking_figure(doc: dict[str, Any]) -> go.Figure:
    """Three panels sharing the flaw axis (rank 1 on top): goodput lost when
    the flaw is put back into hardened, the p99 increase it causes, and the
    goodput gained by fixing it alone in naive. Top three in colour."""
    flaws = _ordered(doc)
    top = set(doc.get("top") or [])
    labels = [_label(f, top) for f in flaws]
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("goodput lost (put back into hardened)",
                                        "p99 increase (put back into hardened)",
                                        "goodput gained (fixed alone in naive)"))
    p99s = [f["cost"].get("p99_increase_s") for f in flaws]
    finite = [abs(v) for v in p99s if v is not None]
    cap = max(finite + [0.1]) * 1.2
    hover = [f"<b>{_html.escape(f['id'])}</b> (doc item {_html.escape(str(f.get('doc_item', '?')))})<br>"
             f"worst in: {_html.escape(str(f['cost'].get('scenario', '?')))}<br>"
             f"failure: {_html.escape(str(f.get('failure', ''))[:110])}<br>"
             f"fix: {_html.escape(str(f.get('fix', ''))[:110])}"
             + (f"<br>interaction: {_html.escape(str(f['interaction']))}" if f.get("interaction") else "")
             for f in flaws]
    for group, name, cost_c, gain_c in ((True, "top three: insist on these", TOP, GAIN_TOP),
                                        (False, "other flaws", OTHER, GAIN_OTHER)):
        idx = [i for i, f in enumerate(flaws) if (f["id"] in top) == group]
        if not idx:
            continue
        y = [labels[i] for i in idx]
        loss = [100 * (flaws[i]["cost"].get("goodput_loss") or 0.0) for i in idx]
        fig.add_trace(go.Bar(y=y, x=loss, orientation="h", name=name, legendgroup=name, marker_color=cost_c,
                             text=[f"{v:.1f}%" for v in loss], textposition="outside", customdata=[hover[i] for i in idx],
                             hovertemplate="%{customdata}<br>goodput lost: %{x:.2f}%<extra></extra>"), row=1, col=1)
        p = [p99s[i] for i in idx]
        fig.add_trace(go.Bar(y=y, x=[cap if v is None else v for v in p], orientation="h", name=name,
                             legendgroup=name, showlegend=False,
                             marker=dict(color=cost_c, pattern=dict(shape=["/" if v is None else "" for v in p])),
                             text=["never" if v is None else _p99(v) for v in p], textposition="outside",
                             customdata=[[hover[i], _p99(p99s[i]),
                                          flaws[i]["cost"].get("p99_scenario", flaws[i]["cost"].get("scenario", "?"))]
                                         for i in idx],
                             hovertemplate="%{customdata[0]}<br>p99: %{customdata[1]} (in %{customdata[2]})"
                                           "<extra></extra>"), row=1, col=2)
        gain = [100 * ((flaws[i].get("gain") or {}).get("goodput_gain") or 0.0) for i in idx]
        fig.add_trace(go.Bar(y=y, x=gain, orientation="h", name=name, legendgroup=name, showlegend=False,
                             marker_color=gain_c, text=[f"{v:+.1f}%" for v in gain], textposition="outside",
                             customdata=[hover[i] for i in idx],
                             hovertemplate="%{customdata}<br>goodput gained by the fix: %{x:.2f}%<extra></extra>"),
                      row=1, col=3)
    # Room to the right of the longest bar for its label ("+1.31 s", "never answered").
    losses = [100 * (f["cost"].get("goodput_loss") or 0.0) for f in flaws]
    gains = [100 * ((f.get("gain") or {}).get("goodput_gain") or 0.0) for f in flaws]
    shown = [cap if v is None else v for v in p99s]
    for col, vals in ((1, losses), (2, shown), (3, gains)):
        lo, hi = min(vals + [0.0]), max(vals + [0.0]) or 1.0
        fig.update_xaxes(range=[lo * 1.5 - 0.02 * hi, hi * 1.45], row=1, col=col)
    fig.update_yaxes(categoryorder="array", categoryarray=labels[::-1], title_text="flaw (rank order)", row=1, col=1)
    fig.update_xaxes(title_text="goodput lost (% of requests)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="p99 increase (s; hatched = never answered)", row=1, col=2)
    fig.update_xaxes(title_text="goodput gained (% of requests)", rangemode="tozero", row=1, col=3)
    fig.update_layout(height=max(360, 60 + 42 * len(flaws)), template="plotly_white", font=FONT, barmode="overlay",
                      legend=dict(orientation="h", y=-0.16, x=0), margin=dict(l=220, r=60, t=60, b=110),
                      uniformtext_minsize=10)
    return fig


def heatmap_figure(doc: dict[str, Any]) -> go.Figure:
    """Flaw (rank order) x scenario: goodput lost when the flaw is put back
    into hardened, in percent; hover adds the p99 increase, wasted GPU time
    and the fix's gain there."""
    flaws = _ordered(doc)
    top = set(doc.get("top") or [])
    scen = list(doc.get("suite") or sorted({w for f in flaws for w in f.get("per_scenario") or {}}))
    z, text, tips = [], [], []
    for f in flaws:
        per = f.get("per_scenario") or {}
        row, trow, hrow = [], [], []
        for w in scen:
            c = per.get(w)
            if c is None:
                row.append(None)
                trow.append("")
                hrow.append("not measured")
                continue
            loss = 100 * (c.get("goodput_loss") or 0.0)
            row.append(loss)
            trow.append(f"{loss:.1f}" if abs(loss) >= 0.05 else "")
            gain = c.get("gain_goodput")
            hrow.append(f"p99 {_p99(c.get('p99_increase_s'))}, wasted {c.get('wasted_gpu_s') or 0:,.1f} GPU-s"
                        + ("" if gain is None else f"<br>fix alone in naive gains {100 * gain:+.1f}% goodput"))
        z.append(row)
        text.append(trow)
        tips.append(hrow)
    labels = [_label(f, top) for f in flaws]
    values = [v for row in z for v in row if v is not None]
    # Losses are signed: a flaw can help in a scenario (a cache on repeated
    # payloads); those cells go blue around a white zero, never clipped away.
    signed = bool(values) and min(values) < -0.05
    scale = dict(colorscale="RdBu_r", zmid=0) if signed else dict(colorscale="Reds", zmin=0)
    fig = go.Figure(go.Heatmap(
        z=z, x=scen, y=labels, text=text, texttemplate="%{text}", customdata=tips, **scale,
        colorbar=dict(title=dict(text="goodput lost (%)<br>(negative: it helps)" if signed else "goodput lost (%)")),
        xgap=2, ygap=2,
        hovertemplate="%{y} in %{x}: %{z:.2f}% goodput lost<br>%{customdata}<extra></extra>"))
    fig.update_yaxes(title_text="flaw (rank order)", autorange="reversed")
    fig.update_xaxes(title_text="scenario", tickangle=-30)
    fig.update_layout(height=max(380, 140 + 40 * len(flaws)), template="plotly_white", font=FONT,
                      margin=dict(l=220, r=40, t=30, b=110))
    return fig


def ranking_table(doc: dict[str, Any]) -> str:
    top = set(doc.get("top") or [])
    head = ("<tr><th>rank</th><th class='l'>flaw</th><th>doc item</th><th>goodput lost</th><th>p99 increase</th>"
            "<th>wasted GPU-s</th><th class='l'>worst in</th><th>fix gains</th><th class='l'>failure / fix / interaction</th></tr>")
    rows = []
    for f in _ordered(doc):
        c, g = f["cost"], f.get("gain") or {}
        detail = (f"{_html.escape(str(f.get('failure', '')))}<br><i>fix:</i> {_html.escape(str(f.get('fix', '')))}"
                  + (f"<br><i>interaction:</i> {_html.escape(str(f['interaction']))}" if f.get("interaction") else ""))
        cls = " class='top'" if f["id"] in top else ""
        rows.append(
            f"<tr{cls}><td>{f.get('rank', '?')}</td><td class='l'><b>{_html.escape(f['id'])}</b></td>"
            f"<td>{_html.escape(str(f.get('doc_item', '')))}</td><td>{fmt_pct(c.get('goodput_loss'))}</td>"
            f"<td>{_html.escape(_p99(c.get('p99_increase_s')))}</td><td>{c.get('wasted_gpu_s') or 0:,.1f}</td>"
            f"<td class='l'>{_html.escape(str(c.get('scenario', '-')))}</td>"
            f"<td>{fmt_pct(g.get('goodput_gain'))}</td><td class='l'>{detail}</td></tr>")
    return f"<table class='data'>{head}{''.join(rows)}</table>"


def sections(doc: dict[str, Any]) -> list[Section]:
    """Sections of one rank document: verdict, chart, heatmap, table."""
    flaws = _ordered(doc)
    top = [f for f in flaws if f["id"] in set(doc.get("top") or [])]
    names = ", ".join(f"{f['id']} ({fmt_pct(f['cost'].get('goodput_loss'))} goodput lost in "
                      f"{f['cost'].get('scenario', '?')})" for f in top)
    slo = doc.get("slo_s")
    verdict = (f"<p><b>Insist on fixing before shipping:</b> {_html.escape(names) or 'none measured'}.</p>"
               f"<p>Each flaw was put back, alone, into the hardened design and its cost measured in every "
               f"scenario of the suite (seed {doc.get('seed')}, SLO {fmt_s(slo) if slo else '?'}); the worst "
               f"scenario ranks it. The fix's gain is the other way round: the flaw fixed alone in the naive "
               f"design. A large cost with a small gain means the flaw hurts only once others are fixed.</p>")
    return [
        Section("verdict: the flaws to fix first", html=verdict),
        Section("cost of each flaw, ranked", ranking_figure(doc),
                note="Rank 1 on top; ★ = top three. Bars are worst-case over the suite; hover a bar for the "
                     "scenario, the failure and the fix."),
        Section("cost per flaw and scenario", heatmap_figure(doc),
                note="Goodput lost (percentage points of all requests) when this flaw alone is put back into "
                     "the hardened design; negative: the flaw helps there. Blank cells are under 0.05 points."),
        Section("the ranking in numbers", html=ranking_table(doc)),
    ]
