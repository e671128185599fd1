"""The traffic parts of the `llm` URL view: load mode, data set, TTFT per turn, slots, a concurrency sweep,
in the terminal and, the same tables, in the HTML page (`traffic_sections`).

Reads only `harness.results.llm_traffic` (through the run and result that carry it).
"""

from __future__ import annotations

import html as _html
from typing import Any

import plotly.graph_objects as go
from rich import box
from rich.table import Table

from harness.results.llm_traffic import ConcurrencySweep, TrafficFigures
from reports.charts import SIDE_COLORS, layout, make_subplots
from reports.fmt import fmt_ms, fmt_n
from reports.page import Section

__all__ = ["concurrency_figure", "concurrency_table", "table_html", "traffic_line", "traffic_sections", "turn_table"]


def traffic_line(t: TrafficFigures) -> str:
    source = f"data set {t.dataset} ({t.dataset_format})" if t.dataset else "the length mix"
    text = (f"load: {t.load_label}; {source}: {t.conversations:,} conversations, {t.turns_sent:,} requests "
            f"({fmt_n(t.requests_per_s)} req/s sent, {fmt_n(t.finished_per_s)} answered), at most {t.max_in_flight:,} in flight")
    if t.driver_procs > 1:   # each process's most, added: a bound on the run's
        kind = "Ray actors" if t.driver_executor == "ray" else "driver processes"
        text += f" (the sum of {t.driver_procs} {kind}' most)"
    if t.context_tokens_max is not None:
        text += f", context up to {t.context_tokens_max:,} tokens"
    if t.slot_wait_s is not None:
        text += (f"; slot wait (the client's, not in TTFT) p50 {fmt_ms(t.slot_wait_s.p50)} ms, p99 "
                 f"{fmt_ms(t.slot_wait_s.p99)} ms" + (": the slots were the bound" if t.slots_bound else ""))
    if t.prefix_tokens:
        text += f"; a shared system prompt of {t.prefix_tokens:,} tokens, {t.prefix_groups:,} groups"
    if t.slot_timeouts:
        text += f"; {t.slot_timeouts:,} requests never got a slot"
    return text


def turn_table(t: TrafficFigures) -> Table | None:
    """TTFT and context per turn number; None for single-turn traffic."""
    if len(t.per_turn) < 2:
        return None
    table = Table(title="per turn (later turns carry the earlier turns and answers)", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1))
    for h in ("turn", "reqs", "done", "TTFT\np50", "TTFT\np90", "ITL\np50", "ITL\np90", "TPOT\np50", "context\nmean",
              "context\nmax"):
        table.add_column(h, justify="right", no_wrap=True)
    last = t.per_turn[-1].turn
    for row in t.per_turn:
        label = f"{row.turn}+" if row.turn == last and row.turn >= 8 else str(row.turn)
        table.add_row(label, f"{row.requests:,}", f"{row.finished:,}", fmt_ms(row.ttft_s.p50), fmt_ms(row.ttft_s.p90),
                      fmt_ms(row.itl_s.p50), fmt_ms(row.itl_s.p90), fmt_ms(row.tpot_s.p50),
                      fmt_n(row.context_tokens_mean), f"{row.context_tokens_max:,}" if row.context_tokens_max else "-")
    table.caption = "ms; context: prompt tokens sent (the server's usage where it gave one)"
    return table


def concurrency_table(c: ConcurrencySweep) -> Table:
    where = (f": knee at concurrency {c.knee_concurrency}" if c.knee_concurrency is not None else
             "" if len(c.points) < 3 else
             ": no knee (no level was answered)" if not any(p.requests_per_s > 0 for p in c.points) else
             f": no knee (still rising at {c.points[-1].concurrency})")
    table = Table(title=f"concurrency sweep, {c.step_duration_s:g} s a level{where}",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for h in ("users", "req/s", "out tok/s", "TTFT p50 ms", "TTFT p90 ms", "E2E p50 ms", "in flight"):
        table.add_column(h, justify="right", no_wrap=True)
    for k, p in enumerate(c.points):
        table.add_row(f"{p.concurrency}{' *' if k == c.knee else ''}", fmt_n(p.requests_per_s), fmt_n(p.output_tok_s),
                      fmt_ms(p.ttft_p50_s), fmt_ms(p.ttft_p90_s), fmt_ms(p.e2e_p50_s), f"{p.max_in_flight:,}")
    return table


def table_html(table: Table) -> str:
    """`table` (a rich Table of plain strings, as these builders make) as an HTML table: the same
    headers and cells in the terminal and in the page, escaped; its caption under it."""
    head = "".join(f"<th>{_html.escape(str(c.header)).replace(chr(10), '<br>')}</th>" for c in table.columns)
    cols = [list(c.cells) for c in table.columns]
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(str(col[r]))}</td>" for col in cols) + "</tr>"
                   for r in range(table.row_count))
    caption = f"<p>{_html.escape(str(table.caption))}</p>" if table.caption else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{caption}"


def traffic_sections(result: Any) -> list[Section]:
    """The HTML page's share of what the terminal prints for traffic (an LlmResult's): each run's load
    line and per-turn table, and a concurrency sweep's table and its curve with the knee."""
    out = []
    c = result.concurrency
    for run in result.runs:
        if run.traffic is None:
            continue
        turns = turn_table(run.traffic)
        if c is not None and turns is None:   # a sweep's level: its row in the sweep's table says it
            continue
        out.append(Section(f"Traffic: {run.policy}, {run.mix} at {run.rate_rps:g} req/s",
                           html=table_html(turns) if turns is not None else None, note=traffic_line(run.traffic)))
    if c is not None:
        table = concurrency_table(c)
        out.append(Section(str(table.title), figure=concurrency_figure(c), html=table_html(table),
                           note="Each level a closed loop of that many users; the knee: the first level within "
                                "90% of the best level's answered requests/s (a diamond)."))
    return out


def concurrency_figure(c: ConcurrencySweep) -> go.Figure:
    """Answered requests/s (left) and TTFT p50 (right) against users; the knee a diamond."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    users = [p.concurrency for p in c.points]
    fig.add_trace(go.Scatter(x=users, y=[p.requests_per_s for p in c.points], mode="lines+markers",
                             name="answered req/s", line=dict(color=SIDE_COLORS[0])))
    fig.add_trace(go.Scatter(x=users, y=[None if p.ttft_p50_s is None else p.ttft_p50_s * 1000 for p in c.points],
                             mode="lines+markers", name="TTFT p50 (ms)", line=dict(color=SIDE_COLORS[1], dash="dot")),
                  secondary_y=True)
    if c.knee is not None:
        k = c.points[c.knee]
        fig.add_trace(go.Scatter(x=[k.concurrency], y=[k.requests_per_s], mode="markers", name=f"knee ({k.concurrency})",
                                 marker=dict(symbol="diamond", size=14, color=SIDE_COLORS[0])))
    fig.update_xaxes(title_text="users (requests in flight)", type="log", tickvals=users)
    fig.update_yaxes(title_text="answered requests/s", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="TTFT p50 (ms)", secondary_y=True, rangemode="tozero")
    return layout(fig, f"Concurrency sweep: {c.target}")

