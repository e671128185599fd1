"""The fleet view: LLM fleets behind routers, day by day, the verdicts (two fleets) and the ranking.

Reads only `harness.results.fleet.FleetResult`; the figures and winners are decided
there, this only words them, in 80 columns.
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.compare import FigureVerdict, Winner
from harness.results.fleet import FleetResult, FleetRun
from reports.fmt import fmt_n, fmt_pct, fmt_s, fmt_x
from reports.page import Section

__all__ = ["render", "run_rows", "sections", "title", "verdict_rows"]

RUN_HEADERS = ("fleet", "day", "good/s", "TTFT50", "p99", "hit", "worst", "lost")
VERDICT_HEADERS = ("figure", "A", "B", "better")


def title(result: FleetResult) -> str:
    return f"LLM fleets: {' vs '.join(result.settings.fleets)}"


def _router(run: FleetRun) -> str:
    """The fleet's label less its 'llm-fleet:' prefix, cut to fit."""
    label = (run.fleet.partition(":")[2] or run.fleet).replace("router=", "")
    return label if len(label) <= 14 else label[:13] + "…"


def run_rows(result: FleetResult) -> list[tuple[str, ...]]:
    return [(_router(r), r.day, fmt_n(r.goodput_rps), fmt_s(r.ttft_s.p50), fmt_s(r.ttft_s.p99),
             fmt_pct(r.prefix_hit_rate, 0), fmt_s(r.max_replica_ttft_p99_s), str(r.lost)) for r in result.runs]


def _value(v: FigureVerdict, x: float | None) -> str:
    if v.unit == "s":
        return fmt_s(x)
    if v.unit == "share":
        return fmt_pct(x)
    return fmt_n(x)


def verdict_rows(verdicts: list[FigureVerdict]) -> list[tuple[str, ...]]:
    word = {Winner.A: "A", Winner.B: "B", Winner.TIE: "tie"}
    return [(v.label, _value(v, v.a), _value(v, v.b), word[v.winner]) for v in verdicts]


def _ranking_lines(result: FleetResult) -> list[str]:
    lines = []
    for k, r in enumerate(result.ranking, 1):
        lines.append(f"{k}. {r.fleet}: goodput {fmt_n(r.goodput_rps)} req/s over the days ({fmt_x(r.of_best)} of the "
                     f"best), prefix hit rate {fmt_pct(r.prefix_hit_rate)}, worst TTFT p99 "
                     f"{fmt_s(r.worst_ttft_p99_s)}")
    return lines


def _legend(result: FleetResult) -> str:
    s = result.settings
    rate = f"{s.rate_rps:g} req/s" if s.rate_rps is not None else "each day's own rate"
    mode = ("live on loopback (each fleet's replicas and router), beside the sim of the same schedule; ranked by the live runs"
            if s.mode == "live" else "sim")
    return (f"{mode}, seed {s.seed}, {rate}; SLO TTFT {s.slo_ttft_s:g} s and TPOT {s.slo_tpot_s:g} s. hit: prompt tokens "
            "served from the prefix cache; worst: the worst replica's TTFT p99; lost: requests a lost replica held.")


def render(result: FleetResult, console: Console) -> None:
    t = Table(title=title(result), box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    for h in RUN_HEADERS:
        t.add_column(h, justify="left" if h in ("fleet", "day") else "right", no_wrap=True)
    for row in run_rows(result):
        t.add_row(*row)
    console.print(t)
    for day, verdicts in result.verdicts.items():
        v = Table(title=f"{day}: B against A", box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
        for h in VERDICT_HEADERS:
            v.add_column(h, justify="left" if h == "figure" else "right", no_wrap=True)
        for row in verdict_rows(verdicts):
            v.add_row(*row)
        console.print(v)
    for line in _ranking_lines(result):
        console.print(line, highlight=False)
    console.print(_legend(result), style="dim", highlight=False)


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{_html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='data'><tr>{head}</tr>{body}</table>"


def sections(result: FleetResult) -> list[Section]:
    out = [Section("Fleets day by day", html=_table(RUN_HEADERS, run_rows(result)), note=_legend(result))]
    for day, verdicts in result.verdicts.items():
        out.append(Section(f"{day}: B against A", html=_table(VERDICT_HEADERS, verdict_rows(verdicts))))
    out.append(Section("Ranking", html="<ol>" + "".join(f"<li>{_html.escape(line.partition('. ')[2])}</li>"
                                                        for line in _ranking_lines(result)) + "</ol>"))
    return out
