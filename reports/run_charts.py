"""Charts of runs, shared by the run and compare views.

Every builder takes a list of Sides (a label, a typed run result, a colour),
so a single run and an A-vs-B comparison are drawn by the same code with the
same axes, units and markers. Builders read only the saved result.

Units on every axis: time in seconds since the run's start, rates in
requests/s, latency in seconds, queue depth in requests, GPU busy in percent.
"""

from __future__ import annotations

import html as _html
import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from harness.results.run import ANSWERED, Outcome, OutcomeFigures, RunResult, outcome_at
from reports.charts import FONT, NEVER, OUTCOME_COLORS, make_subplots
from reports.fmt import fmt_s, fmt_share

__all__ = ["Marker", "Side", "add_markers", "cdf_figure", "label_levels", "log_axis", "markers",
           "tenant_figure", "timeseries_figure"]

OK = (Outcome.WITHIN_SLO, Outcome.LATE)
# Offered load is neutral grey: both sides of a compare get the same arrivals.
OFFERED = "#7f7f7f"
BAND_COLORS = {"spike": "#fdae6b", "gpu-down": "#e377c2", "slowdown": "#bcbd22", "burst": "#9edae5"}


@dataclass(frozen=True)
class Side:
    """One run drawn in a chart: its legend label, run result and colour."""

    label: str
    run: RunResult
    color: str


@dataclass(frozen=True)
class Marker:
    """A disturbance band [x0, x1) or, when x1 is None, a vertical line at x0 (s)."""

    kind: str
    x0: float
    x1: float | None
    label: str


def markers(run: RunResult) -> list[Marker]:
    """Phase boundaries, spike windows, faults, tenant bursts and recorded
    events that are not already fault windows, clipped to the run (seconds)."""
    wl = run.workload_config
    end = float(run.summary.duration_s) or None
    out: list[Marker] = []
    phases = run.phases
    for i, ph in enumerate(phases[1:]):
        out.append(Marker("phase", ph["start_s"], None, f"phase {i + 2} ({ph['kind']}) starts"))
    for ph, cfg in zip(phases, wl.get("phases") or []):
        if cfg.get("kind") == "spike":
            a = ph["start_s"] + cfg["at_s"]
            b = min(a + cfg["spike_s"], ph["end_s"])
            if a < ph["end_s"]:
                out.append(Marker("spike", a, b, f"spike to {cfg['spike_rps']:,.0f} req/s"))
    events = run.events
    # Live runs against an external target cannot inject faults: no bands then.
    skipped = any(ev.get("event") == "faults-skipped" for ev in events)
    for f in [] if skipped else run.faults or wl.get("faults") or []:
        b = f["at_s"] + f["duration_s"]
        if end is not None and f["at_s"] >= end:
            continue
        label = (f"GPU outage: {f['fraction']:.0%} of GPUs down" if f["kind"] == "gpu-down"
                 else f"slowdown: batches x{f['factor']:g} slower")
        out.append(Marker(f["kind"], f["at_s"], min(b, end) if end else b, label))
    for t in wl.get("tenants") or []:
        for br in t.get("bursts") or []:
            if end is None or br["start_s"] < end:
                out.append(Marker("burst", br["start_s"], min(br["end_s"], end) if end else br["end_s"],
                                  f"tenant {t['name']} bursts x{br['factor']:g}"))
    covered = {"gpu-down", "gpu-up", "slowdown", "slowdown-end"}
    for ev in events:
        if ev.get("event") not in covered:
            why = f": {ev['reason']}" if ev.get("reason") else ""
            out.append(Marker("event", ev["t_s"], None, f"{ev.get('event')}{why}"))
    return out


def label_levels(marks: list[Marker], span_s: float, plot_px: float = 900.0, char_px: float = 7.0) -> list[int]:
    """A text row above the chart for each marker's label (0 = lowest): the
    lowest row where it does not run into an earlier label (greedy, by x)."""
    per_char = span_s * char_px / plot_px if span_s > 0 else 0.0
    ends: list[float] = []  # per row, where its last label ends (s)
    out = [0] * len(marks)
    for i in sorted(range(len(marks)), key=lambda k: marks[k].x0):
        m = marks[i]
        row = next((r for r, end in enumerate(ends) if end <= m.x0), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = m.x0 + (len(m.label) + 2) * per_char
        out[i] = row
    return out


def add_markers(fig: go.Figure, marks: list[Marker], span_s: float) -> int:
    """Bands and lines across every row of `fig`, labels above the top row in
    as many text rows as they need not to overlap; returns that number."""
    levels = label_levels(marks, span_s)
    for m, level in zip(marks, levels):
        color = BAND_COLORS.get(m.kind, "#999999")
        if m.x1 is None:
            fig.add_shape(type="line", xref="x", yref="paper", x0=m.x0, x1=m.x0, y0=0, y1=1,
                          line=dict(color="#555555", width=1, dash="dot"), layer="below")
        else:
            fig.add_shape(type="rect", xref="x", yref="paper", x0=m.x0, x1=m.x1, y0=0, y1=1,
                          fillcolor=color, opacity=0.25, line_width=0, layer="below")
        fig.add_annotation(x=m.x0, xref="x", y=1.0, yshift=4 + 22 * level, yref="paper", xanchor="left",
                           yanchor="bottom", showarrow=False, text=_html.escape(m.label),
                           font=dict(size=12, color="#333"), bgcolor=color if m.x1 is not None else "#eeeeee",
                           opacity=0.9)
    return max(levels) + 1 if levels else 0


def log_axis(values: list[float], floor: float | None = None) -> dict[str, Any]:
    """Log-axis settings with ticks on a 1-2-5 ladder labelled in ms or s
    (Plotly's own log ticks read '2, 5, 2, 5', which nobody can place)."""
    vals = [v for v in values if v is not None and v > 0] or [1.0]
    lo, hi = min(vals) / 1.3, max(vals) * 1.3
    if floor is not None:
        lo = max(lo, floor)
    ticks = [m * 10.0 ** e for e in range(-6, 5) for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    return dict(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=ticks,
                ticktext=[fmt_s(t) for t in ticks])


def _window_x(run: RunResult) -> tuple[list[float], list[int]]:
    """Window centres (s) and indices of the windows inside the run (the last
    window only collects stragglers after the schedule ends)."""
    ts = run.timeseries
    w = ts["window_s"]
    end = run.summary.duration_s
    keep = [j for j, t in enumerate(ts["t_s"]) if t < end - 1e-9]
    return [ts["t_s"][j] + w / 2 for j in keep], keep


def _pick(values: list[Any], keep: list[int], scale: float = 1.0) -> list[float | None]:
    return [None if values[j] is None else values[j] * scale for j in keep]


def _legend_layout(fig: go.Figure, rows: int) -> None:
    """One legend per row, beside the row it explains."""
    for r in range(1, rows + 1):
        axis = fig.layout["yaxis" if r == 1 else f"yaxis{r}"]
        name = "legend" if r == 1 else f"legend{r}"
        fig.layout[name] = dict(x=1.01, xanchor="left", y=axis.domain[1], yanchor="top",
                                bgcolor="rgba(255,255,255,0.8)", font=dict(size=12))


def _p99_line(run: RunResult) -> list[float | None]:
    """Per window, the p99 of the requests answered OK (older files: of all requests)."""
    ts = run.timeseries
    return ts.get("p99_ok_s") or ts["p99_s"]


def _never_p99(ts: dict[str, Any], j: int) -> bool:
    """Whether window j's p99 over all its requests lands on one never answered
    (timed out or lost; older files: on any request not answered OK)."""
    per = ts.get("outcomes")
    if not per:
        return ts["p99_s"][j] is None
    o = outcome_at({k: v[j] for k, v in per.items()}, 0.99)
    return o is not None and o not in ANSWERED


def timeseries_figure(sides: list[Side]) -> go.Figure:
    """Four rows sharing the time axis: rates (offered, goodput, attempts, and the
    requests shed or timed out), p99 of the requests answered OK per window (with
    the SLO; an x where the window's p99 was never answered), queue depth and GPU
    busy; the scenario's disturbances marked on all."""
    rows = 4
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        row_heights=[0.34, 0.26, 0.2, 0.2])
    first = sides[0].run
    x, keep = _window_x(first)
    ts0 = first.timeseries
    w = ts0["window_s"]
    rate_tip = "%{y:,.0f} req/s<extra>%{fullData.name}</extra>"
    fig.add_trace(go.Scatter(x=x, y=_pick(ts0["offered_rps"], keep), name="offered (unique requests)"
                             + (", same for all" if len(sides) > 1 else ""),
                             line=dict(color=OFFERED, width=3, dash="dot"), hovertemplate=rate_tip,
                             legend="legend"), row=1, col=1)
    slo = first.summary.slo_s
    finite = [v for s in sides for v in _p99_line(s.run) if v is not None]
    cap = max(finite + [slo]) * 1.6
    dense = len(x) > 120  # long runs: markers would merge into a wall
    for i, s in enumerate(sides):
        ts = s.run.timeseries
        xs, kp = _window_x(s.run)
        tag = f": {s.label}" if len(sides) > 1 else ""
        fig.add_trace(go.Scatter(x=xs, y=_pick(ts["goodput_rps"], kp), name=f"goodput (within SLO){tag}",
                                 line=dict(color=s.color, width=2.5), hovertemplate=rate_tip, legend="legend"),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=xs, y=_pick(ts["attempts_rps"], kp), name=f"attempts incl. retries{tag}",
                                 line=dict(color=s.color, width=1.5, dash="dash"), hovertemplate=rate_tip,
                                 legend="legend"), row=1, col=1)
        p99 = _pick(ts.get("p99_ok_s", ts["p99_s"]), kp)
        fig.add_trace(go.Scatter(x=xs, y=p99, name=f"p99 latency, answered OK{tag}", line=dict(color=s.color, width=2),
                                 mode="lines" if dense else "lines+markers", marker=dict(size=4), legend="legend2",
                                 hovertemplate="p99 %{y:.3f} s<extra>%{fullData.name}</extra>"), row=2, col=1)
        nx = [xv for xv, j in zip(xs, kp) if _never_p99(ts, j)]
        if nx:
            # Staggered per side, so that A's and B's "never" marks do not hide each other.
            fig.add_trace(go.Scatter(x=nx, y=[cap * 1.3 ** i] * len(nx), mode="markers", legend="legend2",
                                     name=f"p99 never answered{tag}",
                                     marker=dict(symbol="x", size=5 if dense else 10, color=s.color,
                                                 line=dict(color=NEVER, width=1)),
                                     hovertemplate="p99 never: over 1% of this window's requests were never "
                                                   "answered (timed out or lost)<extra>%{fullData.name}</extra>"),
                          row=2, col=1)
        for o, dash in ((Outcome.SHED, "dot"), (Outcome.TIMED_OUT, "dashdot")):
            per = (ts.get("outcomes") or {}).get(o.value)
            if per and any(per[j] for j in kp):
                fig.add_trace(go.Scatter(x=xs, y=[per[j] / w for j in kp], name=f"{o.label} (requests){tag}",
                                         line=dict(color=s.color, width=1.5, dash=dash), legend="legend",
                                         hovertemplate=rate_tip), row=1, col=1)
        fig.add_trace(go.Scatter(x=xs, y=_pick(ts["queue_depth"], kp), name=f"queue depth (peak){tag}",
                                 line=dict(color=s.color, width=2), legend="legend3",
                                 hovertemplate="%{y:,.0f} requests queued<extra>%{fullData.name}</extra>"),
                      row=3, col=1)
        fig.add_trace(go.Scatter(x=xs, y=_pick(ts["gpu_busy"], kp, 100.0), name=f"GPU busy{tag}",
                                 line=dict(color=s.color, width=2), legend="legend4",
                                 hovertemplate="%{y:.0f}% of live GPUs busy<extra>%{fullData.name}</extra>"),
                      row=4, col=1)
    fig.add_trace(go.Scatter(x=[x[0] - w / 2, x[-1] + w / 2] if x else [], y=[slo, slo], mode="lines",
                             name=f"SLO {fmt_s(slo)}", line=dict(color="#333", width=1.5, dash="dash"),
                             legend="legend2", hoverinfo="skip"), row=2, col=1)
    fig.update_yaxes(title_text="requests/s", rangemode="tozero", row=1, col=1)
    p99_all = [v for s in sides for v in _p99_line(s.run) if v is not None]
    fig.update_yaxes(title_text="p99 latency (log)", **log_axis(p99_all + [slo, cap * 1.3 ** (len(sides) - 1)]),
                     row=2, col=1)
    fig.update_yaxes(title_text="queue (requests)", rangemode="tozero", row=3, col=1)
    fig.update_yaxes(title_text="GPU busy (%)", range=[0, 105], row=4, col=1)
    for r in range(1, rows + 1):
        fig.update_xaxes(title_text="time since start of run (s)" if r == rows else None,
                         showticklabels=True, row=r, col=1)
    label_rows = add_markers(fig, markers(first), first.summary.duration_s)
    _legend_layout(fig, rows)
    fig.update_layout(height=940 + 22 * label_rows, template="plotly_white", font=FONT, hovermode="x unified",
                      margin=dict(l=80, r=290, t=40 + 22 * label_rows, b=60))
    return fig


def _cdf_points(run: RunResult) -> tuple[list[float], list[float], float | None, bool]:
    """(latency s, fraction answered within it, answered fraction, exact?)."""
    cdf = run.latency_cdf
    if cdf and cdf.get("fraction"):
        return cdf["latency_s"], cdf["fraction"], cdf.get("answered_fraction"), True
    # Older result files: only the summary percentiles.
    lat = run.summary.latency_s
    pts = [(v, q) for v, q in ((lat.p50, 0.5), (lat.p90, 0.9), (lat.p99, 0.99), (lat.p999, 0.999)) if v]
    r = run.summary.requests
    answered = r.succeeded / r.unique if r.unique else None
    return [p[0] for p in pts], [p[1] for p in pts], answered, False


def _not_ok_text(run: RunResult) -> str:
    """How the requests not answered OK ended: '21.5% shed, 0.48% timed out'."""
    oc = run.summary.outcomes
    return ", ".join(f"{fmt_share(f.share)} {o.label}" for o, f in oc.not_ok().items()) or "none"


def cdf_figure(sides: list[Side]) -> go.Figure:
    """Left: the latency CDF (share of requests answered OK within x). Right: its
    tail, the share NOT answered OK within x, on a log scale. A curve stops at
    the share answered OK; the dotted level beyond it is the rest, labelled with
    how those requests ended (shed, timed out, failed, lost), not drawn as a latency."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("share answered OK within x", "tail: share NOT answered OK within x"))
    slo = sides[0].run.summary.slo_s
    points = [(s, *_cdf_points(s.run)) for s in sides]
    axis = log_axis([slo] + [x for p in points for x in p[1]], floor=1e-4)
    right = 10 ** axis["range"][1]
    for s, xs, fs, answered, exact in points:
        mode = "lines" if exact else "lines+markers+text"
        text = None if exact else [f"p{100 * f:g}" for f in fs]
        fig.add_trace(go.Scatter(x=xs, y=[100 * f for f in fs], mode=mode, name=s.label, legendgroup=s.label,
                                 line=dict(color=s.color, width=2.5, shape="hv" if exact else "linear"),
                                 text=text, textposition="top left",
                                 hovertemplate="%{y:.3f}% answered OK within %{x:.3f} s<extra>%{fullData.name}</extra>"),
                      row=1, col=1)
        tail = [(x, 1 - f) for x, f in zip(xs, fs) if 1 - f > 1e-7]
        fig.add_trace(go.Scatter(x=[t[0] for t in tail], y=[100 * t[1] for t in tail], mode=mode, name=s.label,
                                 legendgroup=s.label, showlegend=False, text=text, textposition="top right",
                                 line=dict(color=s.color, width=2.5, shape="hv" if exact else "linear"),
                                 hovertemplate="%{y:.4g}% not answered OK within %{x:.3f} s<extra>%{fullData.name}</extra>"),
                      row=1, col=2)
        if answered is not None and answered < 1 - 1e-9:
            # Requests not answered OK have no latency: a level line from where the curve
            # stops, labelled with how they ended (shed is a fast refusal, not a wait).
            rest = _not_ok_text(s.run)
            end = xs[-1] if xs else slo
            tip = f"not answered OK: {rest}<extra>{_html.escape(s.label)}</extra>"
            for col, y in ((1, 100 * answered), (2, 100 * (1 - answered))):
                fig.add_trace(go.Scatter(x=[end, right], y=[y, y], mode="lines", legendgroup=s.label,
                                         name=f"{s.label}: {rest}", showlegend=col == 1,
                                         line=dict(color=s.color, width=2, dash="dot"), hovertemplate=tip),
                              row=1, col=col)
    for col in (1, 2):
        fig.add_vline(x=slo, line=dict(color="#333", dash="dash", width=1.5), row=1, col=col)
        # Annotations on a log axis take log10(x); add_vline's own label misplaces it.
        # Low on the CDF and high on the tail: where curves rarely are at the SLO.
        fig.add_annotation(x=math.log10(slo), xref="x" if col == 1 else "x2", y=0.02 if col == 1 else 0.98,
                           yref="y domain" if col == 1 else "y2 domain", text=f"SLO {fmt_s(slo)}",
                           yanchor="bottom" if col == 1 else "top",
                           showarrow=False, xanchor="left", xshift=4, font=dict(size=12, color="#333"),
                           bgcolor="rgba(255,255,255,0.8)")
        fig.update_xaxes(title_text="end-to-end latency (log scale)", row=1, col=col, **axis)
    fig.update_yaxes(title_text="answered OK within x (%)", range=[0, 101], row=1, col=1)
    fig.update_yaxes(title_text="not answered OK within x (%, log)", type="log", row=1, col=2,
                     range=[-3.3, 2.05], tickvals=[100, 10, 1, 0.1, 0.01, 0.001],
                     ticktext=["100%", "10%", "1% (p99)", "0.1% (p999)", "0.01%", "0.001%"])
    fig.update_layout(height=460, template="plotly_white", font=FONT, hovermode="closest",
                      legend=dict(orientation="h", y=-0.22, x=0), margin=dict(l=80, r=30, t=60, b=110))
    return fig


def _tenant_outcomes(run: RunResult, name: str) -> dict[Outcome, OutcomeFigures]:
    """A tenant's outcome shares (older files know only its share within the SLO)."""
    t = run.summary.tenants[name]
    if t.outcomes is not None:
        return {o: t.outcomes.of(o) for o in Outcome}
    return {Outcome.WITHIN_SLO: OutcomeFigures(count=t.within_slo, share=t.goodput_ratio)}


def tenant_figure(sides: list[Side]) -> go.Figure | None:
    """Per tenant, grouped by target: left, the p99 of its requests answered OK;
    right, how its requests ended, stacked to 100% (within SLO, late, shed, timed
    out, failed, lost), so unanswered requests are a category of their own, never
    a bar height on the latency axis. None when the workload has one tenant."""
    names = list(sides[0].run.summary.tenants)
    if len(names) < 2:
        return None
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("p99 latency per tenant, of requests answered OK",
                                        "how each tenant's requests ended"))
    slo = sides[0].run.summary.slo_s
    finite = [p for p in (_ok_p99(t) for s in sides for t in s.run.summary.tenants.values()) if p is not None]
    cap = max(finite + [slo]) * 1.25
    # Bar labels only while they stay legible; hover always has the figure.
    label = len(names) * len(sides) <= 12
    for s in sides:
        ten = s.run.summary.tenants
        p99 = [_ok_p99(ten[n]) for n in names]
        ok = [fmt_share(sum(f.share for o, f in _tenant_outcomes(s.run, n).items() if o in OK)) for n in names]
        fig.add_trace(go.Bar(x=names, y=[0 if v is None else v for v in p99], name=s.label, legendgroup=s.label,
                             marker=dict(color=s.color),
                             text=["none OK" if v is None else fmt_s(v) for v in p99] if label else None,
                             textposition="outside",
                             customdata=[[fmt_s(v, "none answered OK"), k] for v, k in zip(p99, ok)],
                             hovertemplate="tenant %{x}: p99 %{customdata[0]} over its %{customdata[1]} answered OK"
                                           "<extra>%{fullData.name}</extra>"),
                      row=1, col=1)
    # Stacked shares on a (tenant, target) axis: one trace per outcome, in its own colour.
    short = {s.label: s.label.split(":")[0] if len(sides) > 1 else s.label for s in sides}
    xs = [[n for n in names for _ in sides], [short[s.label] for _ in names for s in sides]]
    per = {(n, s.label): _tenant_outcomes(s.run, n) for n in names for s in sides}
    base = [0.0] * len(xs[0])
    for o in Outcome:
        figs = [per[n, s.label].get(o) for n in names for s in sides]
        if not any(f is not None and f.count for f in figs):
            continue
        ys = [100 * f.share if f else 0.0 for f in figs]
        # Stacked by hand (base) in one offset group: barmode stays "group" for the p99 bars.
        fig.add_trace(go.Bar(x=xs, y=ys, base=list(base), offsetgroup="outcomes", name=o.label,
                             marker=dict(color=OUTCOME_COLORS[o.value], line=dict(color="#ffffff", width=0.5)),
                             customdata=[f.count if f else 0 for f in figs], legendgroup=f"outcome-{o.value}",
                             hovertemplate=f"{o.label}: %{{y:.1f}}% (%{{customdata:,}} requests)"
                                           "<extra>%{x}</extra>"),
                      row=1, col=2)
        base = [b + y for b, y in zip(base, ys)]
    # The SLO's label goes in the legend: on the chart it would sit on the bars.
    fig.add_hline(y=slo, line=dict(color="#333", dash="dash", width=1.5), row=1, col=1)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"SLO {fmt_s(slo)}", hoverinfo="skip",
                             line=dict(color="#333", dash="dash", width=1.5)), row=1, col=1)
    fig.update_xaxes(title_text="tenant")
    fig.update_yaxes(title_text="p99 latency (s)", range=[0, cap * 1.15], row=1, col=1)
    fig.update_yaxes(title_text="share of the tenant's requests (%)", range=[0, 101], row=1, col=2)
    fig.update_layout(height=460, template="plotly_white", font=FONT, barmode="group", uniformtext_minsize=9,
                      legend=dict(orientation="h", y=-0.25, x=0), margin=dict(l=80, r=30, t=60, b=110))
    return fig


def _ok_p99(t: Any) -> float | None:
    """A tenant's p99 over its requests answered OK (older files: over all of them)."""
    return t.p99_ok_s if t.outcomes is not None else t.p99_s
