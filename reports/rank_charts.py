"""The rank view's charts: the flaw ranking as bars (top three highlighted) and a
flaw x scenario heatmap of costs. Read a typed `RankResult` only."""

from __future__ import annotations

import html as _html

import plotly.graph_objects as go

from harness.results.rank import NOISE_P99_S, FlawCost, FlawRank, RankResult, ScenarioCost, TailChange
from reports.charts import FONT, make_subplots
from reports.fmt import fmt_pct, fmt_s

__all__ = ["GAIN_OTHER", "GAIN_TOP", "OTHER", "TOP", "cost_tail", "heatmap_figure", "label", "p99_at", "p99_change",
           "p99_pair", "ranking_figure", "row_tail"]

# Where a p99 with no latency lands, in words: only requests never answered are "never".
_ON = {"shed": "on shed requests", "failed": "on failed requests", "timed_out": "never answered (timed out)",
       "lost": "never answered (lost)"}


def p99_at(x: float | None, outcome: str | None = None, never: str = "never answered") -> str:
    """A p99: its latency, or the outcome its 1% tail lands on ('on shed requests': the
    target answered them with a refusal; `never` only for requests never answered)."""
    if x is not None:
        return fmt_s(x)
    return _ON.get(outcome or "", never)


def p99_pair(before_s: float | None, before_outcome: str | None, after_s: float | None,
             after_outcome: str | None, before: tuple[float | None, float | None] = (None, None),
             after: tuple[float | None, float | None] = (None, None)) -> str:
    """'p99 a -> b'; a tail that lands on refused requests on both sides says so once, with the
    share refused or late on each side (1 - goodput - timed out, failed or lost: `before` and
    `after` are (goodput, that share)), never 'on shed requests -> on shed requests'."""
    if before_s is None and after_s is None and before_outcome == after_outcome == "shed":
        shares = [None if g is None or u is None else max(0.0, 1.0 - g - u) for g, u in (before, after)]
        text = "p99 lands on refused (shed) requests before and after"
        if shares[0] is not None and shares[1] is not None:
            text += f": refused or late {fmt_pct(shares[0])} -> {fmt_pct(shares[1])}"
        return text
    if before_s is None and after_s is None and before_outcome == after_outcome:
        return f"p99 {p99_at(None, before_outcome)} before and after"
    return f"p99 {p99_at(before_s, before_outcome)} -> {p99_at(after_s, after_outcome)}"


TOP = "#d7301f"
OTHER = "#9e9e9e"
GAIN_TOP = "#238b45"
GAIN_OTHER = "#a1d99b"


def label(f: FlawRank, top: set[str]) -> str:
    star = " ★" if f.id in top else ""
    return f"{f.rank}. {f.id}{star}"


def p99_change(x: float | None, change: TailChange = TailChange.SHIFTED, to_s: float | None = None,
               from_outcome: str | None = None, to_outcome: str | None = None) -> str:
    """A p99 difference, signed; None is a tail that lost its latency ('never answered', or
    where it lands: `to_outcome`). A tail that went from no latency to `to_s` says so (it is
    a change, never "+0 ms"); one with no latency either way says where it lands."""
    if x is None:
        return p99_at(None, to_outcome)
    if change is TailChange.BECAME_ANSWERED and x < NOISE_P99_S:
        return f"{p99_at(None, from_outcome)} -> {fmt_s(to_s)}"
    if change is TailChange.NEVER and abs(x) < NOISE_P99_S:
        a, b = p99_at(None, from_outcome), p99_at(None, to_outcome)
        return f"{a} before and after" if a == b else f"{a} -> {b}"
    return ("+" if x >= 0 else "-") + fmt_s(abs(x))


def cost_tail(c: FlawCost) -> str:
    """A flaw's worst p99 change, in words fit for a cell."""
    return p99_change(c.p99_increase_s, c.p99_change, c.p99_to_s, c.p99_from_outcome, c.p99_to_outcome)


def row_tail(c: ScenarioCost) -> str:
    """The p99 change of one (flaw, scenario) cell (tables keyed good, good+F, ...)."""
    keys = list(c.p99_s)
    good, put = (keys[0], keys[1]) if len(keys) > 1 else ("", "")
    return p99_change(c.p99_increase_s, c.p99_change, c.p99_s.get(put), c.p99_outcome.get(good),
                      c.p99_outcome.get(put))


def _hover(f: FlawRank) -> str:
    return (f"<b>{_html.escape(f.id)}</b> (doc item {_html.escape(f.doc_item)})<br>"
            f"worst in: {_html.escape(f.cost.scenario)}<br>"
            f"failure: {_html.escape(f.failure[:110])}<br>"
            f"fix: {_html.escape(f.fix[:110])}"
            + (f"<br>interaction: {_html.escape(f.interaction)}" if f.interaction else "")
            + ("<br><b>warning:</b> the runs were too short to show it" if f.too_short else ""))


def ranking_figure(result: RankResult) -> go.Figure:
    """Three panels sharing the flaw axis (rank 1 on top): goodput lost when
    the flaw is put back into the good design, the p99 increase it causes, and
    the goodput gained by fixing it alone in the flawed one. Top three in colour."""
    flaws = result.ranked()
    top = set(result.top)
    labels = [label(f, top) for f in flaws]
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(f"goodput lost (put back into {result.good})",
                                        f"p99 increase (put back into {result.good})",
                                        f"goodput gained (fixed alone in {result.flawed})"))
    p99s = [f.cost.p99_increase_s for f in flaws]
    finite = [abs(v) for v in p99s if v is not None]
    cap = max(finite + [0.1]) * 1.2
    hover = [_hover(f) for f in flaws]
    for group, name, cost_c, gain_c in ((True, "top three: insist on these", TOP, GAIN_TOP),
                                        (False, "other flaws", OTHER, GAIN_OTHER)):
        idx = [i for i, f in enumerate(flaws) if (f.id in top) == group]
        if not idx:
            continue
        y = [labels[i] for i in idx]
        loss = [100 * flaws[i].cost.goodput_loss for i in idx]
        fig.add_trace(go.Bar(y=y, x=loss, orientation="h", name=name, legendgroup=name, marker_color=cost_c,
                             text=[f"{v:.1f}%" for v in loss], textposition="outside", customdata=[hover[i] for i in idx],
                             hovertemplate="%{customdata}<br>goodput lost: %{x:.2f}%<extra></extra>"), row=1, col=1)
        p = [p99s[i] for i in idx]
        fig.add_trace(go.Bar(y=y, x=[cap if v is None else v for v in p], orientation="h", name=name,
                             legendgroup=name, showlegend=False,
                             marker=dict(color=cost_c, pattern=dict(shape=["/" if v is None else "" for v in p])),
                             text=["never" if v is None else cost_tail(flaws[i].cost) for v, i in zip(p, idx)],
                             textposition="outside",
                             customdata=[[hover[i], cost_tail(flaws[i].cost), flaws[i].cost.p99_scenario] for i in idx],
                             hovertemplate="%{customdata[0]}<br>p99: %{customdata[1]} (in %{customdata[2]})"
                                           "<extra></extra>"), row=1, col=2)
        gain = [100 * flaws[i].gain.goodput_gain for i in idx]
        fig.add_trace(go.Bar(y=y, x=gain, orientation="h", name=name, legendgroup=name, showlegend=False,
                             marker_color=gain_c, text=[f"{v:+.1f}%" for v in gain], textposition="outside",
                             customdata=[hover[i] for i in idx],
                             hovertemplate="%{customdata}<br>goodput gained by the fix: %{x:.2f}%<extra></extra>"),
                      row=1, col=3)
    # Room to the right of the longest bar for its label ("+1.31 s", "never answered").
    losses = [100 * f.cost.goodput_loss for f in flaws]
    gains = [100 * f.gain.goodput_gain for f in flaws]
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


def heatmap_figure(result: RankResult) -> go.Figure:
    """Flaw (rank order) x scenario: goodput lost when the flaw is put back into
    the good design, in percent; hover adds the p99 increase, wasted GPU time and
    the fix's gain there."""
    flaws = result.ranked()
    top = set(result.top)
    scen = list(result.suite or sorted({w for f in flaws for w in f.per_scenario}))
    z, text, tips = [], [], []
    for f in flaws:
        row: list[float | None] = []
        trow: list[str] = []
        hrow: list[str] = []
        for w in scen:
            c = f.per_scenario.get(w)
            if c is None:
                row.append(None)
                trow.append("")
                hrow.append("not measured")
                continue
            loss = 100 * c.goodput_loss
            row.append(loss)
            trow.append(f"{loss:.1f}" if abs(loss) >= 0.05 else "")
            hrow.append(f"p99 {row_tail(c)}, wasted {c.wasted_gpu_s:,.1f} GPU-s, timed out/failed/lost "
                        f"{100 * c.harm():+.2f}%"
                        f"<br>fix alone in {result.flawed} gains {100 * c.gain_goodput:+.1f}% goodput")
        z.append(row)
        text.append(trow)
        tips.append(hrow)
    labels = [label(f, top) for f in flaws]
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
