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

from harness.results.run import ANSWERED, Outcome, RunResult, RunSummary, SeedSet
from harness.results.stats import Interval
from reports.charts import SIDE_COLORS
from reports.fmt import fmt_n, fmt_pct, fmt_s, fmt_share, fmt_x
from reports.page import Section
from reports.run_charts import Side, cdf_figure, tenant_figure, timeseries_figure

__all__ = ["all_p", "header", "lag_text", "not_ok_text", "render", "render_summary", "run_sections",
           "scenario_note", "sections", "seed_rows", "summary_table", "tenant_table", "title"]


def title(result: RunResult) -> str:
    s = result.summary
    o = result.over_seeds
    seeds = f"seeds {o.seeds[0]}..{o.seeds[-1]}" if o else f"seed {s.seed}"
    return f"Run: {s.target} on {s.workload} ({s.mode}, {seeds})"


def _figure_text(key: str, x: float) -> str:
    """A figure of a summary key in its unit (seconds, shares, rates, multipliers)."""
    if key.startswith("latency") or key.endswith("_s") and "wasted" not in key:
        return fmt_s(x)
    if key.endswith(("ratio", "share", "utilization", "batch_fill")):
        return fmt_pct(x, 2 if abs(x) < 0.01 else 1)
    if key == "amplification":
        return fmt_x(x, 3)
    return fmt_n(x)


def seed_rows(over: SeedSet) -> list[tuple[str, str, str]]:
    """(figure, mean, 95% interval) per headline figure over the seeds; 'never in k/N' where
    some seed had no value, '-' where one seed gives no interval."""
    def ci(key: str, i: Interval) -> tuple[str, str]:
        if i.missing:
            return f"never in {i.missing}/{i.n}", "-"
        if i.mean is None:
            return "-", "-"
        if i.lo is None or i.hi is None:
            return _figure_text(key, i.mean), "-"
        return _figure_text(key, i.mean), f"{_figure_text(key, i.lo)} .. {_figure_text(key, i.hi)}"
    return [(key, *ci(key, i)) for key, i in over.figures.items()]


def _seed_table(over: SeedSet) -> Table:
    t = Table(title=f"over {len(over.seeds)} seeds ({', '.join(map(str, over.seeds))}): mean and 95% interval",
              header_style="bold", box=None, pad_edge=False)
    t.add_column("figure")
    t.add_column("mean", justify="right")
    t.add_column("95% interval (Student t)", justify="right")
    for row in seed_rows(over):
        t.add_row(*row)
    return t


# -- terminal ---------------------------------------------------------------------------------

def render(result: RunResult, console: Console) -> None:
    """The first seed's summary; with seeds, then every headline figure over the seeds."""
    render_summary(result.summary, console)
    if result.over_seeds is not None:
        console.print()
        console.print(_seed_table(result.over_seeds))
        console.print("The summary is the first seed's run; this table is over every seed "
                      "(harness run --json prints it under over_seeds).", highlight=False)


NOTES = {
    Outcome.WITHIN_SLO: "answered OK within the SLO",
    Outcome.LATE: "answered OK after the SLO",
    Outcome.SHED: "refused on purpose (429/503)",
    Outcome.TIMED_OUT: "given up on by the client (timeout)",
    Outcome.FAILED: "answered with an error",
    Outcome.LOST: "unresolved at the end (in flight)",
}


def all_p(s: RunSummary, q: float, value: float | None) -> str:
    """A percentile of `latency_s` (every request; not answered OK = infinite): its
    value, else the outcome it lands on: 'never' only for requests never answered
    (timed out, lost), else 'shed' or 'failed' (an answer, just not an OK one)."""
    if value is not None:
        return fmt_s(value)
    o = s.outcomes.at(q)
    return "never" if o is None or o not in ANSWERED else o.label


def not_ok_text(s: RunSummary) -> str:
    """'17.2% shed, 0.5% timed out': how the requests not answered OK ended."""
    parts = [f"{fmt_share(f.share)} {o.label}" for o, f in s.outcomes.not_ok().items()]
    return ", ".join(parts) if parts else "none"


def header(s: RunSummary) -> str:
    """The run's title line, with an interrupted or invalid run said up front."""
    span = f"{s.duration_s:g} s" if not s.partial else f"{fmt_s(s.covered_s)} of {s.duration_s:g} s"
    head = f"{s.target} on {s.workload} ({s.mode}, seed {s.seed}, {span})"
    if s.partial:
        head += "\n[bold red]PARTIAL[/]: interrupted; figures cover the requests scheduled in the first " \
                f"{fmt_s(s.covered_s)}"
    judged = (s.live or {}).get("validity") or {}
    if not s.valid:
        head += "\n[bold red]INVALID[/]: " + "; ".join(s.invalid_reasons or ["no reason recorded"])
    elif s.mode == "live":
        head += "\nvalid: the driver kept its schedule and reached the target"
    for finding in judged.get("target_findings") or []:  # the target's overload: not the run's fault
        head += f"\n[bold yellow]TARGET[/] {finding}"
    if judged.get("remedies"):
        head += "\nfor a valid run: " + "; or ".join(judged["remedies"])
    return head


def render_summary(s: RunSummary, console: Console) -> None:
    """A run's headline figures, then its tenants when there are several."""
    r, oc = s.requests, s.outcomes
    t = Table(title=header(s), show_header=True, header_style="bold", min_width=60)
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("note", overflow="fold")
    t.add_row("offered", f"{s.offered_rps:,.0f} req/s", f"{r.unique:,} unique requests")
    t.add_row("goodput", f"{s.goodput_rps:,.0f} req/s", f"{fmt_pct(s.goodput_ratio)} within the {fmt_s(s.slo_s)} SLO")
    t.add_row("throughput", f"{s.throughput_rps:,.0f} req/s", "answered OK")
    ok_share = oc.within_slo.share + oc.late.share
    lat, ok = s.latency_s, s.latency_ok_s
    t.add_row("latency p50 / p99", f"{fmt_s(ok.p50, '-')} / {fmt_s(ok.p99, '-')}",
              f"of the {fmt_share(ok_share)} answered OK; max {fmt_s(ok.max, '-')}")
    t.add_row("[bold]outcomes[/]", "share", "each request ends as exactly one of:")
    for o in Outcome:
        f = oc.of(o)
        note = f"{f.count:,} {NOTES[o]}"
        if o is Outcome.WITHIN_SLO:
            note = f"{f.count:,} answered OK within {fmt_s(s.slo_s)}"
        if o is Outcome.LOST and r.lost:
            note += f"; {r.lost:,} attempts lost in flight on dead GPUs (their clients timed out)"
        if o is Outcome.SHED and r.throttled:
            note += f"; {r.throttled:,} by the clients' own throttle (not sent)"
        t.add_row(f"  {o.label}", fmt_share(f.share), note)
    if ok_share < 1.0 and r.unique:
        t.add_row("p99, all requests", all_p(s, 0.99, lat.p99),
                  f"not answered OK = infinitely slow: {not_ok_text(s)}")
    t.add_row("amplification", fmt_x(s.amplification), f"{r.attempts:,} attempts")
    g = s.gpu
    live = s.live or {}
    if not live.get("external_url"):  # a server the harness did not build: its GPUs are unknown
        t.add_row("GPUs", f"{g.count}", f"utilisation {fmt_pct(g.utilization)}, batch fill {fmt_pct(g.batch_fill)}")
        t.add_row("wasted GPU time", f"{g.wasted_gpu_s:,.1f} GPU-s", "duplicates, abandoned, padding")
    lag = (live.get("send_lag_s") or {}).get("p99")
    if lag is not None:
        verdict = "[bold red]driver fell behind[/]" if live.get("driver_behind") else "driver kept up"
        t.add_row("send lag p99", fmt_s(lag), f"{verdict}: sent - scheduled")
    cold = cold_start_row(live)
    if cold is not None:
        t.add_row("cold start p50 / p99", *cold)
    c = s.cache
    if c.mode != "off" and not live.get("external_url"):
        t.add_row("cache", c.mode, f"hit rate {fmt_pct(c.hit_rate)} of {c.lookups:,} lookups")
    rec = s.recovery
    if rec.disturbance_end_s is not None:
        t.add_row("recovery", fmt_s(rec.recovered_after_s), f"after the disturbance ends at {fmt_s(rec.disturbance_end_s)}")
    console.print(t)
    if len(s.tenants) > 1:
        console.print(tenant_table(s))


def tenant_table(s: RunSummary) -> Table:
    """Per tenant: its outcome shares (the categories any tenant has) and the
    p50/p99 of its requests answered OK."""
    shown = [o for o in Outcome if o is Outcome.WITHIN_SLO
             or any(v.outcomes is not None and v.outcomes.of(o).count for v in s.tenants.values())]
    tt = Table(title=f"per tenant (Jain fairness {fmt_n(s.fairness_jain)}; p50, p99 of answered OK)",
               header_style="bold")
    tt.add_column("tenant")
    for col in ("requests", *(o.label for o in shown), "p50", "p99"):
        tt.add_column(col, justify="right")
    for name, v in s.tenants.items():
        shares = [fmt_share(v.goodput_ratio if v.outcomes is None else v.outcomes.of(o).share) for o in shown]
        p50, p99 = (v.p50_ok_s, v.p99_ok_s) if v.outcomes is not None else (v.p50_s, v.p99_s)
        tt.add_row(name, f"{v.unique:,}", *shares, fmt_s(p50, "-"), fmt_s(p99, "-"))
    return tt


def cold_start_row(live: dict[str, Any]) -> tuple[str, str] | None:
    """(value, note) on a live run's cold start (its `cold_start` block), or None (sim, or a
    result from before warm-up existed): the first seconds a fresh server answered, and
    whether the figures above are warm (that traffic left out) or cold (it included)."""
    cs = live.get("cold_start")
    if not cs:
        return None
    value = f"{fmt_s(cs.get('p50_ok_s'), '-')} / {fmt_s(cs.get('p99_ok_s'), '-')}"
    first = f"first {cs['seconds']:g} s: {cs['succeeded']:,} of {cs['requests']:,} answered OK"
    host_s = ((live.get("host") or {}).get("warmup") or {}).get("total_s")
    host = f"; the host warmed its models and HTTP path in {fmt_s(host_s)} first" if host_s is not None else ""
    if live.get("cold"):
        return value, f"[bold yellow]cold run[/] (--warmup 0): the figures above include them; {first}{host}"
    return value, f"warm-up traffic, left out of the figures above; {first}{host}"


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
    return fmt_s(rec.recovered_after_s)


def _cold_start(s: RunSummary) -> str:
    live = s.live or {}
    cold = cold_start_row(live)
    if cold is None:
        return "-"
    return cold[0] + (" (cold run: included above)" if live.get("cold") else " (warm-up: left out above)")


def summary_table(sides: list[Side]) -> str:
    """The headline numbers, one column per side, as an HTML table: latency over the
    requests answered OK beside how every request ended."""
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, f: Callable[[RunSummary], str]) -> None:
        rows.append((name, [f(s.run.summary) for s in sides]))

    def share(o: Outcome) -> Callable[[RunSummary], str]:
        return lambda s: f"{fmt_share(s.outcomes.of(o).share)} ({s.outcomes.of(o).count:,})"

    if any(not s.run.summary.valid or s.run.summary.mode == "live" for s in sides):
        row("valid", lambda s: "yes" if s.valid else "INVALID: " + "; ".join(s.invalid_reasons))
    if any(s.run.summary.partial for s in sides):
        row("covered", lambda s: f"PARTIAL: first {fmt_s(s.covered_s)} of {s.duration_s:g} s" if s.partial
            else "whole run")
    row("offered", lambda s: f"{s.offered_rps:,.0f} req/s ({s.requests.unique:,} requests)")
    row("goodput (within SLO)", lambda s: f"{s.goodput_rps:,.0f} req/s = {fmt_pct(s.goodput_ratio)}")
    row("latency p50 / p99 (answered OK)",
        lambda s: f"{fmt_s(s.latency_ok_s.p50, '-')} / {fmt_s(s.latency_ok_s.p99, '-')}")
    for o in Outcome:
        row(f"{o.label}: {NOTES[o]}", share(o))
    row("p99, all requests (not OK = infinite)", lambda s: all_p(s, 0.99, s.latency_s.p99))
    row("attempts per request", lambda s: fmt_x(s.amplification))
    row("attempts lost in flight (dead GPUs)", lambda s: f"{s.requests.lost:,}")
    row("GPUs, utilisation", lambda s: f"{s.gpu.count}, {fmt_pct(s.gpu.utilization)}")
    row("wasted GPU time", lambda s: f"{s.gpu.wasted_gpu_s:,.1f} GPU-s")
    row("recovery after disturbance", _recovery)
    if any((s.run.summary.live or {}).get("cold_start") for s in sides):
        row("cold start p50 / p99 (first seconds, answered OK)", _cold_start)
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
                        "above offered), with the requests shed or timed out when there are any; p99 latency of "
                        "the requests answered OK per 1-s window against the SLO (an x where the window's p99 "
                        "was never answered: over 1% timed out or lost); the deepest queue in each window; and "
                        "the share of live GPUs busy. " + scenario_note(sides[0].run)),
           Section(f"{prefix}latency distribution", cdf_figure(sides),
                   note=f"End-to-end latency of every unique request ({s0.requests.unique:,} per target) answered "
                        "OK. Left: further left and higher is better. Right: the tail on a log scale; where a "
                        "curve crosses 1% is its p99. A curve stops at the share answered OK; the dotted level "
                        "beyond it is the rest, named in the legend by how those requests ended (shed: refused "
                        "at once on purpose; timed out: the client gave up; failed; lost).")]
    tf = tenant_figure(sides)
    if tf is not None:
        out.append(Section(f"{prefix}per tenant", tf,
                           note="A fair target gives every tenant the same latency; a noisy tenant should "
                                "hurt only itself. Left: p99 of each tenant's requests answered OK; right: how "
                                "all of its requests ended, so shed or timed-out requests show as their own "
                                "share, not as a latency."))
    return out


def sections(result: RunResult) -> list[Section]:
    """The summary table, then the run's charts."""
    s = result.summary
    side = Side(s.target, result, SIDE_COLORS[1])
    flags = ""
    if s.partial:
        flags += f" PARTIAL: interrupted; the figures cover the requests scheduled in the first {fmt_s(s.covered_s)}."
    if not s.valid:
        flags += " INVALID: " + "; ".join(s.invalid_reasons) + "."
    head = Section("summary", html=summary_table([side]),
                   note=f"{s.target} on {s.workload}, {s.duration_s:g} s, SLO {fmt_s(s.slo_s)}, "
                        f"{fmt_n(s.offered_rps)} req/s offered. Latency is over the requests answered OK; "
                        "the outcome rows say how every request ended (shares of all requests)." + flags)
    out = [head]
    if result.over_seeds is not None:
        rows = "".join("<tr>" + "".join(f"<td{' class=l' if i == 0 else ''}>{_html.escape(c)}</td>"
                                        for i, c in enumerate(row)) + "</tr>" for row in seed_rows(result.over_seeds))
        out.append(Section(f"over {len(result.over_seeds.seeds)} seeds", note="Mean and 95% interval (Student t) "
                           "of each figure over the seeds; the summary and charts are the first seed's.",
                           html="<table class='data'><tr><th class='l'>figure</th><th>mean</th>"
                                f"<th>95% interval</th></tr>{rows}</table>"))
    return [*out, *run_sections([side])]
