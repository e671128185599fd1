"""The canary view: per plan and canary day, how often it rolled back, how soon, and how many saw the canary.

Reads only `harness.results.canary.CanaryResult`. A rollback on a day whose
canary is good is a false rollback; a bad canary promoted is a miss.
"""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.canary import CanaryCell, CanaryResult
from reports.page import Section

__all__ = ["cell_row", "render", "sections", "title"]

_HEAD = ("plan", "canary day", "should", "P(rollback)", "P(promote)", "median decision", "median blast radius",
         "wrong-version answers", "failed checks")


def title(result: CanaryResult) -> str:
    live = " (live: served torch models)" if result.mode == "live" else ""
    return f"Canary rollouts on {result.target}{live}: {len(result.plans)} plan(s), {result.seeds} seed(s) a day"


def _checks(cell: CanaryCell) -> str:
    counts: dict[str, int] = {}
    for r in cell.runs:
        for f in r.failed:
            counts[f] = counts.get(f, 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "-"


def cell_row(cell: CanaryCell) -> tuple[str, ...]:
    decision = "-" if cell.median_decision_s is None else f"{cell.median_decision_s:g} s"
    blast = "-" if cell.median_blast_radius is None else f"{cell.median_blast_radius:,.0f}"
    return (cell.plan, cell.day, "roll back" if cell.bad else "promote", f"{cell.rollback_share:.0%}",
            f"{cell.promote_share:.0%}", decision, blast, f"{cell.wrong_version:,}", _checks(cell))


def _false_rollbacks(result: CanaryResult) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for c in result.cells:
        if not c.bad:
            out.setdefault(c.plan, []).append(c.rollback_share)
    return {p: sum(v) / len(v) for p, v in out.items()}


# The terminal's columns: one table per plan, so the plan's name is its title and 80 columns hold the rest.
_CONSOLE_HEAD = ("canary day", "rolled\nback", "pro-\nmoted", "decided", "exposed", "wrong\nversion")


def render(result: CanaryResult, console: Console) -> None:
    console.print(f"[bold]{title(result)}[/]")
    for plan in result.plans:
        t = Table(box=box.SIMPLE_HEAD, title=f"plan {plan}", title_justify="left", pad_edge=False)
        for col in _CONSOLE_HEAD:
            t.add_column(col, no_wrap=True, justify="left" if col == "canary day" else "right")
        failed = []
        for c in result.cells:
            if c.plan == plan:
                row = cell_row(c)
                t.add_row(row[1], *row[3:-1])
                failed += [f"{c.day}: {row[-1]}"] if row[-1] != "-" else []
        console.print(t)
        if failed:
            console.print("  checks that failed (runs): " + "; ".join(failed), highlight=False)
    console.print("The good days' canaries should be promoted, every other one rolled back. decided, exposed: medians over"
                  " seeds of the time to decision and of the requests the canary answered first; wrong version: answers from the other version's cached output.",
                  highlight=False)
    for plan, share in _false_rollbacks(result).items():
        console.print(f"{plan}: false-rollback rate {share:.1%} (good canaries rolled back)", highlight=False)


def sections(result: CanaryResult) -> list[Section]:
    head = "".join(f"<th>{_html.escape(h)}</th>" for h in _HEAD)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(x)}</td>" for x in cell_row(c)) + "</tr>"
                   for c in result.cells)
    note = "; ".join(f"{p}: false-rollback rate {s:.1%}" for p, s in _false_rollbacks(result).items())
    return [Section("Rollout plans on the canary bad days", html=f"<table><thead><tr>{head}</tr></thead>"
                    f"<tbody>{body}</tbody></table>", note=note)]
