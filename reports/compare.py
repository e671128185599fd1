"""The view of a `compare` result: A vs B over the same workloads, terminal and HTML.

One group of charts per scenario, A and B overlaid on the same axes in the
same colours throughout (A warm, B cool; offered load grey, since both sides
get the same arrivals). Which side won is the result's own verdict
(`CompareResult.winners()`); this module only says it.
"""

from __future__ import annotations

import html as _html

from rich.console import Console
from rich.table import Table

from harness.results.compare import CompareResult, Winner
from harness.results.run import RunSummary
from reports.charts import SIDE_COLORS
from reports.fmt import fmt_pct, fmt_s
from reports.page import Section
from reports.run import run_sections, summary_table
from reports.run_charts import Side

__all__ = ["overview_table", "render", "sections", "title"]


def title(result: CompareResult) -> str:
    return (f"Compare: {result.a} (A) vs {result.b} (B), {len(result.scenarios)} scenario(s), "
            f"seed {result.seed}")


def _amp(s: RunSummary) -> str:
    return "-" if s.amplification is None else f"{s.amplification:.2f}"


def _recovery(s: RunSummary) -> str:
    r = s.recovery
    if r.disturbance_end_s is None:
        return "-"
    return "never" if r.recovered_after_s is None else f"{r.recovered_after_s:.1f} s"


# -- terminal ---------------------------------------------------------------------------------

def render(result: CompareResult, console: Console) -> None:
    """One row per scenario: goodput, p99 and amplification of A and B, and who won."""
    t = Table(title=f"{result.a} (A) vs {result.b} (B)", header_style="bold")
    t.add_column("scenario")
    for col in ("goodput A", "goodput B", "p99 A", "p99 B", "amp A/B"):
        t.add_column(col, justify="right")
    t.add_column("win", justify="center")
    winners = result.winners()
    for name in result.scenarios:
        sa, sb = result.pair(name)
        mark = {Winner.A: "[green]A[/]", Winner.B: "[green]B[/]", Winner.TIE: "="}[winners[name]]
        t.add_row(name, fmt_pct(sa.goodput_ratio), fmt_pct(sb.goodput_ratio),
                  fmt_s(sa.latency_s.p99), fmt_s(sb.latency_s.p99), f"{_amp(sa)}/{_amp(sb)}", mark)
    console.print(t)
    wins = list(winners.values())
    console.print(
        f"goodput = share of unique requests answered within the SLO; p99 over all "
        f"requests ('never' = the 1% tail was never answered); amp = attempts per request.\n"
        f"A won {wins.count(Winner.A)}, B won {wins.count(Winner.B)} of {len(result.scenarios)} scenarios."
    )


# -- HTML ---------------------------------------------------------------------------------------

def overview_table(result: CompareResult) -> str:
    """Per scenario: goodput, p99, attempts per request, recovery and wasted
    GPU time of A and B, and which side won (goodput first, then p99)."""
    ca, cb = SIDE_COLORS[0], SIDE_COLORS[1]
    head = ("<tr><th class='l' rowspan='2'>scenario</th><th colspan='2'>goodput (within SLO)</th>"
            "<th colspan='2'>p99 latency</th><th colspan='2'>attempts / request</th>"
            "<th colspan='2'>recovery</th><th colspan='2'>wasted GPU-s</th><th rowspan='2'>better</th></tr><tr>"
            + f"<th style='color:{ca}'>A</th><th style='color:{cb}'>B</th>" * 5 + "</tr>")
    marks = {Winner.A: f"<b style='color:{ca}'>A</b>", Winner.B: f"<b style='color:{cb}'>B</b>", Winner.TIE: "tie"}
    winners = result.winners()
    rows = []
    for w in result.scenarios:
        sa, sb = result.pair(w)
        cells = [fmt_pct(sa.goodput_ratio), fmt_pct(sb.goodput_ratio),
                 fmt_s(sa.latency_s.p99), fmt_s(sb.latency_s.p99), _amp(sa), _amp(sb),
                 _recovery(sa), _recovery(sb), f"{sa.gpu.wasted_gpu_s:,.1f}", f"{sb.gpu.wasted_gpu_s:,.1f}"]
        rows.append(f"<tr><td class='l'>{_html.escape(w)}</td>"
                    + "".join(f"<td>{_html.escape(c)}</td>" for c in cells) + f"<td>{marks[winners[w]]}</td></tr>")
    a, b = _html.escape(result.a), _html.escape(result.b)
    legend = (f"<p>A = <b style='color:{ca}'>{a}</b>, B = <b style='color:{cb}'>{b}</b>; "
              "same seed and the same arrivals on both sides. p99 over all requests ('never': the slowest 1% were "
              "never answered); recovery: seconds from the disturbance's end until every later window is back "
              "to 99% goodput.</p>")
    return legend + f"<table class='data'>{head}{''.join(rows)}</table>"


def sections(result: CompareResult) -> list[Section]:
    """The overview, then per scenario its summary numbers, time series,
    latency distribution and tenants (scenarios without saved runs: numbers only)."""
    out = [Section("A vs B in every scenario", html=overview_table(result))]
    for w in result.scenarios:
        if w not in result.runs:
            continue
        ra, rb = result.run_pair(w)
        sides = [Side(f"A: {result.a}", ra, SIDE_COLORS[0]), Side(f"B: {result.b}", rb, SIDE_COLORS[1])]
        out.append(Section(f"{w}: summary", html=summary_table(sides)))
        out.extend(run_sections(sides, prefix=f"{w}: "))
    return out
