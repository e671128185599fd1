"""The rank view: the flaw ranking in the terminal (80 columns) and in HTML.

Terminal: the ranking table, the top three with their numbers and a one-line
measured reason each, interactions, and how the runs were shortened. HTML: the
verdict, the ranking and heatmap charts (reports/rank_charts.py) and the table.
Reads only the typed result (`harness.results.rank.RankResult`).
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.rank import FlawRank, RankResult
from reports.fmt import fmt_pct, fmt_s
from reports.page import Section
from reports.rank_charts import heatmap_figure, p99_change, ranking_figure

__all__ = ["pts", "reason", "render", "sections", "shortened", "tail", "title"]


def title(result: RankResult) -> str:
    name = result.suite_name
    where = f"the {name} suite" if name and name != "custom" else ", ".join(result.suite)
    return f"Flaw ranking over {where} ({len(result.suite)} scenarios, seed {result.seed})"


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


def reason(f: FlawRank, good: str) -> str:
    """One line, from measured figures only: what the flaw did where it hurt most."""
    row = f.per_scenario[f.cost.scenario]
    put = f"{good}+{f.id}"
    g, p, a = row.goodput, row.p99_s, row.amplification
    parts = [f"on {f.cost.scenario} goodput {fmt_pct(g.get(good))} -> {fmt_pct(g.get(put))}",
             f"p99 {fmt_s(p.get(good))} -> {fmt_s(p.get(put))}"]
    before, after = a.get(good), a.get(put)
    if before is not None and after is not None and abs(after - before) >= 0.05:
        parts.append(f"amplification {before:.2f}x -> {after:.2f}x")
    if row.wasted_gpu_s >= 1:
        parts.append(f"{row.wasted_gpu_s:,.0f} GPU-s more wasted")
    return ", ".join(parts)


def shortened(result: RankResult) -> list[str]:
    """'scenario 3 of 60 s (what was kept)' for every run cut shorter than its script."""
    return [f"{w} {p.run_s:.3g} of {p.full_s:g} s ({p.kept})"
            for w, p in result.durations.items() if p.run_s < p.full_s - 1e-9]


def render(result: RankResult, console: Console) -> None:
    good, flawed = result.good, result.flawed
    flaws = result.ranked()
    t = Table(title=f"flaw ranking: each put back into {good}, each fixed alone in {flawed}",
              box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    t.add_column("#", justify="right")
    t.add_column("flaw", no_wrap=True)
    t.add_column("lost", justify="right")
    t.add_column("p99 +", justify="right")
    t.add_column("waste", justify="right")
    t.add_column("worst in", no_wrap=True)
    t.add_column("gain", justify="right")
    top = set(result.top)
    for f in flaws:
        c, g = f.cost, f.gain
        star = "*" if f.id in top else ""
        gain = "fixed" if g.note else pts(g.goodput_gain)
        where = c.scenario if c.measurable() else "-"
        t.add_row(f"{f.rank}{star}", f.id, pts(c.goodput_loss), tail(c.p99_increase_s),
                  f"{c.wasted_gpu_s:,.0f}", where, gain)
    console.print(t)
    console.print(f"lost: goodput lost when put back into {good}; gain: goodput its fix gains alone in "
                  f"{flawed} (percentage points of all requests, worst scenario); p99 +: worst p99 increase "
                  f"('never' = the 1% tail was never answered); waste: extra wasted GPU-s; * = top three.",
                  highlight=False)
    console.print()
    console.print("[bold]Insist on these before shipping:[/]")
    for i, fid in enumerate(result.top, 1):
        f = result.flaw(fid)
        c, g = f.cost, f.gain
        gain = "" if g.note else f"; fixed alone in {flawed} it gains {pts(g.goodput_gain)} points on {g.scenario}"
        p99 = ("the 1% tail never answered" if c.p99_increase_s is None
               else "unchanged" if abs(c.p99_increase_s) < 0.0005 else tail(c.p99_increase_s))
        console.print(f"{i}. [bold]{fid}[/] (doc item {f.doc_item}): {pts(c.goodput_loss)} points of goodput "
                      f"lost, p99 {p99}{gain}.", highlight=False)
        console.print(f"   {reason(f, good)}.", highlight=False)
    inter = [f for f in flaws if f.interaction]
    if inter:
        console.print()
        console.print("[bold]Interactions:[/]")
        for f in inter:
            console.print(f"- {f.id}: {f.interaction}.", highlight=False)
    short = shortened(result)
    console.print()
    if short:
        console.print(f"Runs shortened (harness/analysis/shorten.py): {'; '.join(short)}.", highlight=False)
    wall = f", {result.wall_s:.0f} s wall" if result.wall_s else ""
    console.print(f"{result.runs} runs, seed {result.seed}, SLO {fmt_s(result.slo_s)}{wall}. "
                  f"Score: {result.score}.", highlight=False)


def ranking_table(result: RankResult) -> str:
    top = set(result.top)
    head = ("<tr><th>rank</th><th class='l'>flaw</th><th>doc item</th><th>goodput lost</th><th>p99 increase</th>"
            "<th>wasted GPU-s</th><th class='l'>worst in</th><th>fix gains</th><th class='l'>failure / fix / interaction</th></tr>")
    rows = []
    for f in result.ranked():
        c, g = f.cost, f.gain
        detail = (f"{_html.escape(f.failure)}<br><i>fix:</i> {_html.escape(f.fix)}"
                  + (f"<br><i>interaction:</i> {_html.escape(f.interaction)}" if f.interaction else ""))
        cls = " class='top'" if f.id in top else ""
        rows.append(
            f"<tr{cls}><td>{f.rank}</td><td class='l'><b>{_html.escape(f.id)}</b></td>"
            f"<td>{_html.escape(f.doc_item)}</td><td>{fmt_pct(c.goodput_loss)}</td>"
            f"<td>{_html.escape(p99_change(c.p99_increase_s))}</td><td>{c.wasted_gpu_s:,.1f}</td>"
            f"<td class='l'>{_html.escape(c.scenario)}</td>"
            f"<td>{'fixed' if g.note else fmt_pct(g.goodput_gain)}</td><td class='l'>{detail}</td></tr>")
    return f"<table class='data'>{head}{''.join(rows)}</table>"


def sections(result: RankResult) -> list[Section]:
    """Verdict, chart, heatmap, table."""
    top = [result.flaw(fid) for fid in result.top]
    names = ", ".join(f"{f.id} ({fmt_pct(f.cost.goodput_loss)} goodput lost in {f.cost.scenario})" for f in top)
    verdict = (f"<p><b>Insist on fixing before shipping:</b> {_html.escape(names) or 'none measured'}.</p>"
               f"<p>Each flaw was put back, alone, into the {_html.escape(result.good)} design and its cost "
               f"measured in every scenario of the suite (seed {result.seed}, SLO {fmt_s(result.slo_s)}); the "
               f"worst scenario ranks it. The fix's gain is the other way round: the flaw fixed alone in the "
               f"{_html.escape(result.flawed)} design. A large cost with a small gain means the flaw hurts only "
               f"once others are fixed.</p>")
    return [
        Section("verdict: the flaws to fix first", html=verdict),
        Section("cost of each flaw, ranked", ranking_figure(result),
                note="Rank 1 on top; ★ = top three. Bars are worst-case over the suite; hover a bar for the "
                     "scenario, the failure and the fix."),
        Section("cost per flaw and scenario", heatmap_figure(result),
                note=f"Goodput lost (percentage points of all requests) when this flaw alone is put back into "
                     f"the {result.good} design; negative: the flaw helps there. Blank cells are under 0.05 points."),
        Section("the ranking in numbers", html=ranking_table(result)),
    ]
