"""The server's own series of a URL run (`--server-metrics`), charted under the client's TTFT.

`server_line(run)`: one line for the terminal (what was scraped, the peaks beside the
client's in-flight peak). `server_sections(result)`: per run that scraped, one figure
whose top panel is the TTFT p50 of the requests sent in each scrape interval and whose
bottom panel, on the same time axis, is the engine's running and waiting requests beside
the client's requests in flight, and its KV-cache usage (right axis). Reads only the result.
"""

from __future__ import annotations

import plotly.graph_objects as go

from harness.results.llm import LlmResult, LlmRun
from reports.charts import SIDE_COLORS, layout, make_subplots
from reports.page import Section

__all__ = ["server_figure", "server_line", "server_sections"]


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def server_line(run: LlmRun) -> str | None:
    m = run.server_metrics
    if m is None:
        return None
    names = f"{m.flavor} names" if m.flavor else "no known names"
    kv = [v for v in m.kv_cache_usage if v is not None]
    line = (f"server ({names}): {m.scrapes} scrapes, {m.failures} failed; running max {_n(m.running_max)}, "
            f"waiting max {_n(m.waiting_max)}, client in flight max {_n(m.client_in_flight_max)}")
    if kv:
        line += f"; KV max {max(kv):.0%}"
    if m.first_error:
        line += f". First failure: {m.first_error}"
    else:
        line += f" ({m.url})"
    return line


def server_figure(run: LlmRun) -> go.Figure:
    m = run.server_metrics
    assert m is not None
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.4, 0.6],
                        specs=[[{}], [{"secondary_y": True}]])
    ttft = [None if v is None else v * 1000 for v in m.client_ttft_p50_s]
    fig.add_trace(go.Scatter(x=m.t_s, y=ttft, mode="lines+markers", name="TTFT p50 (client, ms)",
                             line=dict(color=SIDE_COLORS[0])), row=1, col=1)
    for name, ys, color, dash in (("running (server)", m.running, SIDE_COLORS[1], "solid"),
                                  ("waiting (server)", m.waiting, SIDE_COLORS[3], "solid"),
                                  ("in flight (client)", m.client_in_flight, SIDE_COLORS[2], "dot")):
        if any(v is not None for v in ys):
            fig.add_trace(go.Scatter(x=m.t_s, y=ys, mode="lines", name=name, line=dict(color=color, dash=dash),
                                     line_shape="hv"), row=2, col=1)
    if any(v is not None for v in m.kv_cache_usage):
        fig.add_trace(go.Scatter(x=m.t_s, y=[None if v is None else v * 100 for v in m.kv_cache_usage],
                                 mode="lines", name="KV cache (server, %)", line=dict(color="#636363", dash="dash")),
                      row=2, col=1, secondary_y=True)
    fig.update_yaxes(title_text="TTFT p50 (ms)", row=1, col=1)
    fig.update_yaxes(title_text="requests", row=2, col=1)
    fig.update_yaxes(title_text="KV cache %", row=2, col=1, secondary_y=True, range=[0, 100])
    fig.update_xaxes(title_text="s since the run began", row=2, col=1)
    return layout(fig, f"{run.policy} at {run.rate_rps:g} req/s: TTFT and the server's own view", height=560)


def server_sections(result: LlmResult) -> list[Section]:
    return [Section(f"Server metrics: {run.policy} at {run.rate_rps:g} req/s", figure=server_figure(run),
                    note=server_line(run) or "")
            for run in result.runs if run.server_metrics is not None]
