"""The alerts view: the generated rules, and per scenario which rule fires first and how soon.

Reads only `harness.results.alerts.AlertsResult`; every time in it was
measured by `harness.analysis.alerts.days`.
"""

from __future__ import annotations

import html as _html
from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.alerts import AlertsResult, ScenarioAlerts
from reports.page import Section

__all__ = ["agreement_rows", "fired_lines", "first_row_line", "render", "scenario_rows", "sections", "title"]

_HEAD = ("scenario", "onset", "first alert", "delay", "fired (first at)")


def title(result: AlertsResult) -> str:
    return f"Alert rules for {result.target}: proven on {len(result.scenarios)} scenario(s) in {result.mode}"


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:g} s"


def scenario_rows(result: AlertsResult) -> list[tuple[str, ...]]:
    """One row per scenario: a calm day lists any false alarm; a bad day without an onset is bad throughout."""
    rows: list[tuple[str, ...]] = []
    for s in result.scenarios:
        fired = ", ".join(f"{f.rule} ({_s(f.first_s)})" for f in s.fired) or "none"
        onset = "calm" if s.calm else ("whole run" if s.onset_s is None else _s(s.onset_s))
        first = s.first_rule or ("none" if s.calm or s.onset_s is None else "NONE")
        rows.append((s.scenario, onset, first, _s(s.delay_s) if s.onset_s is not None else "-", fired))
    return rows


def _calm_alarms(result: AlertsResult) -> list[ScenarioAlerts]:
    return [s for s in result.scenarios if s.calm and s.fired]


def fired_lines(s: ScenarioAlerts) -> str:
    """The rules that fired on a scenario, one a line in the order they first fired, the first
    alert marked '*' (a bad day no rule caught says NONE first)."""
    missed = ["NONE after the onset"] if not s.calm and s.onset_s is not None and s.first_rule is None else []
    fired = sorted(s.fired, key=lambda f: (f.first_s is None, f.first_s or 0.0))
    return "\n".join(missed + [f"{'*' if f.rule == s.first_rule else ' '} {f.rule} {_s(f.first_s)}"
                                for f in fired]) or "none"


_AGREE_HEAD = ("scenario", "rule", "evaluator", "Prometheus", "difference", "within")


def agreement_rows(result: AlertsResult) -> list[tuple[str, ...]]:
    """Live with Prometheus: per scenario and rule that fired either way, its first firing by the
    project's evaluator and by Prometheus (s since the run began)."""
    rows: list[tuple[str, ...]] = []
    for s in result.scenarios:
        for a in s.agreement:
            if a.evaluator_s is None and a.prometheus_s is None:
                continue
            diff = "-" if a.difference_s is None else f"{a.difference_s:+.3g} s"
            rows.append((s.scenario, a.rule, _s(a.evaluator_s), _s(a.prometheus_s), diff,
                         f"{'yes' if a.within else 'NO'} (±{a.tolerance_s:g} s)"))
    return rows


def _prometheus_lines(result: AlertsResult) -> list[str]:
    lines = []
    for s in result.scenarios:
        p = s.prometheus
        if p is None:
            continue
        if p.error is not None:
            lines.append(f"{s.scenario}: Prometheus gave no figures ({p.error})")
            continue
        fired = ", ".join(f"{f.rule} ({_s(f.first_s)})" for f in p.fired) or "nothing"
        lines.append(f"{s.scenario}: Prometheus {p.version} scraping {p.scraped} every {p.interval_s:g} s "
                     f"({p.scrapes_ok} of {p.scrapes} scrapes answered) reported firing: {fired}")
    return lines


def render(result: AlertsResult, console: Console) -> None:
    console.print(f"[bold]{title(result)}[/]  (an hour of the SRE workbook = {result.hour_s:g} s; "
                  f"objective {result.objective:g})")
    rules = Table(box=box.SIMPLE_HEAD)
    for col in ("rule", "severity", "for"):
        rules.add_column(col, no_wrap=True)
    rules.add_column("summary", overflow="fold")
    for r in result.rules:
        rules.add_row(r.name, r.severity, f"{r.for_s:g} s", r.summary)
    console.print(rules)
    if result.leading:
        console.print(first_row_line(result), highlight=False)
    if result.scenarios:
        # The rule names are long: one a line in their own column keeps the table in 80 columns.
        t = Table(box=box.SIMPLE_HEAD)
        for col in ("scenario", "onset", "delay", "fired (first at)"):
            t.add_column(col, no_wrap=True)
        for s in result.scenarios:
            onset = "calm" if s.calm else ("whole run" if s.onset_s is None else _s(s.onset_s))
            t.add_row(s.scenario, onset, _s(s.delay_s) if s.onset_s is not None else "-", fired_lines(s))
        console.print(t)
        console.print("*: the first alert; delay: from the onset to it", style="dim", highlight=False)
        calm = _calm_alarms(result)
        names = ", ".join(s.scenario for s in result.scenarios if s.calm)
        if names:
            console.print(f"calm days ({names}): " + ("no rule fired" if not calm else
                                                      "rules FIRED on " + ", ".join(s.scenario for s in calm)))
        for line in _prometheus_lines(result):
            console.print(line, highlight=False)
        rows = agreement_rows(result)
        if rows:
            t = Table(title="first firing (s since the run began): the project's evaluator and Prometheus",
                      box=box.SIMPLE_HEAD)
            for col in _AGREE_HEAD[1:]:
                t.add_column(col, no_wrap=True)
            for row in rows:
                t.add_row(*row[1:])
            console.print(t)
    for f in result.files:
        console.print(f"wrote {f}", highlight=False)


def first_row_line(result: AlertsResult) -> str:
    """The dashboard's first row: each signal, the bad days it caught and its median delay, and by what."""
    parts = []
    for m in result.leading:
        delay = f", median {m.median_delay_s:g} s" if m.median_delay_s is not None else ""
        parts.append(f"{m.signal} ({m.why}: caught {len(m.detected)} bad day(s){delay})")
    return f"dashboard first row: {'; '.join(parts)}; chosen by {result.leading_source}"


def _table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    cells = "".join(f"<th>{_html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def sections(result: AlertsResult) -> list[Section]:
    rules = [(r.name, r.severity, f"{r.for_s:g} s", r.expr) for r in result.rules]
    out = [Section("Alert rules", html=_table(("rule", "severity", "for", "expr"), rules),
                   note=f"Windows scaled so the SRE workbook's hour is {result.hour_s:g} s.")]
    if result.leading:
        out.append(Section("The dashboard's first row", html=f"<p>{_html.escape(first_row_line(result))}</p>"))
    if result.scenarios:
        out.append(Section("When each rule fires, per scenario", html=_table(_HEAD, scenario_rows(result)),
                           note="delay: from the disturbance's onset to the first rule firing at or after it"))
    rows = agreement_rows(result)
    if rows:
        out.append(Section("The project's evaluator beside a real Prometheus (live)", html=_table(_AGREE_HEAD, rows),
                           note=" ".join(_prometheus_lines(result))))
    return out
