"""Terminal view of a rank document: the ranking table (80 columns), the top
three with their numbers and a one-line measured reason each, interactions,
and how the runs were shortened.

Reads only the finished document (harness/ablation.py describes its keys).
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from reports.console import fmt_s


def pts(x: float | None) -> str:
    """A goodput difference (0..1) as percentage points."""
    return "-" if x is None else f"{100 * x:.1f}"


def tail(x: float | None) -> str:
    """A p99 difference: 'never' when the tail became never answered."""
    if x is None:
        return "never"
    if abs(x) < 0.0005:
        return "0"
    return f"{'+' if x >= 0 else '-'}{fmt_s(abs(x))}"


def harmless(loss: float, tail_s: float | None) -> bool:
    """No measurable harm: under half a point of goodput and 0.5 ms of p99."""
    return loss < 0.005 and tail_s is not None and tail_s < 0.0005


def reason(f: dict[str, Any], good: str) -> str:
    """One line, from measured figures only: what the flaw did where it hurt most."""
    w = f["cost"]["scenario"]
    row = f["per_scenario"][w]
    put = f"{good}+{f['id']}"
    g, p, a = row["goodput"], row["p99_s"], row.get("amplification") or {}
    parts = [f"on {w} goodput {_ratio(g.get(good))} -> {_ratio(g.get(put))}",
             f"p99 {fmt_s(p.get(good))} -> {fmt_s(p.get(put))}"]
    if a.get(good) is not None and a.get(put) is not None and abs(a[put] - a[good]) >= 0.05:
        parts.append(f"amplification {a[good]:.2f}x -> {a[put]:.2f}x")
    if row.get("wasted_gpu_s", 0) >= 1:
        parts.append(f"{row['wasted_gpu_s']:,.0f} GPU-s more wasted")
    return ", ".join(parts)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render_rank(doc: dict[str, Any], console: Console) -> None:
    good, flawed = doc.get("good", "hardened"), doc.get("flawed", "naive")
    flaws = sorted(doc["flaws"], key=lambda f: f["rank"])
    t = Table(title=f"flaw ranking: each put back into {good}, each fixed alone in {flawed}",
              box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    t.add_column("#", justify="right")
    t.add_column("flaw", no_wrap=True)
    t.add_column("lost", justify="right")
    t.add_column("p99 +", justify="right")
    t.add_column("waste", justify="right")
    t.add_column("worst in", no_wrap=True)
    t.add_column("gain", justify="right")
    top = set(doc.get("top") or [])
    for f in flaws:
        c, g = f["cost"], f["gain"]
        star = "*" if f["id"] in top else ""
        gain = "fixed" if g.get("note") else pts(g["goodput_gain"])
        where = "-" if harmless(c["goodput_loss"], c["p99_increase_s"]) else c["scenario"]
        t.add_row(f"{f['rank']}{star}", f["id"], pts(c["goodput_loss"]), tail(c["p99_increase_s"]),
                  f"{c['wasted_gpu_s']:,.0f}", where, gain)
    console.print(t)
    console.print(f"lost: goodput lost when put back into {good}; gain: goodput its fix gains alone in "
                  f"{flawed} (percentage points of all requests, worst scenario); p99 +: worst p99 increase "
                  f"('never' = the 1% tail was never answered); waste: extra wasted GPU-s; * = top three.",
                  highlight=False)
    console.print()
    console.print("[bold]Insist on these before shipping:[/]")
    by_id = {f["id"]: f for f in flaws}
    for i, fid in enumerate(doc.get("top") or [], 1):
        f = by_id[fid]
        c, g = f["cost"], f["gain"]
        gain = "" if g.get("note") else f"; fixed alone in {flawed} it gains {pts(g['goodput_gain'])} points on {g['scenario']}"
        p99 = ("the 1% tail never answered" if c["p99_increase_s"] is None
               else "unchanged" if abs(c["p99_increase_s"]) < 0.0005 else tail(c["p99_increase_s"]))
        console.print(f"{i}. [bold]{fid}[/] (doc item {f['doc_item']}): {pts(c['goodput_loss'])} points of goodput "
                      f"lost, p99 {p99}{gain}.", highlight=False)
        console.print(f"   {reason(f, good)}.", highlight=False)
    inter = [f for f in flaws if f.get("interaction")]
    if inter:
        console.print()
        console.print("[bold]Interactions:[/]")
        for f in inter:
            console.print(f"- {f['id']}: {f['interaction']}.", highlight=False)
    plan = doc.get("durations") or {}
    short = [f"{w} {p['run_s']:.3g} of {p['full_s']:g} s ({p.get('kept', 'shortened')})"
             for w, p in plan.items() if p["run_s"] < p["full_s"] - 1e-9]
    console.print()
    if short:
        console.print(f"Runs shortened (harness/shorten.py): {'; '.join(short)}.", highlight=False)
    wall = doc.get("wall_s")
    console.print(f"{doc.get('runs', '?')} runs, seed {doc.get('seed')}, SLO {fmt_s(doc.get('slo_s'))}"
                  + (f", {wall:.0f} s wall" if wall else "") + f". Score: {doc.get('score', '')}.", highlight=False)
