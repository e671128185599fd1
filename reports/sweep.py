"""The sweep view: goodput and p99 against offered rate, with the knee marked.

Reads only `harness.results.sweep.SweepResult`. Steps are listed in rate order
(the curve), the knee (the highest rate within the SLO) marked in both the table
and the chart; a step that stopped early says at what second; an invalid step's
re-runs are marked with their try (#2, #3). A sweep of N repeats adds the knee's
median, min, max and spread, and each repeat's knee.
"""

from __future__ import annotations

import plotly.graph_objects as go
from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.sweep import SweepResult, SweepStep
from reports.charts import layout
from reports.fmt import fmt_ms, fmt_pct
from reports.page import Section

__all__ = ["render", "sections", "spread_line", "step_row", "title"]

_HEAD = ("offered", "goodput", "in SLO", "p99", "p99 ok", "shed", "t/o", "lag p99", "ran s", "")
_LAG = _HEAD.index("lag p99")


def title(result: SweepResult) -> str:
    best, spread = result.max_rate_within_slo, result.knee_spread
    if best is None:
        knee = "no valid knee found" if result.inconclusive else "no rate met the SLO"
    elif spread is not None:
        knee = f"max {best:,.0f} req/s within the SLO (median of {spread.repeats})"
    else:
        knee = f"max {best:,.0f} req/s within the SLO"
    return f"Sweep of {result.target} ({result.mode}): {knee}"


def spread_line(result: SweepResult) -> str | None:
    """The knee over repeated searches, as one line (None: one search)."""
    k = result.knee_spread
    if k is None:
        return None
    knees = ", ".join("none" if x is None else f"{x:,.0f}" for x in k.knees_rps)
    if k.median_rps is None or k.min_rps is None or k.max_rps is None or k.spread_pct is None:
        return f"knee over {k.repeats} repeats: none found ({knees})"
    missing = "" if k.found == k.repeats else f"; {k.repeats - k.found} found none"
    return (f"knee over {k.repeats} repeats: median {k.median_rps:,.0f}, min {k.min_rps:,.0f}, "
            f"max {k.max_rps:,.0f} req/s, spread {k.spread_pct:.1f}% ({knees}){missing}")


def step_row(step: SweepStep, knee: SweepStep | None) -> tuple[str, ...]:
    ran = f"{step.ran_s:.1f}" + ("" if not step.stopped_early else f"/{step.duration_s:g}")
    verdict = "KNEE" if step is knee else ("pass" if step.passed else "fail" if step.valid else "invalid")
    if step.try_no > 1:
        verdict += f" #{step.try_no}"
    return (f"{step.rate_rps:,.0f}", f"{step.goodput_rps:,.0f}", fmt_pct(step.goodput_ratio), fmt_ms(step.p99_s),
            fmt_ms(step.p99_ok_s), f"{step.shed:,}", f"{step.timed_out:,}",
            "-" if step.send_lag_p99_s is None else fmt_ms(step.send_lag_p99_s), ran,
            verdict)


def render(result: SweepResult, console: Console) -> None:
    console.print(f"[bold]{title(result)}[/]")
    # The driver's send lag is measured live only: a sim sweep leaves the column out, which
    # keeps a 10,000 req/s sweep inside 80 columns with the verdict whole.
    lag = any(s.send_lag_p99_s is not None for s in result.steps)
    keep = [i for i in range(len(_HEAD)) if lag or i != _LAG]
    t = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False)
    for i in keep:
        t.add_column(_HEAD[i], justify="right", no_wrap=True)
    knee = result.knee
    for s in sorted(result.steps, key=lambda s: s.rate_rps):
        row = step_row(s, knee)
        t.add_row(*(row[i] for i in keep), style="bold green" if s is knee else None)
    console.print(t)
    fail = result.first_failing_rate
    console.print("offered and goodput in req/s; p99 in ms; t/o: timed out; "
                  + ("lag p99: the driver's send lag; " if lag else "") + "KNEE: the highest rate that passed. "
                  f"SLO: {result.min_goodput_ratio:.0%} of requests within {result.slo_s * 1000:,.0f} ms; "
                  f"search to {result.rel_tol:.0%}; {_step_count(result)} in {result.wall_s:,.0f} s"
                  + (f"; first failing rate {fail:,.0f} req/s" if fail else ""), highlight=False)
    for s in result.steps:
        if s.passed is False and not s.valid:
            console.print(f"  {s.rate_rps:,.0f} req/s invalid (try {s.try_no}): {'; '.join(s.invalid_reasons)}",
                          highlight=False)
    spread = spread_line(result)
    if spread is not None:
        console.print(spread + "; the table is the median repeat's", highlight=False)
        for r in result.repeats:
            tries = sum(1 for s in r.steps if s.try_no > 1)
            at = "none" if r.max_rate_within_slo is None else f"{r.max_rate_within_slo:,.0f} req/s"
            console.print(f"  repeat {r.repeat}: knee {at}, {len(r.steps)} steps ({tries} re-runs), "
                          f"{r.wall_s:,.0f} s" + (f"; {r.inconclusive}" if r.inconclusive else ""), highlight=False)
    if result.inconclusive:
        console.print(f"[bold red]no knee found[/]: {result.inconclusive}", highlight=False)
    cap = result.capacity_check
    if cap is not None:
        console.print(f"capacity at {cap.qps:,.0f} QPS buys {cap.capacity_gpus} GPUs; this target has "
                      f"{cap.target_gpus}: {'agrees' if cap.agrees else 'DISAGREES'} (within 10%)", highlight=False)
    for n in result.notes:
        console.print(f"note: {n}", highlight=False)


def _chart(result: SweepResult) -> go.Figure:
    steps = sorted(result.steps, key=lambda s: s.rate_rps)
    x = [s.rate_rps for s in steps]
    fig = go.Figure()
    fig.add_scatter(x=x, y=[s.goodput_rps for s in steps], name="goodput (req/s)", mode="lines+markers")
    fig.add_scatter(x=x, y=[None if s.p99_ok_s is None else s.p99_ok_s * 1000 for s in steps],
                    name="p99 of OK answers (ms)", mode="lines+markers", yaxis="y2")
    if result.max_rate_within_slo is not None:
        fig.add_vline(x=result.max_rate_within_slo, line_dash="dash", annotation_text="knee")
    fig.update_layout(xaxis_title="offered (req/s)", yaxis_title="goodput (req/s)",
                      yaxis2={"title": "p99 (ms)", "overlaying": "y", "side": "right"})
    return layout(fig, "Goodput and p99 against offered load")


def sections(result: SweepResult) -> list[Section]:
    return [Section("Goodput and p99 against offered load", figure=_chart(result),
                    note="the knee is the highest offered rate whose requests met the SLO")]


def _step_count(result) -> str:
    """The footer's step count: this search's, and with --repeats every repeat's together (the
    table shows the median repeat's steps only)."""
    if not result.repeats:
        return f"{len(result.steps)} steps"
    total = sum(len(r.steps) for r in result.repeats)
    return f"{len(result.steps)} steps shown, {total} over {len(result.repeats)} repeats"
