"""The review's follow-up answers in words: dashboards and alerts, and canary rollouts.

Reads only `harness.results.followups`; every verdict (bad or calm, missed,
the metrics chosen, the plan recommended) was decided by the library
(`harness.analysis.review.alerts`, `harness.analysis.review.canary`).
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.followups import AlertsAnswer, CanaryAnswer, ChosenMetric, DayDetection, RuleThreshold
from reports.page import Section
from reports.registry import view

__all__ = ["alerts_lines", "canary_lines", "day_rows", "render_alerts", "render_canary", "sections"]

NARROW_SEEDS = 20  # seeds a plan and day `harness canary` runs by default (sim)

_NAMES = {"error-ratio": "goodput SLI (share of answers not OK within the SLO)",
          "queue-delay-s": "estimated queue delay", "shed-ratio": "admission sheds (share of answers)",
          "retry-ratio": "retry rate (retries per answer)", "gpu-busy": "GPU busy", "gpus-lost": "GPUs down (share)"}


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g} s"


def _value(signal: str, x: float) -> str:
    return f"{x:.3g} s" if signal == "queue-delay-s" else f"{100 * x:.3g}%"


def _rule(signal: str, r: RuleThreshold) -> str:
    over = " and ".join(f"{_value(signal, th)} over {w:g} s" if w else f"{_value(signal, th)} now"
                        for w, th in r.conditions)
    held = f" for {r.for_s:g} s" if r.for_s else ""
    return f"{r.rule} ({r.severity}) above {over}{held}"


def _metric(i: int, m: ChosenMetric, bad_days: int) -> str:
    rules = "; ".join(_rule(m.signal, r) for r in m.rules)
    delay = f", median {_s(m.median_delay_s)} after the onset" if m.detected else ""
    return (f"{i}. {_NAMES.get(m.signal, m.signal)} ({m.why}): {rules}. It caught {len(m.detected)} of "
            f"{bad_days} bad days{delay}, first on {len(m.first_on)}.")


def _day(d: DayDetection) -> str:
    since = "the onset" if d.onset_s is not None else "the start"
    if d.first_rule is None:
        return f"{d.design}/{d.scenario}: NOTHING fired"
    return f"{d.design}/{d.scenario}: {d.first_rule} {_s(d.delay_s)} after {since}"


def alerts_lines(a: AlertsAnswer) -> list[str]:
    """The answer to "which three metrics first, and what thresholds?", with each bad day's detection."""
    bad = [d for d in a.days if d.bad]
    calm = [d for d in a.days if not d.bad]
    lines = [f"Dashboards and alerts: the rules `harness alerts` writes (the SRE workbook's hour played by "
             f"{a.hour_s:g} s, goodput objective {100 * a.objective:g}%) evaluated on {a.source}. A day is bad "
             "for a design when it has a disturbance or its goodput burns the error budget as fast as a page "
             "is set to catch. "
             "The first row of the dashboard, chosen by what caught the bad days:"]
    lines += [_metric(i, m, len(bad)) for i, m in enumerate(a.metrics, 1)]
    lines.append("Detection of each bad day (first rule, time after the disturbance's onset, or after the "
                 "start where the design is bad throughout): " + "; ".join(_day(d) for d in bad) + ".")
    if a.off_row:
        lines.append("Caught only by a rule off the first row: " + "; ".join(a.off_row) + ".")
    lines.append(f"Missed (nothing within {a.within_s:g} s): " + (", ".join(a.missed) or "none") + ".")
    lines.append("Calm days (" + ", ".join(f"{d.design}/{d.scenario}" for d in calm) + "): "
                 + ("no rule fired." if not a.false_alarms else "rules FIRED on " + ", ".join(a.false_alarms) + "."))
    return lines


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _days(c: CanaryAnswer, bad: bool) -> str:
    """The good (or bad) days that judged the plans, each as it ran: 'slow: batch time +50%' (a result
    written before days were recorded: their names)."""
    judged = dict.fromkeys(cell.day for cell in c.result.cells
                           if cell.bad is bad and cell.day != "wrong-behind-exact-cache")
    out = []
    for name in judged:
        d = c.result.days.get(name)
        if d is None:
            out.append(name)
        elif bad:
            out.append(f"{name}: {d.canary}")
        else:
            out.append(f"{name}: {d.traffic} traffic" + ("" if d.canary == "same as the baseline" else f", {d.canary}"))
    return "; ".join(out) or "none"


def _bar(c: CanaryAnswer) -> str:
    return f">= {_pct(c.min_caught)} of bad canaries rolled back, <= {_pct(c.max_false_rollback)} of good ones"


def canary_lines(c: CanaryAnswer) -> list[str]:
    """The answer to "how would you run a canary?": each plan's trade-off, the one to use, the cache case.
    Every day, setting and bar is the one that ran (the result's days, the answer's bar)."""
    mode = " live" if c.result.mode == "live" else ""
    lines = [f"Canary rollouts ({c.source}, on {c.result.target}{mode}): each plan against good canaries "
             f"({_days(c, bad=False)}: any rollback is false) and bad ones ({_days(c, bad=True)})."]
    for p in c.plans:
        lines.append(
            f"{p.plan} ({p.description}): rolled back {_pct(p.caught)} of {p.bad_runs} bad canaries, median "
            f"{_s(p.median_decision_s)} to decide, median blast radius "
            + ("-" if p.median_blast_radius is None else f"{p.median_blast_radius:,.0f}")
            + f" requests served by the bad version; false rollbacks {_pct(p.false_rollback)} of {p.good_runs} "
            f"good canaries (95% bound {_pct(p.false_rollback_high)}).")
    if c.recommended:
        lines.append(f"Recommended: {c.recommended}, the plan meeting the bar on these runs ({_bar(c)}) with the "
                     "smallest blast radius.")
    else:
        lines.append(f"Recommended: none of these plans met the bar ({_bar(c)}) on these seeds.")
    if c.result.seeds < NARROW_SEEDS:
        again = " ".join(c.result.plans) + (" --mode live" if mode else "")
        lines.append(f"Only {c.result.seeds} seed(s) a plan and day here, so the false-rollback bounds are wide: "
                     f"`harness canary {again} --seeds {NARROW_SEEDS}`, passed back with `--canary FILE`, narrows "
                     "them.")
    for cell in c.result.cells:
        if cell.day == "wrong-behind-exact-cache":
            lines.append(f"Behind the doc's exact-payload cache, {cell.plan} rolled back {_pct(cell.rollback_share)} "
                         f"of wrong canaries: {cell.wrong_version:,} answers came from the other version's cache "
                         "entries (key the cache by model version first).")
    return lines


def day_rows(a: AlertsAnswer) -> list[tuple[str, ...]]:
    return [(d.design, d.scenario, "bad" if d.bad else "calm", f"{d.run_s:.3g} s",
             "-" if d.goodput is None else f"{100 * d.goodput:.1f}%", d.first_rule or "-", _s(d.delay_s),
             ", ".join(d.fired) or "none") for d in a.days]


_DAY_HEAD = ("design", "scenario", "day", "run", "goodput", "first alert", "delay", "fired")


def render_alerts(a: AlertsAnswer, console: Console) -> None:
    for line in alerts_lines(a):
        console.print(line, highlight=False)
    # One table per design, its name the title: a design column beside the rule names would
    # not fit 80 columns (the HTML table keeps it, with every rule that fired).
    rows = day_rows(a)
    for design in dict.fromkeys(row[0] for row in rows):
        t = Table(title=design, box=box.SIMPLE_HEAD)
        for col in _DAY_HEAD[1:-1]:
            t.add_column(col, no_wrap=True)
        for row in rows:
            if row[0] == design:
                t.add_row(*row[1:-1])
        console.print(t)


def render_canary(c: CanaryAnswer, console: Console) -> None:
    for line in canary_lines(c):
        console.print(line, highlight=False)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    cells = "".join(f"<th>{_html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='data'><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def sections(alerts: AlertsAnswer | None, canary: CanaryAnswer | None) -> list[Section]:
    """The tables behind the follow-ups' words (the words are in the review's narrative)."""
    out = []
    if alerts is not None:
        out.append(Section("follow-up: when the alert rules fired, per design and scenario",
                           html=_table(_DAY_HEAD, day_rows(alerts)),
                           note="Rules evaluated in sim with the rule file's windows and for: durations; delay from "
                                "the disturbance's onset (or the run's start on a day bad throughout)."))
    if canary is not None:
        out.extend(Section(f"follow-up: {s.title}", s.figure, s.html, s.note)
                   for s in view("canary").sections(canary.result))
    return out
