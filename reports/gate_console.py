"""Gate documents for people and for CI systems: a terminal table (80 columns),
JUnit XML (one test case per check) and a Markdown table (for a pull request
comment or a CI job summary). All read only the finished gate document.
"""

from __future__ import annotations

import math
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from rich import box
from rich.console import Console
from rich.table import Table

from reports.console import fmt_s


def value(x: float | None, key: str, paired: bool) -> str:
    """A measured value or threshold as people read it (null = never answered)."""
    if x is None:
        return "never" if any(p.endswith("_s") for p in key.split(".")) else "-"
    if isinstance(x, float) and math.isinf(x):
        return "never" if x > 0 else "-inf"
    if paired:
        return f"{x:.3g}x"
    if any(p.endswith("_s") for p in key.split(".")):
        return fmt_s(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _status(c: dict[str, Any]) -> str:
    return "skip" if c.get("skipped") else ("pass" if c["passed"] else "FAIL")


def render_gate(doc: dict[str, Any], console: Console) -> None:
    checks = doc["checks"]
    failed = [c for c in checks if not c["passed"]]
    singles = {c["target"] for c in checks if "/" not in c["target"]}
    main = next(iter(singles)) if len(singles) == 1 else None
    t = Table(title=f"gate {doc['gate_file']}" + (f" on {main}" if main else ""),
              box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    t.add_column("")
    t.add_column("scenario", no_wrap=True)
    t.add_column("check", overflow="fold", min_width=22)
    t.add_column("measured", justify="right", no_wrap=True)
    t.add_column("note", overflow="fold")
    for c in checks:
        paired = "/" in c["target"]
        mark = {"pass": "[green]pass[/]", "FAIL": "[bold red]FAIL[/]", "skip": "[yellow]skip[/]"}[_status(c)]
        note = "; ".join(x for x in (("" if c["target"] == main or paired else c["target"]), c["note"]) if x)
        shown = "-" if c.get("skipped") else value(c["measured"], c["key"], paired)
        t.add_row(mark, c["scenario"], c["check"], shown, note)
    console.print(t)
    verdict = "[bold green]PASSED[/]" if doc["passed"] else "[bold red]FAILED[/]"
    skipped = sum(1 for c in checks if c.get("skipped"))
    wall = doc.get("wall_s")
    console.print(f"{verdict}: {len(checks) - len(failed) - skipped} passed, {len(failed)} failed"
                  + (f", {skipped} skipped" if skipped else "") + f" of {len(checks)} checks"
                  + (f" ({wall:.1f} s)" if wall else "") + f"; sim mode, seed {doc.get('seed')}.", highlight=False)


def junit_xml(doc: dict[str, Any]) -> str:
    """JUnit XML: one <testcase> per check, classname = scenario.target."""
    checks = doc["checks"]
    failures = sum(1 for c in checks if not c["passed"])
    skipped = sum(1 for c in checks if c.get("skipped"))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites tests="{len(checks)}" failures="{failures}" skipped="{skipped}">',
             f'  <testsuite name={quoteattr("harness gate " + str(doc["gate_file"]))} tests="{len(checks)}" '
             f'failures="{failures}" skipped="{skipped}" time="{doc.get("wall_s") or 0:.3f}">']
    for c in checks:
        paired = "/" in c["target"]
        detail = (f"measured {value(c['measured'], c['key'], paired)}, threshold "
                  f"{c['op']} {value(c['threshold'], c['key'], paired)}" + (f"; {c['note']}" if c["note"] else ""))
        name = quoteattr(c["check"])
        cls = quoteattr(f"{c['scenario']}.{c['target']}")
        if c.get("skipped"):
            lines.append(f"    <testcase classname={cls} name={name}><skipped message={quoteattr(c['note'])}/></testcase>")
        elif c["passed"]:
            lines.append(f"    <testcase classname={cls} name={name}><system-out>{escape(detail)}</system-out></testcase>")
        else:
            lines.append(f"    <testcase classname={cls} name={name}><failure message={quoteattr(detail)}>"
                         f"{escape(detail)}</failure></testcase>")
    lines += ["  </testsuite>", "</testsuites>", ""]
    return "\n".join(lines)


def markdown(doc: dict[str, Any]) -> str:
    """A GitHub-flavoured Markdown report: verdict line, then one row per check."""
    checks = doc["checks"]
    failed = sum(1 for c in checks if not c["passed"])
    skipped = sum(1 for c in checks if c.get("skipped"))
    head = (f"### Performance gate `{doc['gate_file']}`: {'passed' if doc['passed'] else 'FAILED'}\n\n"
            f"{len(checks) - failed - skipped} of {len(checks)} checks passed"
            + (f", {skipped} skipped" if skipped else "") + f" (sim mode, seed {doc.get('seed')}).\n\n"
            "| | scenario | target | check | measured | note |\n|---|---|---|---|---:|---|\n")
    rows = []
    for c in checks:
        paired = "/" in c["target"]
        mark = {"pass": "✅", "FAIL": "❌", "skip": "⏭"}[_status(c)]
        shown = "-" if c.get("skipped") else value(c["measured"], c["key"], paired)
        cells = [mark, c["scenario"], c["target"], f"`{c['check']}`", shown, c["note"]]
        rows.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    return head + "\n".join(rows) + "\n"
