"""HTML sections for a pool document (``kind: "pool"``, from ``harness.cli.pool``).

The capacity condition and verdicts, a per-policy comparison chart (p99 per model
against the target; utilization and idle fragmentation), the GPU Gantt chart per
policy (``reports.gantt``) and the full metric table. Reads only the document.
"""

from __future__ import annotations

import html as _html
from typing import Any, Mapping

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.gantt import MODEL_COLORS, gantt_figure
from reports.page import Section
from reports.pool_console import METRIC_ROWS, capacity_line, plain, verdict_lines

__all__ = ["sections", "comparison_figure"]

FONT = dict(family="system-ui, Segoe UI, Roboto, Helvetica, Arial, sans-serif", size=13)
NEVER = "#3a0a0a"  # a p99 never reached: near-black red, to the top of the axis


def comparison_figure(doc: Mapping[str, Any]) -> go.Figure:
    """Left: each model's p99 (s) per policy against the target; a p99 that lands on an
    unanswered request is a near-black bar to the top, labelled 'never'. Right: GPU
    utilization and GPU time idle while a large batch waited for every GPU (%)."""
    results = doc["results"]
    names = list(results)
    slo = doc["config"]["slo_s"]
    finite = [r[m]["p99_s"] for r in results.values() for m in ("large", "small") if r[m]["p99_s"] is not None]
    top = max(finite + [slo]) * 1.1
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.12,
                        subplot_titles=("p99 latency per model", "GPU time"))
    for model in ("large", "small"):
        p99 = [results[n][model]["p99_s"] for n in names]
        # No hatch pattern: with per-bar colours plotly.js warns about it; a dark bar to the top says it.
        fig.add_trace(go.Bar(
            x=names, y=[top if v is None else v for v in p99], name=f"{model} model p99",
            marker_color=[NEVER if v is None else MODEL_COLORS[model] for v in p99],
            text=["never" if v is None else f"{v:.2f}" for v in p99], textposition="outside",
            hovertemplate="%{x}: " + model + " p99 %{text} s<extra></extra>"), row=1, col=1)
    fig.add_hline(y=slo, line_dash="dash", line_color="#555", row=1, col=1, annotation_text=f"target {slo:g} s")
    for key, label, color in (("utilization", "GPU utilization", "#31a354"),
                              ("fragmentation_frac", "idle while large waits", "#756bb1")):
        fig.add_trace(go.Bar(x=names, y=[100 * results[n][key] for n in names], name=label, marker_color=color,
                             hovertemplate="%{x}: " + label + " %{y:.0f}%<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title_text="p99 latency (s)", range=[0, top * 1.15], row=1, col=1)
    fig.update_yaxes(title_text="share of pool GPU time (%)", range=[0, 105], row=1, col=2)
    fig.update_xaxes(title_text="scheduling policy", row=1, col=1)
    fig.update_xaxes(title_text="scheduling policy", row=1, col=2)
    fig.update_layout(title="Policies on the same arrivals", barmode="group", template="plotly_white",
                      font=FONT, height=460, margin=dict(l=70, r=30, t=70, b=60),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def _metric_table(doc: Mapping[str, Any]) -> str:
    results = doc["results"]
    head = "".join(f"<th>{_html.escape(n)}</th>" for n in results)
    rows = []
    for label, cell in METRIC_ROWS:
        tds = "".join(f"<td>{_html.escape(plain(cell(r)))}</td>" for r in results.values())
        rows.append(f'<tr><td class="l">{_html.escape(label)}</td>{tds}</tr>')
    return f'<table class="data"><tr><th class="l">metric</th>{head}</tr>{"".join(rows)}</table>'


def sections(doc: dict[str, Any]) -> list[Section]:
    cfg, cap = doc["config"], doc["capacity"]
    lg, sm = cfg["large"], cfg["small"]
    verdict = [plain(v) for v in verdict_lines(doc)] if doc["results"] else []
    skipped = [f"{n} not run: {why}" for n, why in (doc.get("skipped") or {}).items()]
    lines = [plain(capacity_line(doc))] + verdict + skipped
    out = [Section(
        "Two models on one pool: the capacity condition",
        html="<ul>" + "".join(f"<li>{_html.escape(s)}</li>" for s in lines) + "</ul>",
        note=(f"{cfg['gpus']} GPUs. Large model: {lg['rate_rps']:g} req/s, B={lg['batch_size']}, "
              f"{lg['batch_time_s']:g} s per batch on all {cfg['gpus']} GPUs "
              f"({cap['large_gpu_s_per_s']:.2f} GPU-s/s). Small model: {sm['rate_rps']:g} req/s, "
              f"B={sm['batch_size']}, {sm['batch_time_s']:g} s on one GPU ({cap['small_gpu_s_per_s']:.2f} "
              f"GPU-s/s). Target p99 {cfg['slo_s']:g} s for both; {cfg['duration_s']:g} s simulated, "
              f"seed {cfg['seed']}."))]
    if not doc["results"]:
        return out
    out.append(Section("Per-policy comparison", figure=comparison_figure(doc),
                       note="Same arrivals for every policy. A bar marked 'never' means over 1% of that "
                            "model's requests were still unanswered when the simulation stopped."))
    gantt = gantt_figure(doc["results"])
    gantt.update_layout(font=FONT)
    lo, hi = next(iter(doc["results"].values()))["gantt_window_s"]
    out.append(Section("GPU pool schedule per policy (Gantt)", figure=gantt,
                       note=f"Every GPU from {lo:g} s to {hi:g} s of virtual time. Large batches (red) span all "
                            "GPUs at once; small batches (blue) one GPU. Gaps are idle GPUs: under the "
                            "doc's proposal they sit idle while the large model waits for all of them."))
    out.append(Section("All metrics", html=_metric_table(doc)))
    return out
