"""The rank view: the flaw ranking in the terminal (80 columns) and in HTML.

Terminal: the ranking table, the top three with their numbers and a one-line
measured reason each, a warning per flaw whose runs were too short to show it,
interactions, and how the runs were shortened; over several seeds, a table of each
flaw's cost intervals and how stable its place is; the LLM flaws' section
(`reports/llm_rank.py`) where the result has one. HTML: the verdict, the ranking
and heatmap charts (reports/rank_charts.py) and the tables. Reads only the typed
result (`harness.results.rank.RankResult`).
"""

from __future__ import annotations

import html as _html
from typing import Callable

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table

from harness.results.rank import (NOISE_AMPLIFICATION, NOISE_P99_S, NOISE_SHARE, FlawCost, FlawRank, FlawSeeds,
                                  RankResult, ShortRun, TailChange)
from harness.results.stats import Interval
from reports import llm_rank
from reports.fmt import fmt_pct, fmt_s
from reports.page import Section
from reports.rank_charts import cost_tail, heatmap_figure, p99_at, p99_pair, ranking_figure

__all__ = ["amplification", "lead_sections", "p99_words", "pts", "reason", "render", "sections", "short_run_words",
           "shortened", "stability_rows", "tail", "tail_cell", "title", "verdict_html"]


def title(result: RankResult) -> str:
    name = result.suite_name
    where = f"the {name} suite" if name and name != "custom" else ", ".join(result.suite)
    seeds = f"seeds {result.seeds[0]}..{result.seeds[-1]}" if result.seeds else f"seed {result.seed}"
    return f"Flaw ranking over {where} ({len(result.suite)} scenarios, {seeds})"


def _ci(i: Interval, fmt: Callable[[float], str]) -> str:
    """'mean [lo, hi]' of an interval; 'never in k/N' where some seed had no value."""
    if i.missing:
        return f"never in {i.missing}/{i.n}"
    if i.mean is None:
        return "-"
    if i.lo is None or i.hi is None:
        return fmt(i.mean)
    return f"{fmt(i.mean)} [{fmt(i.lo)}, {fmt(i.hi)}]"


def _ms(x: float) -> str:
    return f"{1000 * x:+.0f}" if abs(x) >= 0.0095 else f"{1000 * x:+.1f}"


def stability_rows(result: RankResult) -> list[tuple[str, str, str, str, str, str]]:
    """Per flaw over the seeds: rank, id, goodput lost (points, mean [95% CI]), p99 increase
    (ms), the places its seeds' own rankings gave it, and the share that put it at its rank."""
    rows = []
    for f in result.ranked():
        o: FlawSeeds | None = f.over_seeds
        if o is None:
            continue
        lo, hi = o.place_range
        places = f"{lo}" if lo == hi else f"{lo}-{hi}"
        rows.append((str(f.rank), f.id, _ci(o.goodput_loss, lambda x: f"{100 * x:.1f}"),
                     _ci(o.p99_increase_s, _ms), f"{places} ({','.join(map(str, o.places))})",
                     f"{100 * o.held:.0f}%"))
    return rows


def _stability(result: RankResult, console: Console) -> None:
    rows = stability_rows(result)
    if not rows:
        return
    t = Table(title=f"over {len(result.seeds or [])} seeds: cost intervals (95%) and how stable each place is",
              box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    cols: tuple[tuple[str, JustifyMethod], ...] = (("#", "right"), ("flaw", "left"), ("lost, pts", "right"),
                                                   ("p99 +, ms", "right"), ("places", "left"), ("held", "right"))
    for col, just in cols:
        t.add_column(col, justify=just, no_wrap=col == "flaw")
    for row in rows:
        t.add_row(*row)
    console.print()
    console.print(t)
    console.print("Each seed ranks the flaws on its own; the ranking orders them by median place. places: the "
                  "range of places over the seeds (each seed's in order); held: the share of seeds that put "
                  "the flaw at its rank. lost and p99 +: worst-case cost, mean [95% interval] over the seeds; "
                  "the main table is the first seed's.", highlight=False)


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


def tail_cell(c: FlawCost) -> str:
    """The worst p99 change for a narrow column: 'never' (became never answered),
    'never->898 ms' (was never answered, now a number), else signed."""
    if c.p99_increase_s is not None and c.p99_change is TailChange.BECAME_ANSWERED \
            and c.p99_increase_s < NOISE_P99_S:
        return f"{_short(c.p99_from_outcome)}->{fmt_s(c.p99_to_s)}"
    if c.p99_increase_s is None:
        return _short(c.p99_to_outcome)
    if c.p99_change is TailChange.NEVER and abs(c.p99_increase_s) < NOISE_P99_S \
            and _short(c.p99_from_outcome) != _short(c.p99_to_outcome):
        return f"{_short(c.p99_from_outcome)}->{_short(c.p99_to_outcome)}"
    return tail(c.p99_increase_s)


def _short(outcome: str | None) -> str:
    """Where a p99 with no latency lands, in one word."""
    return outcome if outcome in ("shed", "failed") else "never"


def p99_words(c: FlawCost) -> str:
    """The worst p99 change in words: never 'unchanged' beside a tail that went from never
    answered to a number (or back)."""
    x = c.p99_increase_s
    if x is None:
        before = "" if c.p99_from_s is None else f"{fmt_s(c.p99_from_s)} -> "
        return f"{before}{p99_at(None, c.p99_to_outcome)} in {c.p99_scenario}"
    if c.p99_change in (TailChange.BECAME_ANSWERED, TailChange.NEVER) and abs(x) < NOISE_P99_S:
        return f"{cost_tail(c)} in {c.p99_scenario}"
    if abs(x) < NOISE_P99_S:
        return "unchanged"
    return tail(x) + ("" if c.p99_scenario == c.scenario else f" in {c.p99_scenario}")


def amplification(before: float | None, after: float | None) -> str | None:
    """'amplification 1.00x -> 1.31x' when it moved beyond noise (three digits for small moves)."""
    if before is None or after is None or abs(after - before) < NOISE_AMPLIFICATION:
        return None
    d = 2 if abs(after - before) >= 0.05 else 3
    return f"amplification {before:.{d}f}x -> {after:.{d}f}x"


def reason(f: FlawRank, good: str) -> str:
    """One line, from measured figures only: what the flaw did where it hurt most."""
    row = f.per_scenario[f.cost.scenario]
    put = f"{good}+{f.id}"
    g, p, a, at = row.goodput, row.p99_s, row.amplification, row.p99_outcome
    u = row.unserved
    parts = [f"on {f.cost.scenario} goodput {fmt_pct(g.get(good))} -> {fmt_pct(g.get(put))}",
             p99_pair(p.get(good), at.get(good), p.get(put), at.get(put), (g.get(good), u.get(good)),
                      (g.get(put), u.get(put)))]
    if good in u and put in u and abs(u[put] - u[good]) >= NOISE_SHARE:
        parts.append(f"timed out, failed or lost {fmt_pct(u[good], 2)} -> {fmt_pct(u[put], 2)}")
    lost = row.lost
    if lost.get(good, 0) != lost.get(put, 0):
        parts.append(f"lost in flight {lost.get(good, 0):,} -> {lost.get(put, 0):,}")
    amp = amplification(a.get(good), a.get(put))
    if amp:
        parts.append(amp)
    if row.wasted_gpu_s >= 1:
        parts.append(f"{row.wasted_gpu_s:,.0f} GPU-s more wasted")
    return ", ".join(parts)


def short_run_words(w: ShortRun) -> str:
    """The per-flaw warning: which runs were too short (or missing) and what the mechanism needs."""
    if w.missing:
        text = f"none of the scenarios that expose it ({', '.join(w.missing)}) was run"
    else:
        runs = ", ".join(f"{s} kept {k.disturbance_s or 0:.3g} s of it and {k.after_s or 0:.3g} s after"
                         for s, k in w.runs.items())
        text = f"the runs were too short to show it ({runs})"
    if w.needed_disturbance_s is not None:
        text += (f": {w.mechanism}, so {w.needed_disturbance_s:.3g} s of disturbance and "
                 f"{w.needed_after_s or 0:.3g} s after")
    else:
        text += f": {w.mechanism}"
    return text + "; its cost may be understated"


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
    t.add_column("harm", justify="right")
    t.add_column("worst in", no_wrap=True)
    t.add_column("gain", justify="right")
    top = set(result.top)
    for f in flaws:
        c, g = f.cost, f.gain
        star = "*" if f.id in top else ""
        gain = "fixed" if g.note else pts(g.goodput_gain)
        where = c.scenario if c.measurable() else "-"
        t.add_row(f"{f.rank}{star}", f.id + ("!" if f.too_short else ""), pts(c.goodput_loss), tail_cell(c),
                  f"{100 * c.harmed:.1f}", where, gain)
    console.print(t)
    console.print(f"lost: goodput lost when put back into {good}; gain: goodput its fix gains alone in "
                  f"{flawed} (percentage points of all requests, worst scenario); p99 +: worst p99 increase "
                  f"('never' = the 1% tail was never answered, 'shed' = it was refused); harm: points more of requests timed out, "
                  f"failed or lost in flight; * = top three; ! = runs too short to show it (below).",
                  highlight=False)
    for f in flaws:
        if f.too_short:
            console.print(f"[bold]! {f.id}[/]: {short_run_words(f.too_short)}.", highlight=False)
    _stability(result, console)
    console.print()
    console.print("[bold]Insist on these before shipping:[/]")
    for i, fid in enumerate(result.top, 1):
        f = result.flaw(fid)
        c, g = f.cost, f.gain
        gain = "" if g.note else f"; fixed alone in {flawed} it gains {pts(g.goodput_gain)} points on {g.scenario}"
        harm = f", {pts(c.harmed)} points more timed out, failed or lost" if c.harmed >= NOISE_SHARE else ""
        console.print(f"{i}. [bold]{fid}[/] (doc item {f.doc_item}): {pts(c.goodput_loss)} points of goodput "
                      f"lost, p99 {p99_words(c)}{harm}{gain}.", highlight=False)
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
    if result.llm is not None:
        console.print()
        llm_rank.render(result.llm, console)
        console.print()
    wall = f", {result.wall_s:.0f} s wall" if result.wall_s else ""
    seeds = f"seeds {', '.join(map(str, result.seeds))}" if result.seeds else f"seed {result.seed}"
    console.print(f"{result.runs} runs, {seeds}, SLO {fmt_s(result.slo_s)}{wall}. "
                  f"Score: {result.score}.", highlight=False)


def ranking_table(result: RankResult) -> str:
    top = set(result.top)
    head = ("<tr><th>rank</th><th class='l'>flaw</th><th>doc item</th><th>goodput lost</th><th>p99 increase</th>"
            "<th>timed out, failed or lost</th><th>wasted GPU-s</th><th class='l'>worst in</th><th>fix gains</th><th class='l'>failure / fix / interaction</th></tr>")
    rows = []
    for f in result.ranked():
        c, g = f.cost, f.gain
        detail = (f"{_html.escape(f.failure)}<br><i>fix:</i> {_html.escape(f.fix)}"
                  + (f"<br><i>interaction:</i> {_html.escape(f.interaction)}" if f.interaction else "")
                  + (f"<br><b>warning:</b> {_html.escape(short_run_words(f.too_short))}" if f.too_short else ""))
        cls = " class='top'" if f.id in top else ""
        rows.append(
            f"<tr{cls}><td>{f.rank}</td><td class='l'><b>{_html.escape(f.id)}</b></td>"
            f"<td>{_html.escape(f.doc_item)}</td><td>{fmt_pct(c.goodput_loss)}</td>"
            f"<td>{_html.escape(cost_tail(c))}</td><td>{fmt_pct(c.harmed, 2)}</td><td>{c.wasted_gpu_s:,.1f}</td>"
            f"<td class='l'>{_html.escape(c.scenario)}</td>"
            f"<td>{'fixed' if g.note else fmt_pct(g.goodput_gain)}</td><td class='l'>{detail}</td></tr>")
    return f"<table class='data'>{head}{''.join(rows)}</table>"


def verdict_html(result: RankResult) -> str:
    """The verdict in one line: the top three, each with its worst goodput cost and where."""
    top = [result.flaw(fid) for fid in result.top]
    names = ", ".join(f"{f.id} ({fmt_pct(f.cost.goodput_loss)} goodput lost in {f.cost.scenario})" for f in top)
    return f"<p class='verdict'><b>Insist on fixing before shipping:</b> {_html.escape(names) or 'none measured'}.</p>"


def lead_sections(result: RankResult) -> list[Section]:
    """What the page opens with: the verdict, then the ranking chart."""
    return [Section("verdict: the flaws to fix first", html=verdict_html(result), lead=True),
            Section("cost of each flaw, ranked", ranking_figure(result), lead=True,
                    note="Rank 1 on top; ★ = top three. Bars are worst-case over the suite; hover a bar for the "
                         "scenario, the failure and the fix.")]


def sections(result: RankResult) -> list[Section]:
    """Verdict and ranking chart (the lead), how the ranking was measured, heatmap, tables."""
    how = (f"<p>Each flaw was put back, alone, into the {_html.escape(result.good)} design and its cost "
           f"measured in every scenario of the suite (seed {result.seed}, SLO {fmt_s(result.slo_s)}); the "
           f"worst scenario ranks it. The fix's gain is the other way round: the flaw fixed alone in the "
           f"{_html.escape(result.flawed)} design. A large cost with a small gain means the flaw hurts only "
           f"once others are fixed.</p>")
    return [
        *lead_sections(result),
        Section("how the ranking was measured", html=how),
        Section("cost per flaw and scenario", heatmap_figure(result),
                note=f"Goodput lost (percentage points of all requests) when this flaw alone is put back into "
                     f"the {result.good} design; negative: the flaw helps there. Blank cells are under 0.05 points."),
        Section("the ranking in numbers", html=ranking_table(result)),
        *([Section("over the seeds: cost intervals and stable places", html=stability_table(result))]
          if result.seeds else []),
        *([llm_rank.section(result.llm)] if result.llm is not None else []),
    ]


def stability_table(result: RankResult) -> str:
    """The seeds table (`stability_rows`) in HTML."""
    head = ("<tr><th>rank</th><th class='l'>flaw</th><th>goodput lost, points (mean [95% CI])</th>"
            "<th>p99 increase, ms</th><th class='l'>places over the seeds</th><th>held its rank</th></tr>")
    rows = "".join("<tr>" + "".join(f"<td{' class=l' if i in (1, 4) else ''}>{_html.escape(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in stability_rows(result))
    legend = (f"<p>Seeds {', '.join(map(str, result.seeds or []))}: each seed ranks the flaws on its own; the "
              "ranking orders them by median place. Held: the share of seeds that put the flaw at its rank.</p>")
    return legend + f"<table class='data'>{head}{rows}</table>"
