"""Gantt chart of a shared GPU pool, one subplot per scheduling policy (a chart helper of reports/pool.py).

Reads only typed policy runs (``harness.results.pool.PolicyRun``), so any stored
pool result can be drawn again.
"""

from __future__ import annotations

from typing import Mapping

import plotly.graph_objects as go

from harness.results.pool import PolicyRun
from reports.charts import FONT, make_subplots
from reports.fmt import fmt_pct, plain_s

__all__ = ["MODEL_COLORS", "gantt_figure"]

MODEL_COLORS = {"large": "#d62728", "small": "#1f77b4"}


def _title(name: str, r: PolicyRun) -> str:
    return (f"{name}: p99 large {plain_s(r.large.p99_s)} s, small {plain_s(r.small.p99_s)} s,"
            f" utilization {fmt_pct(r.utilization, 0)}, idle while large waits {fmt_pct(r.fragmentation_frac, 0)}")


def gantt_figure(results: Mapping[str, PolicyRun], window_s: tuple[float, float] | None = None) -> go.Figure:
    """One Gantt chart of the pool's GPUs per policy, stacked and sharing the time axis.

    ``window_s`` (seconds of virtual time) defaults to the first run's recorded Gantt
    window; bars are clipped to it. Large-model batches span every GPU at once, small
    ones one GPU.
    """
    if not results:
        raise ValueError("gantt_figure needs at least one policy result")
    names = list(results)
    lo, hi = window_s if window_s is not None else results[names[0]].gantt_window_s
    if not lo < hi:
        raise ValueError(f"window_s must be (a, b) with a < b, got {(lo, hi)}")
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.12 / len(names),
                        subplot_titles=[_title(n, results[n]) for n in names])
    shown: set[str] = set()  # one legend entry per model, from the first row that has its bars
    for row, name in enumerate(names, start=1):
        r = results[name]
        gpus = r.config.gpus
        for model, color in MODEL_COLORS.items():
            bars = [b for b in r.gantt if b.model == model and b.end_s > lo and b.start_s < hi]
            starts = [max(b.start_s, lo) for b in bars]
            fig.add_trace(go.Bar(
                x=[min(b.end_s, hi) - s for b, s in zip(bars, starts)], base=starts,
                y=[b.gpu for b in bars], orientation="h", marker_color=color,
                marker_line_width=0.5, marker_line_color="white",
                name=f"{model} model", legendgroup=model, showlegend=bool(bars) and model not in shown,
                hovertemplate="GPU %{y}<br>%{base:.3f} s + %{x:.3f} s<extra>" + f"{model}</extra>",
            ), row=row, col=1)
            if bars:
                shown.add(model)
        fig.update_yaxes(title_text="GPU", tickmode="array", tickvals=list(range(gpus)),
                         range=[gpus - 0.5, -0.5], row=row, col=1)
        if r.gantt_truncated:
            fig.add_annotation(text="bars truncated", showarrow=False, xref="x domain",
                               yref="y domain", x=1, y=1.02, row=row, col=1)
    fig.update_xaxes(range=[lo, hi])
    fig.update_xaxes(title_text="virtual time (s)", row=len(names), col=1)
    fig.update_layout(
        title="GPU pool schedule per policy (large model needs all GPUs at once)",
        barmode="overlay", bargap=0.15, height=260 * len(names) + 120,
        legend_title_text="batch of", template="plotly_white", font=FONT)
    return fig
