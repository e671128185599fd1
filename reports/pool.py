"""The `pool` view (Part 3): two models on one GPU pool, policy by policy, terminal and HTML.

Reads only the typed result (``harness.results.pool.PoolResult``); the verdicts are
data decided in the library (``PolicyVerdict``), worded here. Fits 80 columns with
the four registered policies: metrics are rows, policies are columns.
"""

from __future__ import annotations

import html as _html
from typing import Callable

import plotly.graph_objects as go
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.results.pool import PolicyRun, PoolResult, VerdictReason
from reports.charts import FONT, NEVER, make_subplots
from reports.fmt import fmt_pct, plain_s
from reports.gantt import MODEL_COLORS, gantt_figure
from reports.page import Section

__all__ = ["title", "render", "sections", "capacity_line", "verdict_lines", "comparison_figure", "METRIC_ROWS"]

Row = tuple[str, Callable[[PolicyRun], str]]


def _per_model(model: str) -> list[Row]:
    def fill(r: PolicyRun) -> str:
        m = r.model(model)
        return "-" if m.mean_batch_size is None else fmt_pct(m.mean_batch_size / r.config.model(model).batch_size, 0)

    return [
        (f"{model} p50 (s)", lambda r: plain_s(r.model(model).p50_s)),
        (f"{model} p99 (s)", lambda r: plain_s(r.model(model).p99_s)),
        (f"{model} within SLO", lambda r: fmt_pct(r.model(model).slo_attainment, 0)),
        (f"{model} max wait (s)", lambda r: plain_s(r.model(model).longest_wait_s)),
        (f"{model} batch fill", fill),
        (f"{model} GPU-s/req", lambda r: "-" if r.model(model).gpu_s_per_request_measured is None
            else f"{r.model(model).gpu_s_per_request_measured:.4f}"),
    ]


METRIC_ROWS: list[Row] = _per_model("large") + _per_model("small") + [
    ("GPU utilization", lambda r: fmt_pct(r.utilization, 0)),
    ("idle, large waits", lambda r: fmt_pct(r.fragmentation_frac, 0)),
    ("meets SLO", lambda r: "[green]yes[/]" if r.meets_slo else "[red]no[/]"),
]


def title(result: PoolResult) -> str:
    return "Part 3: two models on one GPU pool"


def _plain(markup: str) -> str:
    return Text.from_markup(markup).plain


def capacity_line(result: PoolResult) -> str:
    """The capacity condition with its numbers, e.g. '... = 5.12 <= 6.40 GPU-s/s: pass' (rich markup)."""
    cfg, cap = result.config, result.capacity
    lg, sm = cfg.large, cfg.small
    sign, verdict = ("<=", "[green]pass[/]") if cap.ok else (">", "[red]FAIL[/]")
    return (f"capacity: {lg.rate_rps:g}x{cfg.gpus}x{lg.batch_time_s:g}/{lg.batch_size}"
            f" + {sm.rate_rps:g}x{sm.batch_time_s:g}/{sm.batch_size}"
            f" = {cap.large_gpu_s_per_s:.2f} + {cap.small_gpu_s_per_s:.2f}"
            f" = {cap.lhs_gpu_s_per_s:.2f} {sign} {cfg.gpus}x{cfg.target_utilization:g}"
            f" = {cap.rhs_gpu_s_per_s:.2f} GPU-s/s: {verdict}"
            f" ({fmt_pct(cap.utilization_needed, 0)} busy with full batches)")


def verdict_lines(result: PoolResult) -> list[str]:
    """The typed verdicts in words (rich markup): the capacity reason when it fails,
    else each failing policy's symptom."""
    cap, results = result.capacity, result.results
    passing = [n for n, r in results.items() if r.meets_slo]
    if not cap.ok:
        if not passing:
            return [f"[red]every policy fails[/]: {cap.reason}"]
        return [f"capacity condition fails, yet {', '.join(passing)} met the SLO in this run: {cap.reason}"]
    lines = []
    for name, r in results.items():
        v = r.verdict
        if r.meets_slo:
            continue
        if v is None:  # a file written before verdicts were data
            lines.append(f"{name} [red]fails[/] the {result.config.slo_s:g} s target")
        elif v.reason is VerdictReason.STARVES:
            lines.append(f"{name} [red]fails[/] although capacity suffices: the {v.starving} model starves "
                         f"(longest wait {plain_s(v.longest_wait_s)} s) while {fmt_pct(v.idle_share, 0)} of "
                         f"GPU time sits idle waiting for all {result.config.gpus} GPUs at once")
        else:
            lines.append(f"{name} [red]fails[/]: p99 above the {result.config.slo_s:g} s target for "
                         f"{' and '.join(v.late)}")
    return lines


def _gpu_s(result: PoolResult, model: str) -> float:
    m = result.config.model(model)
    return (result.config.gpus if model == "large" else 1) * m.batch_time_s / m.batch_size


def render(result: PoolResult, console: Console) -> None:
    """Print the policies side by side, the capacity condition and why policies fail."""
    cfg = result.config
    if result.results:
        table = Table(title=f"{cfg.gpus}-GPU pool, SLO {cfg.slo_s:g} s, {cfg.duration_s:g} s "
                            f"simulated, seed {cfg.seed}", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
        table.add_column("metric", no_wrap=True)
        for name in result.results:
            table.add_column(name, justify="right", no_wrap=True)
        for label, cell in METRIC_ROWS:
            table.add_row(label, *(cell(r) for r in result.results.values()))
        console.print(table)
    lg, sm = cfg.large, cfg.small
    console.print(
        f"GPU-time per request (full batch): large {cfg.gpus}x{lg.batch_time_s:g}/{lg.batch_size} = "
        f"{_gpu_s(result, 'large'):.4f} GPU-s, small {sm.batch_time_s:g}/{sm.batch_size} = "
        f"{_gpu_s(result, 'small'):.4f} GPU-s ({_gpu_s(result, 'large') / _gpu_s(result, 'small'):.0f}x)")
    console.print(capacity_line(result))
    for line in verdict_lines(result):
        console.print(line)
    for name, why in result.skipped.items():
        console.print(f"[yellow]{name} not run[/]: {why}", highlight=False)


def comparison_figure(result: PoolResult) -> go.Figure:
    """Left: each model's p99 (s) per policy against the target; a p99 that lands on an
    unanswered request is a dark red bar to the top, labelled 'never'. Right: GPU
    utilization and GPU time idle while a large batch waited for every GPU (%)."""
    results = result.results
    names = list(results)
    slo = result.config.slo_s
    finite = [r.model(m).p99_s for r in results.values() for m in ("large", "small")]
    top = max([v for v in finite if v is not None] + [slo]) * 1.1
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.12,
                        subplot_titles=("p99 latency per model", "GPU time"))
    for model in ("large", "small"):
        p99 = [results[n].model(model).p99_s for n in names]
        # No hatch pattern: with per-bar colours plotly.js warns about it; a dark bar to the top says it.
        fig.add_trace(go.Bar(
            x=names, y=[top if v is None else v for v in p99], name=f"{model} model p99",
            marker_color=[NEVER if v is None else MODEL_COLORS[model] for v in p99],
            text=["never" if v is None else f"{v:.2f}" for v in p99], textposition="outside",
            hovertemplate="%{x}: " + model + " p99 %{text} s<extra></extra>"), row=1, col=1)
    fig.add_hline(y=slo, line_dash="dash", line_color="#555", row=1, col=1, annotation_text=f"target {slo:g} s")
    for values, label, color in (([results[n].utilization for n in names], "GPU utilization", "#31a354"),
                                 ([results[n].fragmentation_frac for n in names], "idle while large waits",
                                  "#756bb1")):
        fig.add_trace(go.Bar(x=names, y=[100 * v for v in values], name=label, marker_color=color,
                             hovertemplate="%{x}: " + label + " %{y:.0f}%<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title_text="p99 latency (s)", range=[0, top * 1.15], row=1, col=1)
    fig.update_yaxes(title_text="share of pool GPU time (%)", range=[0, 105], row=1, col=2)
    fig.update_xaxes(title_text="scheduling policy", row=1, col=1)
    fig.update_xaxes(title_text="scheduling policy", row=1, col=2)
    fig.update_layout(title="Policies on the same arrivals", barmode="group", template="plotly_white",
                      font=FONT, height=460, margin=dict(l=70, r=30, t=70, b=60),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def _metric_table(result: PoolResult) -> str:
    head = "".join(f"<th>{_html.escape(n)}</th>" for n in result.results)
    rows = []
    for label, cell in METRIC_ROWS:
        tds = "".join(f"<td>{_html.escape(_plain(cell(r)))}</td>" for r in result.results.values())
        rows.append(f'<tr><td class="l">{_html.escape(label)}</td>{tds}</tr>')
    return f'<table class="data"><tr><th class="l">metric</th>{head}</tr>{"".join(rows)}</table>'


def sections(result: PoolResult) -> list[Section]:
    cfg, cap = result.config, result.capacity
    lg, sm = cfg.large, cfg.small
    skipped = [f"{n} not run: {why}" for n, why in result.skipped.items()]
    lines = [_plain(capacity_line(result))] + [_plain(v) for v in verdict_lines(result)] + skipped
    out = [Section(
        "Two models on one pool: the capacity condition",
        html="<ul>" + "".join(f"<li>{_html.escape(s)}</li>" for s in lines) + "</ul>",
        note=(f"{cfg.gpus} GPUs. Large model: {lg.rate_rps:g} req/s, B={lg.batch_size}, "
              f"{lg.batch_time_s:g} s per batch on all {cfg.gpus} GPUs ({cap.large_gpu_s_per_s:.2f} GPU-s/s). "
              f"Small model: {sm.rate_rps:g} req/s, B={sm.batch_size}, {sm.batch_time_s:g} s on one GPU "
              f"({cap.small_gpu_s_per_s:.2f} GPU-s/s). Target p99 {cfg.slo_s:g} s for both; "
              f"{cfg.duration_s:g} s simulated, seed {cfg.seed}."))]
    if not result.results:
        return out
    out.append(Section("Per-policy comparison", figure=comparison_figure(result),
                       note="Same arrivals for every policy. A bar marked 'never' means over 1% of that "
                            "model's requests were still unanswered when the simulation stopped."))
    lo, hi = next(iter(result.results.values())).gantt_window_s
    out.append(Section("GPU pool schedule per policy (Gantt)", figure=gantt_figure(result.results),
                       note=f"Every GPU from {lo:g} s to {hi:g} s of virtual time. Large batches (red) span all "
                            "GPUs at once; small batches (blue) one GPU. Gaps are idle GPUs: under the "
                            "doc's proposal they sit idle while the large model waits for all of them."))
    out.append(Section("All metrics", html=_metric_table(result)))
    return out
