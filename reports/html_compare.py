"""HTML sections for "compare" documents: A vs B, one group of charts per
scenario, A and B overlaid on the same axes in the same colours throughout
(A warm, B cool; offered load grey, since both sides get the same arrivals)."""

from __future__ import annotations

import html as _html
from typing import Any

from reports.console import fmt_pct, fmt_s, winner
from reports.page import Section
from reports.html_run import SIDE_COLORS, Side, run_sections, summary_table


def side_labels(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["a"], doc["b"]


def _pair(doc: dict[str, Any], w: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run documents of A and B in scenario `w`."""
    a, b = side_labels(doc)
    runs = doc["runs"][w]
    return runs[a] if a in runs else runs["A"], runs[b] if b in runs else runs["B"]


def overview_table(doc: dict[str, Any]) -> str:
    """Per scenario: goodput, p99, attempts per request, recovery and wasted
    GPU time of A and B, and which side won (goodput first, then p99)."""
    a, b = side_labels(doc)
    ca, cb = SIDE_COLORS[0], SIDE_COLORS[1]
    head = ("<tr><th class='l' rowspan='2'>scenario</th><th colspan='2'>goodput (within SLO)</th>"
            "<th colspan='2'>p99 latency</th><th colspan='2'>attempts / request</th>"
            "<th colspan='2'>recovery</th><th colspan='2'>wasted GPU-s</th><th rowspan='2'>better</th></tr><tr>"
            + f"<th style='color:{ca}'>A</th><th style='color:{cb}'>B</th>" * 5 + "</tr>")
    rows = []
    for w, pair in doc["scenarios"].items():
        sa = pair[a] if a in pair else pair["A"]
        sb = pair[b] if b in pair else pair["B"]
        win = {-1: f"<b style='color:{ca}'>A</b>", 1: f"<b style='color:{cb}'>B</b>", 0: "tie"}[winner(sa, sb)]

        def rec(s: dict[str, Any]) -> str:
            r = s.get("recovery") or {}
            if r.get("disturbance_end_s") is None:
                return "-"
            return "never" if r.get("recovered_after_s") is None else f"{r['recovered_after_s']:.1f} s"

        cells = [fmt_pct(sa["goodput_ratio"]), fmt_pct(sb["goodput_ratio"]),
                 fmt_s(sa["latency_s"]["p99"]), fmt_s(sb["latency_s"]["p99"]),
                 f"{sa['amplification']:.2f}", f"{sb['amplification']:.2f}", rec(sa), rec(sb),
                 f"{sa['gpu']['wasted_gpu_s']:,.1f}", f"{sb['gpu']['wasted_gpu_s']:,.1f}"]
        rows.append(f"<tr><td class='l'>{_html.escape(w)}</td>"
                    + "".join(f"<td>{_html.escape(c)}</td>" for c in cells) + f"<td>{win}</td></tr>")
    legend = (f"<p>A = <b style='color:{ca}'>{_html.escape(a)}</b>, B = <b style='color:{cb}'>{_html.escape(b)}</b>; "
              "same seed and the same arrivals on both sides. p99 over all requests ('never': the slowest 1% were "
              "never answered); recovery: seconds from the disturbance's end until every later window is back "
              "to 99% goodput.</p>")
    return legend + f"<table class='data'>{head}{''.join(rows)}</table>"


def sections(doc: dict[str, Any]) -> list[Section]:
    """Sections of one compare document: the overview, then per scenario its
    summary numbers, time series, latency distribution and tenants."""
    a, b = side_labels(doc)
    out = [Section("A vs B in every scenario", html=overview_table(doc))]
    for w in doc["scenarios"]:
        ra, rb = _pair(doc, w)
        sides = [Side(f"A: {a}", ra, SIDE_COLORS[0]), Side(f"B: {b}", rb, SIDE_COLORS[1])]
        out.append(Section(f"{w}: summary", html=summary_table(sides)))
        out.extend(run_sections(sides, prefix=f"{w}: "))
    return out
