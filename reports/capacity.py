"""The `capacity` view (Part 2): the formula beside the simulated fleets, terminal and HTML.

Reads only the typed result (``harness.results.capacity.CapacityResult``), never runs a
simulation, so a saved plan renders again with ``harness report FILE``. The terminal
view fits 80 columns; charts carry units on every axis (GPUs, requests/s, batch size
in requests, latency in ms; utilization, fill and load in percent).
"""

from __future__ import annotations

import html as _html
import math

import plotly.graph_objects as go
from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harness.results.capacity import CapacityResult, Loss
from reports.charts import NEVER, layout, make_subplots
from reports.fmt import fmt_gpus, fmt_measured, fmt_ms, fmt_pct
from reports.page import Section

__all__ = ["title", "render", "sections", "format_measured", "by_b_figure", "curve_figure", "fill_figure",
           "per_gpu_figure"]

P50, P99, FILL, SLO = "#3182bd", "#e6550d", "#31a354", "#555555"


def title(result: CapacityResult) -> str:
    return "Part 2: how many GPUs (capacity plan)"


def format_measured(row: Loss) -> str:
    """A loss's measured value in its unit: shares as %, seconds as ms, ratios as 'x'."""
    return fmt_measured(row.measured, row.unit)[0]


def _unit_rest(row: Loss) -> str:
    """The loss's unit label without the unit word its value already shows."""
    return fmt_measured(row.measured, row.unit)[1]


def _table(heading: str) -> Table:
    return Table(title=heading, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))


def render(result: CapacityResult, console: Console) -> None:
    """Print the sizing steps, the formula over B, the losses, the curves and offline."""
    r, inp = result, result.inputs
    console.print(
        f"[bold]Capacity plan[/]: {inp.qps:,.0f} QPS, B={inp.batch_size}, t(B) = "
        f"{inp.batch_time_s * 1000:.0f} ms ({inp.cost_model}), p99 target "
        f"{inp.slo_p99_s * 1000:.0f} ms{', quick' if inp.quick else ''}", highlight=False)
    steps = _table("From the formula to the fleet to buy")
    steps.add_column("step", no_wrap=True)
    steps.add_column("GPUs", justify="right")
    steps.add_column("+", justify="right")
    steps.add_column("why", overflow="fold")
    for s in r.breakdown:
        steps.add_row(s.step, fmt_gpus(s.gpus), "" if s.delta is None else f"{s.delta:+g}", s.why)
    console.print(steps)
    console.print(f"rounding: {r.rounding}", highlight=False)

    by_b = _table("The formula over B: GPUs = QPS x t(B) / B")
    for name in ("B", "t(B) ms", "theoretical", "GPUs", "req/s per GPU"):
        by_b.add_column(name, justify="right")
    for row in r.table_by_b:
        by_b.add_row(str(row.b), f"{row.batch_time_s * 1000:.1f}", f"{row.theoretical_gpus:.2f}",
                     str(row.formula_gpus), f"{row.per_gpu_rps:,.0f}")
    console.print(by_b)

    if r.losses:
        # One line per source, its explanation indented below at full width: a three-column
        # table would wrap every explanation into a narrow column nine lines tall.
        console.print(f"[italic]Where realtime throughput goes (measured on {r.realtime_gpus} GPUs)[/]")
        for loss in r.losses:
            head = Table.grid(padding=(0, 1))
            head.add_column(width=28, overflow="fold")
            head.add_column(width=7, justify="right", no_wrap=True)
            head.add_column(overflow="fold")
            head.add_row(f"[bold]{loss.source}[/]", f"[bold]{format_measured(loss)}[/]", _unit_rest(loss))
            console.print(Padding(head, (0, 0, 0, 1)))
            console.print(Padding(Text(loss.explanation, style="dim"), (0, 0, 0, 3)))
        console.print()

    if r.curve:
        curve = _table(f"Latency vs utilization at {inp.qps:,.0f} QPS (ms)")
        for name in ("GPUs", "offered", "busy", "p50", "p99", "fill", "SLO"):
            curve.add_column(name, justify="right")
        for p in r.curve:
            ok = "[green]yes[/]" if p.meets_slo and p.stable else (
                "[yellow]unstable[/]" if not p.stable else "[red]no[/]")
            curve.add_row(str(p.gpus), fmt_pct(p.offered_utilization, 1), fmt_pct(p.utilization, 0),
                          fmt_ms(p.p50_s), fmt_ms(p.p99_s), fmt_pct(p.batch_fill, 0), ok)
        console.print(curve)
        console.print("offered = QPS x t(B) / (B x GPUs); at 100% or more a queue grows without "
                      "bound however short runs look", style="dim", highlight=False)

    if r.fill_vs_load:
        fill = _table(f"Batch fill vs load on {r.realtime_gpus} GPUs")
        for name in ("load", "QPS", "fill", "p50 ms", "p99 ms", "GPU ms/req"):
            fill.add_column(name, justify="right")
        for fp in r.fill_vs_load:
            per = fp.gpu_s_per_request
            fill.add_row(fmt_pct(fp.load_fraction, 0), f"{fp.rate_rps:,.0f}", fmt_pct(fp.batch_fill, 0),
                         fmt_ms(fp.p50_s), fmt_ms(fp.p99_s), "-" if per is None else f"{per * 1000:.2f}")
        console.print(fill)

    off = r.offline
    console.print(
        f"[bold]Offline[/]: a backlog of {off.requests:,} requests on {off.gpus} GPUs, full "
        f"batches: {off.throughput_rps:,.0f} req/s in {off.makespan_s:.2f} s = "
        f"[bold]{fmt_pct(off.efficiency, 1)}[/] of the formula's {off.formula_rps:,.0f} req/s "
        f"(fill {fmt_pct(off.batch_fill, 0)}, busy {fmt_pct(off.utilization, 0)})", highlight=False)
    rt, head_gpus = r.realtime_gpus, r.realtime_with_headroom_gpus
    if rt is not None:
        console.print(
            f"[bold]Answer[/]: the formula says {fmt_gpus(r.theoretical_gpus)} "
            f"({r.formula_gpus} whole GPUs); realtime at peak needs {rt} "
            f"({inp.qps / rt:,.0f} req/s per GPU against {inp.batch_size / inp.batch_time_s:,.0f} "
            f"in a full batch); buy {fmt_gpus(head_gpus)} for {inp.headroom_factor:g}x peak "
            f"and N+1. Offline work needs only the formula's fleet.", highlight=False)
    for note in r.notes:
        console.print(f"note: {note}", style="dim", highlight=False)


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


def by_b_figure(result: CapacityResult) -> go.Figure:
    """GPUs the formula needs against B (log-log), unrounded and rounded up."""
    rows, buy = result.table_by_b, result.realtime_with_headroom_gpus
    b = [r.b for r in rows]
    fig = go.Figure([
        go.Scatter(x=b, y=[r.theoretical_gpus for r in rows], mode="lines+markers", name="QPS x t(B) / B",
                   hovertemplate="B=%{x}: %{y:.2f} GPUs<extra></extra>"),
        go.Scatter(x=b, y=[r.formula_gpus for r in rows], mode="markers", name="rounded up (whole GPUs)",
                   marker=dict(symbol="square-open", size=10), hovertemplate="B=%{x}: %{y} GPUs<extra></extra>"),
    ])
    if buy:
        fig.add_hline(y=buy, line_dash="dot", line_color=P99,
                      annotation_text=f"fleet to buy at B={result.inputs.batch_size} ({buy})")
    ys = [r.theoretical_gpus for r in rows] + [buy or 1]
    fig.update_xaxes(type="log", title_text="batch size B (requests)", tickvals=b)
    # An explicit range: a horizontal line on a log axis otherwise drags autorange far off.
    fig.update_yaxes(type="log", title_text="GPUs", range=[math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.5)])
    return layout(fig, f"The formula over B at {result.inputs.qps:,.0f} QPS")


def curve_figure(result: CapacityResult) -> go.Figure:
    """p50 and p99 (ms) against offered utilization (%) at peak, one point per fleet size;
    a p99 never reached is drawn as a red x at the top; unstable fleets are hollow."""
    rows = result.curve
    slo_ms = result.inputs.slo_p99_s * 1000
    x = [100 * r.offered_utilization for r in rows]
    top = max([v for r in rows for v in (_ms(r.p99_s),) if v is not None] + [slo_ms]) * 1.15
    labels = [f"{r.gpus} GPUs" + ("" if r.stable else " (at/over 100%: unstable)") for r in rows]
    fig = go.Figure()
    for values, name, color in (([_ms(r.p50_s) for r in rows], "p50", P50), ([_ms(r.p99_s) for r in rows], "p99", P99)):
        fig.add_trace(go.Scatter(
            x=x, y=values, mode="lines+markers", name=name, line_color=color,
            text=labels, marker=dict(symbol=["circle" if r.stable else "circle-open" for r in rows], size=9),
            hovertemplate="%{text}<br>offered %{x:.1f}%<br>" + name + " %{y:.0f} ms<extra></extra>"))
    never = [(xi, lab) for xi, lab, r in zip(x, labels, rows) if r.p99_s is None]
    if never:
        fig.add_trace(go.Scatter(x=[n[0] for n in never], y=[top] * len(never), mode="markers", name="p99 never",
                                 marker=dict(symbol="x", size=12, color=NEVER), text=[n[1] for n in never],
                                 hovertemplate="%{text}: p99 never (over 1% unanswered)<extra></extra>"))
    fig.add_hline(y=slo_ms, line_dash="dash", line_color=SLO, annotation_text=f"SLO p99 {slo_ms:.0f} ms")
    fig.add_vline(x=100, line_dash="dot", line_color=NEVER, annotation_text="capacity = load",
                  annotation_position="bottom left")
    fig.update_xaxes(title_text="offered utilization: QPS x t(B) / (B x GPUs) (%)")
    fig.update_yaxes(title_text="latency (ms)", rangemode="tozero", range=[0, top * 1.05])
    return layout(fig, f"Latency vs utilization at {result.inputs.qps:,.0f} QPS (fleet size varies)")


def fill_figure(result: CapacityResult) -> go.Figure:
    """Batch fill (%) and p99 (ms) against load (% of peak, log) on the realtime fleet."""
    rows = result.fill_vs_load
    x = [100 * r.load_fraction for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[100 * r.batch_fill for r in rows], mode="lines+markers",
                             name="batch fill", line_color=FILL,
                             hovertemplate="%{x:g}% of peak: fill %{y:.0f}%<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[_ms(r.p99_s) for r in rows], mode="lines+markers", name="p99",
                             line_color=P99, hovertemplate="%{x:g}% of peak: p99 %{y:.0f} ms<extra></extra>"),
                  secondary_y=True)
    slo_ms = result.inputs.slo_p99_s * 1000
    fig.add_hline(y=slo_ms, line_dash="dash", line_color=SLO, secondary_y=True, annotation_text=f"SLO {slo_ms:.0f} ms")
    fig.update_xaxes(type="log", title_text="load (% of peak QPS, log scale)")
    fig.update_yaxes(title_text="mean batch fill (% of B)", range=[0, 105], secondary_y=False)
    top = max([v for v in (_ms(r.p99_s) for r in rows) if v is not None] + [slo_ms]) * 1.15
    fig.update_yaxes(title_text="p99 latency (ms)", range=[0, top], secondary_y=True)
    return layout(fig, f"Batch fill vs load on {result.realtime_gpus} GPUs")


def per_gpu_figure(result: CapacityResult) -> go.Figure:
    """Requests/s each GPU serves: the formula, realtime fleets, and the offline backlog."""
    inp, off = result.inputs, result.offline
    bars = [("formula: B / t(B)", inp.batch_size / inp.batch_time_s)]
    if result.realtime_gpus:
        bars.append((f"realtime at peak ({result.realtime_gpus} GPUs)", inp.qps / result.realtime_gpus))
    if result.realtime_with_headroom_gpus:
        bars.append((f"with headroom + N+1 ({result.realtime_with_headroom_gpus} GPUs)",
                     inp.qps / result.realtime_with_headroom_gpus))
    bars.append((f"offline backlog ({off.gpus} GPUs)", off.throughput_rps / off.gpus))
    fig = go.Figure(go.Bar(x=[b[0] for b in bars], y=[b[1] for b in bars],
                           marker_color=["#999999", P99, "#fdae6b", FILL][:len(bars)],
                           text=[f"{b[1]:,.0f}" for b in bars], textposition="outside",
                           hovertemplate="%{x}: %{y:,.1f} req/s per GPU<extra></extra>"))
    fig.update_yaxes(title_text="requests/s per GPU", rangemode="tozero")
    fig.update_xaxes(title_text="how the fleet is run")
    return layout(fig, "Throughput per GPU: realtime pays for latency, offline reaches the formula", 400)


def _html_table(head: list[str], rows: list[list[str]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns are left-aligned. Cells are escaped."""
    def cells(tag: str, vals: list[str]) -> str:
        cls = [' class="l"' if i < left else "" for i in range(len(vals))]
        return "".join(f"<{tag}{c}>{_html.escape(v)}</{tag}>" for c, v in zip(cls, vals))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return f'<table class="data"><tr>{cells("th", head)}</tr>{body}</table>'


def sections(result: CapacityResult) -> list[Section]:
    inp = result.inputs
    steps = [[s.step, "-" if s.gpus is None else f"{s.gpus:g}", "" if s.delta is None else f"{s.delta:+g}", s.why]
             for s in result.breakdown]
    out = [Section(
        "Sizing: from the formula to the fleet to buy",
        html=_html_table(["step", "GPUs", "change", "why"], steps, left=1),
        note=(f"{inp.qps:,.0f} QPS, B={inp.batch_size}, t(B) = {inp.batch_time_s * 1000:.0f} ms "
              f"({inp.cost_model} cost), p99 target {inp.slo_p99_s * 1000:.0f} ms. {result.rounding}.")),
        Section("The formula over B", figure=by_b_figure(result),
                note="GPUs = QPS x t(B) / B: halving the batch doubles the fleet under a constant batch "
                     "time. Only full batches and never-idle GPUs reach it.")]
    if result.curve:
        out.append(Section("Latency vs utilization", figure=curve_figure(result),
                           note="Each point is one seeded run of the hardened target at peak with a different "
                                "fleet. Fleets at or past 100% are unstable whatever a short run shows."))
    if result.fill_vs_load:
        out.append(Section("Batch fill vs load", figure=fill_figure(result),
                           note="At low load the SLO's max-wait timer dispatches partial batches: each "
                                "GPU-second then serves fewer requests than the formula assumes."))
    if result.losses:
        rows = [[r.source, format_measured(r), _unit_rest(r), r.explanation] for r in result.losses]
        out.append(Section("Where realtime throughput goes (measured)",
                           html=_html_table(["source", "measured", "unit", "what the runs showed"], rows, left=1),
                           note="Each source isolated by targeted sim runs that change one thing."))
    out.append(Section("Realtime vs offline", figure=per_gpu_figure(result),
                       note=f"A backlog of {result.offline.requests:,} requests in full batches reaches "
                            f"{fmt_pct(result.offline.efficiency, 1)} of the formula's throughput: no latency "
                            "target, so every batch is full and no GPU waits."))
    return out
