"""HTML sections for a capacity plan (``kind: "capacity"``): tables and Plotly figures.

Reads only the saved document. Units on every axis: GPUs, requests/s, batch size in
requests, latency in milliseconds, utilization, fill and load in percent.
"""

from __future__ import annotations

import html as _html
import math
from typing import Any, Mapping

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.capacity_console import format_measured
from reports.page import Section

__all__ = ["sections", "by_b_figure", "curve_figure", "fill_figure", "per_gpu_figure"]

FONT = dict(family="system-ui, Segoe UI, Roboto, Helvetica, Arial, sans-serif", size=13)
P50, P99, FILL, SLO, NEVER = "#3182bd", "#e6550d", "#31a354", "#555555", "#b2182b"


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(title=title, template="plotly_white", font=FONT, height=height,
                      margin=dict(l=70, r=70, t=60, b=60), legend=dict(orientation="h", y=-0.2))
    return fig


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


def by_b_figure(doc: Mapping[str, Any]) -> go.Figure:
    """GPUs the formula needs against B (log-log), unrounded and rounded up."""
    rows = doc["table_by_b"]
    b = [r["b"] for r in rows]
    fig = go.Figure([
        go.Scatter(x=b, y=[r["theoretical_gpus"] for r in rows], mode="lines+markers", name="QPS x t(B) / B",
                   hovertemplate="B=%{x}: %{y:.2f} GPUs<extra></extra>"),
        go.Scatter(x=b, y=[r["formula_gpus"] for r in rows], mode="markers", name="rounded up (whole GPUs)",
                   marker=dict(symbol="square-open", size=10), hovertemplate="B=%{x}: %{y} GPUs<extra></extra>"),
    ])
    if doc.get("realtime_with_headroom_gpus"):
        fig.add_hline(y=doc["realtime_with_headroom_gpus"], line_dash="dot", line_color=P99,
                      annotation_text=f"fleet to buy at B={doc['inputs']['batch_size']} "
                                      f"({doc['realtime_with_headroom_gpus']})")
    ys = [r["theoretical_gpus"] for r in rows] + [doc.get("realtime_with_headroom_gpus") or 1]
    fig.update_xaxes(type="log", title_text="batch size B (requests)", tickvals=b)
    # An explicit range: a horizontal line on a log axis otherwise drags autorange far off.
    fig.update_yaxes(type="log", title_text="GPUs", range=[math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.5)])
    return _layout(fig, f"The formula over B at {doc['inputs']['qps']:,.0f} QPS")


def curve_figure(doc: Mapping[str, Any]) -> go.Figure:
    """p50 and p99 (ms) against offered utilization (%) at peak, one point per fleet size;
    a p99 never reached is drawn as a red x at the top; unstable fleets are hollow."""
    rows = doc["curve"]
    slo_ms = doc["inputs"]["slo_p99_s"] * 1000
    x = [100 * r["offered_utilization"] for r in rows]
    finite = [v for r in rows for v in (_ms(r["p99_s"]),) if v is not None]
    top = max(finite + [slo_ms]) * 1.15
    labels = [f"{r['gpus']} GPUs" + ("" if r["stable"] else " (at/over 100%: unstable)") for r in rows]
    fig = go.Figure()
    for key, name, color in (("p50_s", "p50", P50), ("p99_s", "p99", P99)):
        fig.add_trace(go.Scatter(
            x=x, y=[_ms(r[key]) for r in rows], mode="lines+markers", name=name, line_color=color,
            text=labels, marker=dict(symbol=["circle" if r["stable"] else "circle-open" for r in rows], size=9),
            hovertemplate="%{text}<br>offered %{x:.1f}%<br>" + name + " %{y:.0f} ms<extra></extra>"))
    never = [(xi, lab) for xi, lab, r in zip(x, labels, rows) if r["p99_s"] is None]
    if never:
        fig.add_trace(go.Scatter(x=[n[0] for n in never], y=[top] * len(never), mode="markers", name="p99 never",
                                 marker=dict(symbol="x", size=12, color=NEVER), text=[n[1] for n in never],
                                 hovertemplate="%{text}: p99 never (over 1% unanswered)<extra></extra>"))
    fig.add_hline(y=slo_ms, line_dash="dash", line_color=SLO, annotation_text=f"SLO p99 {slo_ms:.0f} ms")
    fig.add_vline(x=100, line_dash="dot", line_color=NEVER, annotation_text="capacity = load",
                  annotation_position="bottom left")
    fig.update_xaxes(title_text="offered utilization: QPS x t(B) / (B x GPUs) (%)")
    fig.update_yaxes(title_text="latency (ms)", rangemode="tozero", range=[0, top * 1.05])
    return _layout(fig, f"Latency vs utilization at {doc['inputs']['qps']:,.0f} QPS (fleet size varies)")


def fill_figure(doc: Mapping[str, Any]) -> go.Figure:
    """Batch fill (%) and p99 (ms) against load (% of peak, log) on the realtime fleet."""
    rows = doc["fill_vs_load"]
    x = [100 * r["load_fraction"] for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[100 * r["batch_fill"] for r in rows], mode="lines+markers",
                             name="batch fill", line_color=FILL,
                             hovertemplate="%{x:g}% of peak: fill %{y:.0f}%<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[_ms(r["p99_s"]) for r in rows], mode="lines+markers", name="p99",
                             line_color=P99, hovertemplate="%{x:g}% of peak: p99 %{y:.0f} ms<extra></extra>"),
                  secondary_y=True)
    slo_ms = doc["inputs"]["slo_p99_s"] * 1000
    fig.add_hline(y=slo_ms, line_dash="dash", line_color=SLO, secondary_y=True,
                  annotation_text=f"SLO {slo_ms:.0f} ms")
    fig.update_xaxes(type="log", title_text="load (% of peak QPS, log scale)")
    fig.update_yaxes(title_text="mean batch fill (% of B)", range=[0, 105], secondary_y=False)
    top = max([v for v in (_ms(r["p99_s"]) for r in rows) if v is not None] + [slo_ms]) * 1.15
    fig.update_yaxes(title_text="p99 latency (ms)", range=[0, top], secondary_y=True)
    return _layout(fig, f"Batch fill vs load on {doc['realtime_gpus']} GPUs")


def per_gpu_figure(doc: Mapping[str, Any]) -> go.Figure:
    """Requests/s each GPU serves: the formula, realtime fleets, and the offline backlog."""
    inp, off = doc["inputs"], doc["offline"]
    bars = [("formula: B / t(B)", inp["batch_size"] / inp["batch_time_s"])]
    if doc.get("realtime_gpus"):
        bars.append((f"realtime at peak ({doc['realtime_gpus']} GPUs)", inp["qps"] / doc["realtime_gpus"]))
    if doc.get("realtime_with_headroom_gpus"):
        bars.append((f"with headroom + N+1 ({doc['realtime_with_headroom_gpus']} GPUs)",
                     inp["qps"] / doc["realtime_with_headroom_gpus"]))
    bars.append((f"offline backlog ({off['gpus']} GPUs)", off["throughput_rps"] / off["gpus"]))
    fig = go.Figure(go.Bar(x=[b[0] for b in bars], y=[b[1] for b in bars],
                           marker_color=["#999999", P99, "#fdae6b", FILL][:len(bars)],
                           text=[f"{b[1]:,.0f}" for b in bars], textposition="outside",
                           hovertemplate="%{x}: %{y:,.1f} req/s per GPU<extra></extra>"))
    fig.update_yaxes(title_text="requests/s per GPU", rangemode="tozero")
    fig.update_xaxes(title_text="how the fleet is run")
    return _layout(fig, "Throughput per GPU: realtime pays for latency, offline reaches the formula", 400)


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns are left-aligned. Cells are escaped."""
    def cells(tag: str, vals: list[str]) -> str:
        cls = [' class="l"' if i < left else "" for i in range(len(vals))]
        return "".join(f"<{tag}{c}>{_html.escape(v)}</{tag}>" for c, v in zip(cls, vals))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return f'<table class="data"><tr>{cells("th", head)}</tr>{body}</table>'


def sections(doc: dict[str, Any]) -> list[Section]:
    inp = doc["inputs"]
    steps = [[s["step"], "-" if s["gpus"] is None else f"{s['gpus']:g}",
              "" if s["delta"] is None else f"{s['delta']:+g}", s["why"]] for s in doc.get("breakdown", [])]
    out = [Section(
        "Sizing: from the formula to the fleet to buy",
        html=_table(["step", "GPUs", "change", "why"], steps, left=1),
        note=(f"{inp['qps']:,.0f} QPS, B={inp['batch_size']}, t(B) = {inp['batch_time_s'] * 1000:.0f} ms "
              f"({inp['cost_model']} cost), p99 target {inp['slo_p99_s'] * 1000:.0f} ms. {doc['rounding']}.")),
        Section("The formula over B", figure=by_b_figure(doc),
                note="GPUs = QPS x t(B) / B: halving the batch doubles the fleet under a constant batch "
                     "time. Only full batches and never-idle GPUs reach it.")]
    if doc.get("curve"):
        out.append(Section("Latency vs utilization", figure=curve_figure(doc),
                           note="Each point is one seeded run of the hardened target at peak with a different "
                                "fleet. Fleets at or past 100% are unstable whatever a short run shows."))
    if doc.get("fill_vs_load"):
        out.append(Section("Batch fill vs load", figure=fill_figure(doc),
                           note="At low load the SLO's max-wait timer dispatches partial batches: each "
                                "GPU-second then serves fewer requests than the formula assumes."))
    if doc.get("losses"):
        rows = [[r["source"], format_measured(r), r["unit"], r["explanation"]] for r in doc["losses"]]
        out.append(Section("Where realtime throughput goes (measured)",
                           html=_table(["source", "measured", "unit", "what the runs showed"], rows, left=1),
                           note="Each source isolated by targeted sim runs that change one thing."))
    out.append(Section("Realtime vs offline", figure=per_gpu_figure(doc),
                       note=f"A backlog of {doc['offline']['requests']:,} requests in full batches reaches "
                            f"{doc['offline']['efficiency']:.1%} of the formula's throughput: no latency target, "
                            "so every batch is full and no GPU waits."))
    return out
