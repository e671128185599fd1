"""The view of a `compare` result: A vs B over the same workloads, terminal and HTML.

One group of charts per scenario, A and B overlaid on the same axes in the
same colours throughout (A warm, B cool; offered load grey, since both sides
get the same arrivals). Which side won, each scenario's verdicts and each
side's share of the ceiling are the result's own (`CompareResult.winners()`,
`CompareResult.verdicts`); this module only says them.

Over several seeds (`compare --seeds N`) each figure reads "mean ±half-width" of its
95% interval, and each declared figure adds B - A with its interval and the paired
test's p-value; a tie there means the interval of B - A holds 0 (or the difference is
within the noise threshold).
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.markup import escape as _escape
from rich.table import Table
from rich.text import Text

from harness.results.compare import CompareResult, FigureVerdict, Winner
from harness.results.run import RunSummary
from harness.results.stats import Interval
from reports.charts import SIDE_COLORS
from reports.compare_overview import TABLE_ANCHOR, overview_sections, scenario_anchor
from reports.compare_scope import live_sim_section, partial_lines, partial_section, render_live
from reports.fmt import clip, fmt_pct, fmt_s, short_share
from reports.page import Section
from reports.run import run_sections, summary_table
from reports.run_charts import Side

__all__ = ["ceiling_line", "diff_text", "interval_text", "overview", "overview_table", "partial_lines", "render",
           "sections", "title", "verdict_lines", "verdicts_html", "verdicts_table"]

# Outcome columns of the console table: (outcome key, header). within_slo is the goodput column.
OUTCOME_COLUMNS = (("late", "late"), ("shed", "shed"), ("timed_out", "t/o"), ("failed", "fail"),
                   ("lost", "lost"))
# Longest scenario name the console table shows whole within 80 columns, with every
# outcome column shown; each outcome column not shown leaves OUTCOME_WIDTH more.
NAME_WIDTH = 16
OUTCOME_WIDTH = 6


def title(result: CompareResult) -> str:
    seeds = (f"seeds {result.seeds[0]}..{result.seeds[-1]} (95% intervals)" if result.seeds
             else f"seed {result.seed}")
    cut = (f" (PARTIAL: {len(result.partial.finished)} of "
           f"{len(result.partial.finished) + len(result.partial.unfinished)} finished)" if result.partial else "")
    return f"Compare: {result.a} (A) vs {result.b} (B), {len(result.scenarios)} scenario(s){cut}, {seeds}"


def _amp(s: RunSummary) -> str:
    return "-" if s.amplification is None else f"{s.amplification:.2f}"


def _recovery(s: RunSummary) -> str:
    r = s.recovery
    if r.disturbance_end_s is None:
        return "-"
    return "never" if r.recovered_after_s is None else f"{r.recovered_after_s:.1f} s"


def _outcome_share(s: RunSummary, key: str) -> float:
    return getattr(s.outcomes, key).share


def _ceiling_share(result: CompareResult, name: str) -> tuple[str, str]:
    a, b = ("-" if c is None or c.share is None else f"{100 * c.share:.0f}%" for c in result.ceiling_pair(name))
    return a, b


def _ceiling_ratio(result: CompareResult, name: str) -> tuple[str, str]:
    a, b = ("-" if c is None else fmt_pct(c.ceiling_ratio) for c in result.ceiling_pair(name))
    return a, b


def value_text(v: FigureVerdict, x: float | None) -> str:
    """One side's value of a declared figure, in its unit ('never' for a missing worst)."""
    if x is None:
        return "never" if v.none_means == "worst" else "0"
    return {"ratio": lambda: fmt_pct(x), "s": lambda: "0 s" if x == 0 else fmt_s(x), "x": lambda: f"{x:.2f}x",
            "count": lambda: f"{x:,.0f}", "gpu_s": lambda: f"{x:,.1f} GPU-s"}.get(v.unit, lambda: f"{x:g}")()


def _plain(v: FigureVerdict, x: float, scale: float | None = None) -> str:
    """A number in the figure's display unit, without the unit word (for bounds and widths);
    seconds print as ms when `scale` (default |x|: the largest number printed beside it) is under 1 s."""
    if v.unit == "s":  # as fmt_s: ms under 1 s (one decimal under 10 ms), else seconds
        big = abs(x) if scale is None else scale
        return (f"{1000 * x:.1f}" if big < 0.0095 else f"{1000 * x:.0f}") if big < 1 else f"{x:.2f}"
    formats = {"ratio": lambda: f"{100 * x:.1f}", "x": lambda: f"{x:.2f}", "gpu_s": lambda: f"{x:,.1f}",
               "count": lambda: f"{x:,.0f}"}
    return formats.get(v.unit, lambda: f"{x:g}")()


def _unit_word(v: FigureVerdict, x: float) -> str:
    return {"ratio": " pts", "s": " ms" if abs(x) < 1 else " s", "x": "x", "gpu_s": " GPU-s"}.get(v.unit, "")


def interval_text(v: FigureVerdict, ci: Interval | None, mean: float | None) -> str:
    """One side's value over seeds: 'mean ±half' of the 95% interval; 'never in k/N seeds'
    where some seed had no value; the mean alone where there is no interval."""
    if ci is None:
        return value_text(v, mean)
    if ci.missing:
        return f"{'never' if v.none_means == 'worst' else 'none'} in {ci.missing}/{ci.n}"
    half = ci.half_width
    if half is None:
        return value_text(v, mean)
    return f"{value_text(v, mean)} ±{_plain(v, half)}"


def diff_text(v: FigureVerdict) -> str:
    """B - A over the seeds: '+0.6 pts [+0.2, +1.0] p=0.01' (its 95% interval and the paired
    test's p-value); '-' where there is no difference to say."""
    d = v.diff
    if d is None or d.mean is None:
        return "-"
    scale = max(abs(x) for x in (d.mean, d.lo, d.hi) if x is not None)
    sign = lambda x: ("+" if x >= 0 else "-") + _plain(v, abs(x), scale)  # noqa: E731
    text = sign(d.mean) + _unit_word(v, scale)
    if d.lo is not None and d.hi is not None:
        text += f" [{sign(d.lo)}, {sign(d.hi)}]"
    if d.p_value is not None:
        text += f" p={d.p_value:.2g}"
    return text


def _tie_text(v: FigureVerdict) -> str:
    t = v.tie_within
    within = {"ratio": f"{100 * t:.1f} pts", "s": fmt_s(t), "x": f"{t:.2f}x", "count": f"{t:,.0f}",
              "gpu_s": f"{t:,.2f} GPU-s"}.get(v.unit, f"{t:g}")
    return f"tie (within {within})"


def verdict_text(result: CompareResult, v: FigureVerdict) -> str:
    """The one-line verdict: the better side by name, or a tie within the noise threshold."""
    if v.winner is Winner.TIE:
        if v.diff is not None and v.diff.mean is not None and not v.diff.excludes(0.0):
            return "tie (95% interval holds 0)"
        return _tie_text(v)
    return f"{result.a} (A)" if v.winner is Winner.A else f"{result.b} (B)"


def verdict_lines(result: CompareResult, name: str) -> list[str]:
    """Per declared figure of one scenario: 'label: A value | B value -> verdict' (over seeds,
    with the intervals and 'B - A ...')."""
    sv = result.verdicts.get(name)
    if sv is None:
        return []
    return [f"{v.label}: {interval_text(v, v.a_ci, v.a)} | {interval_text(v, v.b_ci, v.b)}"
            + (f" (B - A {diff_text(v)})" if v.diff is not None else "") + f" -> {verdict_text(result, v)}"
            for v in sv.answers]


def ceiling_line(result: CompareResult, name: str) -> str | None:
    """'share of the ceiling: ...' for one scenario, or None where it was not computed."""
    parts = []
    for label, s, c in zip((f"{result.a} (A)", f"{result.b} (B)"), result.pair(name), result.ceiling_pair(name)):
        if c is None or c.share is None:
            return None
        parts.append(f"{label} {fmt_pct(s.goodput_ratio)} of {fmt_pct(c.ceiling_ratio)} = "
                     f"{100 * c.share:.0f}%")
    return "goodput as a share of the ceiling (what any design could answer): " + ", ".join(parts)


def _headline(result: CompareResult, name: str, key: str, side: int) -> str | None:
    """One side's headline figure over seeds as 'mean ±half' (None with one seed)."""
    sv = result.verdicts.get(name)
    v = sv.figure(key) if sv is not None else None
    if v is None:
        return None
    return interval_text(v, (v.a_ci, v.b_ci)[side], (v.a, v.b)[side])


def _goodput_cell(result: CompareResult, name: str, s: RunSummary, side: int) -> str:
    return _headline(result, name, "goodput_ratio", side) or fmt_pct(s.goodput_ratio)


def _p99_ok_cell(result: CompareResult, name: str, s: RunSummary, side: int) -> str:
    return _headline(result, name, "latency_ok_s.p99", side) or fmt_s(s.latency_ok_s.p99, never="-")


def _seeded(result: CompareResult) -> bool:
    return any(v.headline for v in result.verdicts.values())


# -- terminal ---------------------------------------------------------------------------------

def _shown_outcomes(result: CompareResult) -> list[tuple[str, str]]:
    """Outcome columns that hold a request in some scenario (an all-zero column says nothing)."""
    pairs = [result.pair(w) for w in result.scenarios]
    return [(k, h) for k, h in OUTCOME_COLUMNS
            if any(_outcome_share(s, k) > 0 for pair in pairs for s in pair)]


def overview(result: CompareResult) -> Table:
    """Two rows per scenario (A, B): goodput, share of the ceiling, answered p99, the
    outcome shares that are not within the SLO, attempts per request, and who won."""
    t = Table(title=f"{result.a} (A) vs {result.b} (B)", header_style="bold", box=box.SIMPLE_HEAD,
              pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    outcomes = _shown_outcomes(result)
    budget = NAME_WIDTH + OUTCOME_WIDTH * (len(OUTCOME_COLUMNS) - len(outcomes))
    width = min(budget, max([len(w) for w in result.scenarios] + [len("scenario")]))
    t.add_column("scenario", no_wrap=True)
    for col in ("goodput", "ceil", "p99 ok"):
        t.add_column(col, justify="right", no_wrap=True)
    for _, head in outcomes:
        t.add_column(head, justify="right", no_wrap=True)
    t.add_column("amp", justify="right", no_wrap=True)
    t.add_column("", justify="center", no_wrap=True)
    winners = result.winners()
    for name in result.scenarios:
        pair = result.pair(name)
        ceil = _ceiling_share(result, name)
        won = winners[name]
        for i, (side, s) in enumerate(zip(("A", "B"), pair)):
            mark = "=" if won is Winner.TIE else ("[green]✓[/]" if won == (Winner.A, Winner.B)[i] else "")
            first = (clip(name, width) if i == 0 else "").ljust(width)
            flag = "" if s.valid else "[red]![/]"
            t.add_row(f"{first} {side}{flag}", _goodput_cell(result, name, s, i), ceil[i],
                      _p99_ok_cell(result, name, s, i),
                      *[short_share(_outcome_share(s, k)) for k, _ in outcomes],
                      _amp(s), mark,
                      end_section=i == 1)
    return t


def verdicts_table(result: CompareResult) -> Table:
    """Per scenario, each figure its file declares: A, B and the better side."""
    t = Table(header_style="bold", box=None, padding=(0, 1), pad_edge=False, show_edge=False)
    t.add_column("figure", overflow="fold")
    t.add_column("A", justify="right", no_wrap=True)
    t.add_column("B", justify="right", no_wrap=True)
    seeded = _seeded(result)
    if seeded:
        t.add_column("B - A [95% CI]", justify="right", overflow="fold")
    t.add_column("better", overflow="fold")
    for name in result.scenarios:
        sv = result.verdicts.get(name)
        if sv is None or not sv.answers:
            continue
        t.add_row(Text(name, style="bold"), *_ceiling_ratio(result, name), *([""] if seeded else []),
                  "ceiling (any design)")
        for v in sv.answers:
            style = "" if v.winner is Winner.TIE else "green"
            diff = [diff_text(v)] if seeded else []
            t.add_row(f"  {v.label}", interval_text(v, v.a_ci, v.a), interval_text(v, v.b_ci, v.b), *diff,
                      Text(verdict_text(result, v), style=style))
    return t


def render(result: CompareResult, console: Console) -> None:
    """The overview table, what each scenario asks, and a legend; fits 80 columns. An
    interrupted compare says so first, and what it covers."""
    for i, line in enumerate(partial_lines(result)):
        console.print(("[bold red]PARTIAL[/]: " if i == 0 else "  ") + _escape(line), highlight=False)
    if not result.scenarios:
        return
    console.print(overview(result))
    shown = {k for k, _ in _shown_outcomes(result)}
    missing = [h for k, h in OUTCOME_COLUMNS if k not in shown]
    console.print(
        "goodput: share of unique requests answered within the SLO; ceil: goodput as a share "
        "of the ceiling, what any design could answer on that side's fleet; p99 ok: over answered requests; "
        "late, shed (refused on purpose), t/o (client gave up), fail, lost (never resolved): "
        "shares of unique requests" + (f" ({', '.join(missing)}: none anywhere)" if missing else "")
        + "; amp: attempts per request (x); ✓ better (goodput, then p99); '!': an invalid run."
        + (f" Over {len(result.seeds)} seeds (same seeds both sides): goodput and p99 ok are mean ±half the 95% "
           "interval, other columns the first seed's; ✓ only where the interval of B - A excludes 0 "
           "(paired t test) and the difference passes the noise threshold, else = (tie)." if result.seeds else ""),
        highlight=False)
    if any(v.answers for v in result.verdicts.values()):
        console.print()
        console.print("[bold]What each scenario asks[/] (the figures its file declares; a tie is "
                      "within the figure's noise threshold" + (", or its 95% interval of B - A holds 0)"
                                                                 if _seeded(result) else ")"), highlight=False)
        console.print(verdicts_table(result))
    for name in result.scenarios:
        for side, s in zip(("A", "B"), result.pair(name)):
            if not s.valid:
                console.print(f"[red]{name} {side} invalid:[/] " + "; ".join(s.invalid_reasons), highlight=False)
    wins = list(result.winners().values())
    console.print(f"A won {wins.count(Winner.A)}, B won {wins.count(Winner.B)} of "
                  f"{len(result.scenarios)} scenarios.", highlight=False)
    render_live(result, console, NAME_WIDTH)


# -- HTML ---------------------------------------------------------------------------------------

def overview_table(result: CompareResult) -> str:
    """Per scenario: goodput, share of the ceiling, answered p99, shed, timed out and
    lost shares, attempts per request, recovery and wasted GPU time of A and B, and
    which side won (goodput first, then p99)."""
    ca, cb = SIDE_COLORS[0], SIDE_COLORS[1]
    groups = ("goodput (within SLO)", "share of ceiling", "p99 (answered)", "shed", "timed out", "lost",
              "attempts / request", "recovery", "wasted GPU-s")
    head = ("<tr><th class='l' rowspan='2'>scenario</th>"
            + "".join(f"<th colspan='2'>{g}</th>" for g in groups) + "<th rowspan='2'>better</th></tr><tr>"
            + f"<th style='color:{ca}'>A</th><th style='color:{cb}'>B</th>" * len(groups) + "</tr>")
    marks = {Winner.A: f"<b style='color:{ca}'>A</b>", Winner.B: f"<b style='color:{cb}'>B</b>", Winner.TIE: "tie"}
    winners = result.winners()
    rows = []
    for w in result.scenarios:
        sa, sb = result.pair(w)
        both = (sa, sb)
        cells = [_goodput_cell(result, w, s, i) for i, s in enumerate(both)] + list(_ceiling_share(result, w))
        cells += [_p99_ok_cell(result, w, s, i) for i, s in enumerate(both)]
        for key in ("shed", "timed_out", "lost"):
            cells += [fmt_pct(_outcome_share(s, key)) for s in both]
        cells += [_amp(s) for s in both] + [_recovery(s) for s in both]
        cells += [f"{s.gpu.wasted_gpu_s:,.1f}" for s in both]
        rows.append(f"<tr><td class='l'>{_html.escape(w)}</td>"
                    + "".join(f"<td>{_html.escape(c)}</td>" for c in cells) + f"<td>{marks[winners[w]]}</td></tr>")
    a, b = _html.escape(result.a), _html.escape(result.b)
    legend = (f"<p>A = <b style='color:{ca}'>{a}</b>, B = <b style='color:{cb}'>{b}</b>; "
              "same seed and the same arrivals on both sides. Share of ceiling: goodput as a share of what "
              "the best possible design could answer within the SLO on that side's fleet (capacity-bound, "
              "faults included). p99 over answered requests; shed (refused on purpose), timed out (the "
              "client gave up) and lost (never resolved) are shares of unique requests; recovery: seconds "
              "from the disturbance's end until every later window is back to 99% goodput ('never': not "
              "within the run).</p>")
    if result.seeds:
        legend += (f"<p>Over {len(result.seeds)} seeds ({result.seeds[0]}..{result.seeds[-1]}, the same on both "
                   "sides): goodput and p99 are the mean ±half of the 95% interval (Student t); the other columns "
                   "are the first seed's. A side is better only where the 95% interval of B - A (paired t test) "
                   "excludes 0 and the difference passes the noise threshold; else tie.</p>")
    return legend + f"<table class='data'>{head}{''.join(rows)}</table>"


def verdicts_html(result: CompareResult) -> str:
    """Per scenario, each figure its file declares, A, B and the one-line verdict."""
    ca, cb = SIDE_COLORS[0], SIDE_COLORS[1]
    seeded = _seeded(result)
    rows = []
    for w in result.scenarios:
        sv = result.verdicts.get(w)
        if sv is None or not sv.answers:
            continue
        for i, v in enumerate(sv.answers):
            name = f"<td class='l' rowspan='{len(sv.answers)}'>{_html.escape(w)}</td>" if i == 0 else ""
            color = {Winner.A: ca, Winner.B: cb}.get(v.winner)
            verdict = _html.escape(verdict_text(result, v))
            verdict = f"<b style='color:{color}'>{verdict}</b>" if color else verdict
            diff = f"<td>{_html.escape(diff_text(v))}</td>" if seeded else ""
            rows.append(f"<tr>{name}<td class='l'>{_html.escape(v.label)}</td>"
                        f"<td>{_html.escape(interval_text(v, v.a_ci, v.a))}</td>"
                        f"<td>{_html.escape(interval_text(v, v.b_ci, v.b))}</td>{diff}"
                        f"<td class='l'>{verdict}</td></tr>")
    if not rows:
        return "<p>This result has no scenario verdicts (written before scenarios declared them).</p>"
    head = (f"<tr><th class='l'>scenario</th><th class='l'>figure</th><th style='color:{ca}'>A</th>"
            f"<th style='color:{cb}'>B</th>" + ("<th>B - A [95% CI], p</th>" if seeded else "")
            + "<th class='l'>better</th></tr>")
    legend = ("<p>The figures each scenario file declares as the answer to its question "
              "(<code>[[answers]]</code>); a tie is a difference within the figure's noise threshold.</p>")
    return legend + f"<table class='data'>{head}{''.join(rows)}</table>"


def sections(result: CompareResult) -> list[Section]:
    """The lead (the verdict, the goodput chart, a link to each scenario), what an interrupted
    compare covers, the overview table and the verdicts, then per
    scenario its summary numbers, time series, latency distribution and tenants (scenarios
    without saved runs: numbers only)."""
    out = [*overview_sections(result), *partial_section(result),
           Section("A vs B in every scenario", html=overview_table(result), anchor=TABLE_ANCHOR),
           Section("What each scenario asks", html=verdicts_html(result)), *live_sim_section(result)]
    for w in result.scenarios:
        if w not in result.runs:
            continue
        ra, rb = result.run_pair(w)
        sides = [Side(f"A: {result.a}", ra, SIDE_COLORS[0]), Side(f"B: {result.b}", rb, SIDE_COLORS[1])]
        lines = verdict_lines(result, w) + [line for line in [ceiling_line(result, w)] if line]
        if lines:
            items = "".join(f"<li>{_html.escape(line)}</li>" for line in lines)
            out.append(Section(f"{w}: verdict", html=f"<ul>{items}</ul>", anchor=scenario_anchor(w)))
        out.append(Section(f"{w}: summary", html=summary_table(sides), anchor=None if lines else scenario_anchor(w)))
        out.extend(run_sections(sides, prefix=f"{w}: "))
    return out
