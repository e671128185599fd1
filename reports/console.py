"""Terminal reports (rich): a run's summary and a side-by-side comparison.

Renderers read only finished result documents, so any saved result can be
rendered again (`harness report`). Tables fit 80 columns; rich drops colour
by itself when stdout is not a terminal.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def fmt_s(x: float | None) -> str:
    """Seconds for people: ms under 1 s; 'never' for an infinite percentile."""
    if x is None:
        return "never"
    if x < 1.0:
        return f"{x * 1000:.0f} ms" if x >= 0.0095 else f"{x * 1000:.1f} ms"
    return f"{x:.2f} s"


def fmt_pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def fmt_n(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def render_run(s: dict[str, Any], console: Console) -> None:
    r = s["requests"]
    title = f"{s['target']} on {s['workload']} ({s['mode']}, seed {s['seed']}, {s['duration_s']:g} s)"
    t = Table(title=title, show_header=True, header_style="bold", min_width=60)
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("note", overflow="fold")
    t.add_row("offered", f"{s['offered_rps']:,.0f} req/s", f"{r['unique']:,} unique requests")
    t.add_row("goodput", f"{s['goodput_rps']:,.0f} req/s", f"{fmt_pct(s['goodput_ratio'])} within the {fmt_s(s['slo_s'])} SLO")
    t.add_row("throughput", f"{s['throughput_rps']:,.0f} req/s", "answered successfully")
    lat = s["latency_s"]
    t.add_row("latency p50 / p99", f"{fmt_s(lat['p50'])} / {fmt_s(lat['p99'])}", "all requests; never = not answered")
    ok = s["latency_ok_s"]
    t.add_row("answered p99 / max", f"{fmt_s(ok['p99'])} / {fmt_s(ok['max'])}", "successful requests only")
    t.add_row("amplification", f"{s['amplification']:.2f}x", f"{r['attempts']:,} attempts")
    t.add_row("shed / timed out", f"{r['shed']:,} / {r['timed_out']:,}", f"failed {r['failed']:,}, lost {r['lost']:,}")
    g = s["gpu"]
    live = s.get("live") or {}
    if not live.get("external_url"):  # a server the harness did not build: its GPUs are unknown
        t.add_row("GPUs", f"{g['count']}", f"utilisation {fmt_pct(g['utilization'])}, batch fill {fmt_pct(g['batch_fill'])}")
        t.add_row("wasted GPU time", f"{g['wasted_gpu_s']:,.1f} GPU-s", "duplicates, abandoned, padding")
    lag = (live.get("send_lag_s") or {}).get("p99")
    if lag is not None:
        verdict = "[bold red]driver fell behind[/]" if live.get("driver_behind") else "driver kept up"
        t.add_row("send lag p99", fmt_s(lag), f"{verdict}: sent - scheduled")
    c = s["cache"]
    if c["mode"] != "off" and not live.get("external_url"):
        t.add_row("cache", f"{c['mode']}", f"hit rate {fmt_pct(c['hit_rate'])} of {c['lookups']:,} lookups")
    rec = s.get("recovery") or {}
    if rec.get("disturbance_end_s") is not None:
        after = rec.get("recovered_after_s")
        t.add_row("recovery", "never" if after is None else f"{after:.1f} s", f"after the disturbance ends at {rec['disturbance_end_s']:g} s")
    if s.get("partial"):
        t.add_row("[bold red]PARTIAL[/]", "interrupted", "figures cover the part that ran")
    console.print(t)
    tenants = s.get("tenants") or {}
    if len(tenants) > 1:
        tt = Table(title=f"per tenant (Jain fairness {fmt_n(s.get('fairness_jain'))})", header_style="bold")
        for col in ("tenant", "requests", "within SLO", "p50", "p99"):
            tt.add_column(col, justify="right" if col != "tenant" else "left")
        for name, v in tenants.items():
            tt.add_row(name, f"{v['unique']:,}", fmt_pct(v["goodput_ratio"]), fmt_s(v["p50_s"]), fmt_s(v["p99_s"]))
        console.print(tt)


def render_run_doc(doc: dict[str, Any], console: Console) -> None:
    render_run(doc["summary"], console)


def _better(a: float | None, b: float | None, higher_is_better: bool) -> int:
    """-1 if a is better, 1 if b, 0 if tied. None means 'never' (worst)."""
    if a is None and b is None:
        return 0
    if a is None:
        return 1 if not higher_is_better else 1
    if b is None:
        return -1
    if abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)):
        return 0
    return (-1 if a > b else 1) if higher_is_better else (-1 if a < b else 1)


def winner(sa: dict[str, Any], sb: dict[str, Any]) -> int:
    """Goodput first (within 0.5 points is a tie), then p99."""
    ga, gb = sa["goodput_ratio"] or 0.0, sb["goodput_ratio"] or 0.0
    if abs(ga - gb) > 0.005:
        return -1 if ga > gb else 1
    return _better(sa["latency_s"]["p99"], sb["latency_s"]["p99"], higher_is_better=False)


def render_compare(doc: dict[str, Any], console: Console) -> None:
    a, b = doc["a"], doc["b"]
    t = Table(title=f"{a} (A) vs {b} (B)", header_style="bold")
    t.add_column("scenario")
    t.add_column("goodput A", justify="right")
    t.add_column("goodput B", justify="right")
    t.add_column("p99 A", justify="right")
    t.add_column("p99 B", justify="right")
    t.add_column("amp A/B", justify="right")
    t.add_column("win", justify="center")
    wins = {a: 0, b: 0}
    for name, pair in doc["scenarios"].items():
        sa, sb = pair[a] if a in pair else pair["A"], pair[b] if b in pair else pair["B"]
        w = winner(sa, sb)
        mark = {-1: "[green]A[/]", 1: "[green]B[/]", 0: "="}[w]
        if w:
            wins[a if w < 0 else b] += 1
        t.add_row(
            name,
            fmt_pct(sa["goodput_ratio"]), fmt_pct(sb["goodput_ratio"]),
            fmt_s(sa["latency_s"]["p99"]), fmt_s(sb["latency_s"]["p99"]),
            f"{sa['amplification']:.2f}/{sb['amplification']:.2f}", mark,
        )
    console.print(t)
    console.print(
        f"goodput = share of unique requests answered within the SLO; p99 over all "
        f"requests ('never' = the 1% tail was never answered); amp = attempts per request.\n"
        f"A won {wins[a]}, B won {wins[b]} of {len(doc['scenarios'])} scenarios."
    )
