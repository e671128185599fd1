"""`harness targets`, `harness workloads` and `harness report`: what exists, and results rendered again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from harness.cli.common import HTML, existing_file, fail, out
from targets.config import KNOB_GROUPS, KNOBS, TargetConfig
from targets.flaws import FLAWS
from targets.spec import base_names
from workloads.loader import (ConfigError, load_suite_config, load_workload, read_toml, resolve_scenario_path,
                              scenario_names, suite_names)


def targets(knobs: bool = typer.Option(False, "--knobs", help="Also list every knob, group by group, with "
                                        "where it applies (sim, live, both) and its naive default.")) -> None:
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
        defaults = TargetConfig().model_dump(mode="json")
        out.print("knobs by the component that reads them, naive defaults; applies: the runs a knob changes "
                  "(sim, live or both)")
        for group in KNOB_GROUPS:
            k = Table(title=f"{group.title}: read by {group.read_by}", title_justify="left", header_style="bold")
            k.add_column("knob", no_wrap=True)
            k.add_column("applies", no_wrap=True)
            k.add_column("default")
            k.add_column("meaning", overflow="fold")
            for name, field in group.model_fields.items():
                k.add_row(name, KNOBS[name].where.value, json.dumps(defaults[name]), field.description or "")
            out.print(k)
    from harness.cli.frameworks import render_frameworks

    render_frameworks(out, knobs)
    out.print("every flaw and knob in full: docs/targets.md; the framework targets: docs/frameworks.md", style="dim")


def workloads(
    name: Optional[str] = typer.Argument(None, help="A built-in workload name or TOML file: print it, keys explained."),
    schema: bool = typer.Option(False, "--schema", help="Print the JSON Schema of workload files (for editors)."),
) -> None:
    """List built-in workloads and suites; or print one workload with its keys explained."""
    if schema:
        from harness.docs.workload_page import schema_text

        sys.stdout.write(schema_text())
        return
    if name is not None:
        _explain(name)
        return
    t = Table(title="workloads", header_style="bold")
    t.add_column("name", no_wrap=True)
    t.add_column("s", justify="right")
    t.add_column("peak rps", justify="right")
    t.add_column("exposes / description", overflow="fold")
    for scenario in scenario_names():
        wl = load_workload(scenario)
        t.add_row(scenario, f"{wl.duration_s:g}", f"{wl.peak_rps:,.0f}",
                  f"{', '.join(wl.exposes) or '-'}: {wl.description}")
    out.print(t)
    for s in suite_names():
        out.print(f"suite {s}: {load_suite_config(s).contents()}")
    out.print("one workload, keys explained: harness workloads NAME; every key: docs/workloads.md", style="dim")


def _explain(name: str) -> None:
    """One workload as its file says it, each key with its unit and meaning (docs/workloads.md)."""
    from harness.docs.workload_page import explain

    try:
        wl = load_workload(name)
        path = resolve_scenario_path(name)
    except ConfigError as exc:
        fail(str(exc))
    out.print(f"[bold]{wl.name}[/]  {path}  ({wl.duration_s:g} s, peak {wl.peak_rps:,.0f} requests/s)", highlight=False)
    t = Table(header_style="bold", show_lines=False)
    t.add_column("key", no_wrap=True)
    t.add_column("value", overflow="fold")
    t.add_column("unit")
    t.add_column("meaning", overflow="fold")
    for key, value, unit, meaning in explain(read_toml(path)):
        t.add_row(key, value, unit, meaning)
    out.print(t)
    out.print("keys not set take their defaults; every key: docs/workloads.md", style="dim")


def report(
    files: List[Path] = typer.Argument(..., help="Result files (run, compare, rank, ...).",
                                       callback=existing_file("RESULT")),
    html: Optional[Path] = HTML,
    csv: Optional[Path] = typer.Option(None, "--csv", help="Also write each result's tables as CSV files "
                                       "(STEM.TABLE.csv, STEM: the result file's name) into this folder."),
) -> None:
    """Render saved results again (terminal, HTML with --html, CSV tables with --csv)."""
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
        from reports.page import html_written, write_html

        out.print(html_written(write_html(loaded, html)), highlight=False)
    if csv is not None:
        from reports.csv_tables import write_csv

        for f, result in zip(files, loaded):
            written = write_csv(result, csv, f.stem)
            out.print(f"csv: {len(written)} table(s) of {f} in {csv}/{f.stem}.*.csv", highlight=False)
