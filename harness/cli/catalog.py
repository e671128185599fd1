"""`harness targets`, `harness workloads` and `harness report`: what exists, and results rendered again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from harness.cli.common import HTML, existing_file, fail, out
from targets.config import TargetConfig
from targets.flaws import FLAWS
from targets.spec import base_names
from workloads.loader import load_suite, load_workload, scenario_names, suite_names


def targets(knobs: bool = typer.Option(False, "--knobs", help="Also list every knob with its naive default.")) -> None:
    """List target bases, the flaw catalogue, and (with --knobs) every knob."""
    out.print(f"bases: {', '.join(base_names())}   spec: BASE[+FLAW|-FLAW]...[:KEY=VALUE,...] or a .toml file")
    t = Table(title="flaws (hardened+ID puts one back; naive-ID fixes one)", header_style="bold")
    t.add_column("id", no_wrap=True)
    t.add_column("doc item")
    t.add_column("exposed by")
    t.add_column("fix", overflow="fold")
    for f in FLAWS:
        t.add_row(f.id, f.doc_item, ", ".join(f.exposed_by), f.fix)
    out.print(t)
    if knobs:
        k = Table(title="knobs (naive defaults)", header_style="bold")
        k.add_column("knob", no_wrap=True)
        k.add_column("default")
        k.add_column("meaning", overflow="fold")
        defaults = TargetConfig().model_dump(mode="json")
        for name, field in TargetConfig.model_fields.items():
            k.add_row(name, json.dumps(defaults[name]), field.description or "")
        out.print(k)


def workloads() -> None:
    """List built-in workloads and suites."""
    t = Table(title="workloads", header_style="bold")
    t.add_column("name", no_wrap=True)
    t.add_column("s", justify="right")
    t.add_column("peak rps", justify="right")
    t.add_column("exposes / description", overflow="fold")
    for name in scenario_names():
        wl = load_workload(name)
        t.add_row(name, f"{wl.duration_s:g}", f"{wl.peak_rps:,.0f}", f"{', '.join(wl.exposes) or '-'}: {wl.description}")
    out.print(t)
    for s in suite_names():
        out.print(f"suite {s}: {', '.join(load_suite(s))}")


def report(
    files: List[Path] = typer.Argument(..., help="Result files (run, compare, rank, ...).",
                                       callback=existing_file("RESULT")),
    html: Optional[Path] = HTML,
) -> None:
    """Render saved results again (terminal, and HTML with --html)."""
    from harness.results import load_result
    from reports.registry import view

    loaded = []
    for f in files:
        try:
            loaded.append(load_result(f))
        except ValueError as exc:
            fail(str(exc))
    for result in loaded:
        view(result.kind).render(result, out)
    if html is not None:
        from reports.page import write_html

        write_html(loaded, html)
        out.print(f"html: {html}", highlight=False)
