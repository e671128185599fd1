"""The view of a `run` result: one target under one workload, in the terminal and in HTML.

`title`, `render` and `sections` are the registry's three functions
(reports/registry.py). `summary_table` and `run_sections` draw any list of
Sides, so the compare view reuses them for A and B. Views read only the typed
result, so any saved result can be rendered again (`harness report`). Tables
fit 80 columns; rich drops colour by itself when stdout is not a terminal.
"""

from __future__ import annotations

import html as _html
import math
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from harness.results.run import RunResult, RunSummary
from reports.charts import SIDE_COLORS
from reports.fmt import fmt_n, fmt_pct, fmt_s
from reports.page import Section
from reports.run_charts import Side, cdf_figure, tenant_figure, timeseries_figure

__all__ = ["lag_text", "render", "render_summary", "run_sections", "scenario_note", "sections",
           "summary_table", "title"]


def title(result: RunResult) -> str:
    s = result.summary
    return f"Run: {s.target} on {s.workload} ({s.mode}, seed {s.seed})"


# -- terminal ---------------------------------------------------------------------------------

def render(result: RunResult, console: Console) -> None:
    render_summary(result.summary, console)


def render_summary(s: RunSummary, console: Console) -> None:
    """A run's headline figures, then its tenants when there are several."""
    r = s.requests
    t = Table(title=f"{s.target} on {s.workload} ({s.mode}, seed {s.seed}, {s.duration_s:g} s)",
              show_header=True, header_style="bold", min_width=60)
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("note", overflow="fold")
    t.add_row("offered", f"{s.offered_rps:,.0f} req/s", f"{r.unique:,} unique requests")
    t.add_row("goodput", f"{s.goodput_rps:,.0f} req/s", f"{fmt_pct(s.goodput_ratio)} within the {fmt_s(s.slo_s)} SLO")
    t.add_row("throughput", f"{s.throughput_rps:,.0f} req/s", "answered successfully")
    lat, ok = s.latency_s, s.latency_ok_s
    t.add_row("latency p50 / p99", f"{fmt_s(lat.p50)} / {fmt_s(lat.p99)}", "all requests; never = not answered")
    t.add_row("answered p99 / max", f"{fmt_s(ok.p99)} / {fmt_s(ok.max)}", "successful requests only")
    t.add_row("amplification", _amp(s.amplification) + "x", f"{r.attempts:,} attempts")
    t.add_row("shed / timed out", f"{r.shed:,} / {r.timed_out:,}", f"failed {r.failed:,}, lost {r.lost:,}")
    g = s.gpu
    live = s.live or {}
    if not live.get("external_url"):  # a server the harness did not build: its GPUs are unknown
        t.add_row("GPUs", f"{g.count}", f"utilisation {fmt_pct(g.utilization)}, batch fill {fmt_pct(g.batch_fill)}")
        t.add_row("wasted GPU time", f"{g.wasted_gpu_s:,.1f} GPU-s", "duplicates, abandoned, padding")
    lag = (live.get("send_lag_s") or {}).get("p99")
    if lag is not None:
        verdict = "[bold red]driver fell behind[/]" if live.get("driver_behind") else "driver kept up"
        t.add_row("send lag p99", fmt_s(lag), f"{verdict}: sent - scheduled")
    c = s.cache
    if c.mode != "off" and not live.get("external_url"):
        t.add_row("cache", c.mode, f"hit rate {fmt_pct(c.hit_rate)} of {c.lookups:,} lookups")
    rec = s.recovery
    if rec.disturbance_end_s is not None:
        after = rec.recovered_after_s
        t.add_row("recovery", "never" if after is None else f"{after:.1f} s",
                  f"after the disturbance ends at {rec.disturbance_end_s:g} s")
    if s.partial:
        t.add_row("[bold red]PARTIAL[/]", "interrupted", "figures cover the part that ran")
    console.print(t)
    if len(s.tenants) > 1:
        tt = Table(title=f"per tenant (Jain fairness {fmt_n(s.fairness_jain)})", header_style="bold")
        for col in ("tenant", "requests", "within SLO", "p50", "p99"):
            tt.add_column(col, justify="right" if col != "tenant" else "left")
        for name, v in s.tenants.items():
            tt.add_row(name, f"{v.unique:,}", fmt_pct(v.goodput_ratio), fmt_s(v.p50_s), fmt_s(v.p99_s))
        console.print(tt)


def _amp(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def lag_text(s: RunSummary) -> str:
    """Two lines on a live driver's lateness and cost (its `live` block)."""
    block: dict[str, Any] = s.live or {}
    lag = block.get("send_lag_s") or {}
    if lag.get("p99") is None:
        return "driver send lag: not measured"
    ms = {k: 1000 * v for k, v in lag.items() if v is not None}
    verdict = "FELL BEHIND: latencies include its lag" if block.get("driver_behind") else "kept up"
    wire = (block.get("write_lag_s") or {}).get("p99")
    wire_text = f"on the wire p99 {1000 * wire:.1f} ms (with waits for connections)" if wire is not None else ""
    return (f"driver send lag p50 {ms['p50']:.2f} ms, p99 {ms['p99']:.2f} ms, max {ms['max']:.1f} ms: {verdict}\n"
            f"  {wire_text}{'; ' if wire_text else ''}"
            f"{math.ceil(block.get('driver_cpu_us_per_attempt', 0))} CPU-us per attempt")


# -- HTML ---------------------------------------------------------------------------------------

def _recovery(s: RunSummary) -> str:
    rec = s.recovery
    if rec.disturbance_end_s is None:
        return "-"
    return "never" if rec.recovered_after_s is None else f"{rec.recovered_after_s:.1f} s"


def summary_table(sides: list[Side]) -> str:
    """The headline numbers, one column per side, as an HTML table."""
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, f: Callable[[RunSummary], str]) -> None:
        rows.append((name, [f(s.run.summary) for s in sides]))

    row("offered", lambda s: f"{s.offered_rps:,.0f} req/s ({s.requests.unique:,} requests)")
    row("goodput (within SLO)", lambda s: f"{s.goodput_rps:,.0f} req/s = {fmt_pct(s.goodput_ratio)}")
    row("latency p50 / p99 (all)", lambda s: f"{fmt_s(s.latency_s.p50)} / {fmt_s(s.latency_s.p99)}")
    row("answered p99", lambda s: fmt_s(s.latency_ok_s.p99))
    row("attempts per request", lambda s: f"{s.amplification:.2f}x" if s.amplification is not None else "-")
    row("shed / timed out / lost", lambda s: f"{s.requests.shed:,} / {s.requests.timed_out:,} / {s.requests.lost:,}")
    row("GPUs, utilisation", lambda s: f"{s.gpu.count}, {fmt_pct(s.gpu.utilization)}")
    row("wasted GPU time", lambda s: f"{s.gpu.wasted_gpu_s:,.1f} GPU-s")
    row("recovery after disturbance", _recovery)
    head = "".join(f'<th style="color:{s.color}">{_html.escape(s.label)}</th>' for s in sides)
    body = "".join(f'<tr><td class="l">{_html.escape(n)}</td>' + "".join(f"<td>{_html.escape(v)}</td>" for v in vals)
                   + "</tr>" for n, vals in rows)
    return f'<table class="data"><tr><th class="l">metric</th>{head}</tr>{body}</table>'


def scenario_note(result: RunResult) -> str:
    wl = result.workload_config
    parts = [wl.get("description", "")]
    if wl.get("exposes"):
        parts.append(f"Exposes: {', '.join(wl['exposes'])}.")
    if wl.get("good_target"):
        parts.append(f"A good target: {wl['good_target']}.")
    return " ".join(p for p in parts if p)


def run_sections(sides: list[Side], prefix: str = "") -> list[Section]:
    """Time series, latency distribution and per-tenant sections for sides
    that ran the same workload (one run, or A and B of a compare)."""
    s0 = sides[0].run.summary
    out = [Section(f"{prefix}over time", timeseries_figure(sides),
                   note="Top to bottom: offered load against goodput and attempts (retries show as attempts "
                        "above offered), p99 latency per 1-s window against the SLO, the deepest queue in each "
                        "window, and the share of live GPUs busy. " + scenario_note(sides[0].run)),
           Section(f"{prefix}latency distribution", cdf_figure(sides),
                   note=f"End-to-end latency of every unique request ({s0.requests.unique:,} per target). "
                        "Left: further left and higher is better. Right: the tail on a log scale; where a "
                        "curve crosses 1% is its p99.")]
    tf = tenant_figure(sides)
    if tf is not None:
        out.append(Section(f"{prefix}per tenant", tf,
                           note="A fair target gives every tenant the same latency; a noisy tenant should "
                                "hurt only itself."))
    return out


def sections(result: RunResult) -> list[Section]:
    """The summary table, then the run's charts."""
    s = result.summary
    side = Side(s.target, result, SIDE_COLORS[1])
    head = Section("summary", html=summary_table([side]),
                   note=f"{s.target} on {s.workload}, {s.duration_s:g} s, SLO {fmt_s(s.slo_s)}, "
                        f"{fmt_n(s.offered_rps)} req/s offered." + (" PARTIAL: the run was interrupted."
                                                                     if s.partial else ""))
    return [head, *run_sections([side])]
