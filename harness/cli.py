"""The `harness` command: parses options, calls the library, writes artifacts.

No arithmetic lives here. Every run writes a result file (under runs/ unless
--out says otherwise); `harness report` renders any result file again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from harness import result as results
from harness.compare import compare as run_compare
from harness.compare import compare_summary
from harness.jobs import SimJob
from reports.console import render_compare, render_run
from targets.config import TargetConfig
from targets.flaws import FLAWS
from targets.spec import base_names, parse_overrides, resolve_target
from workloads.loader import ConfigError, load_suite, load_workload, scenario_names, suite_durations, suite_names

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Load-test and design-review harness for batched ML inference serving.",
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

SEED = typer.Option(1, "--seed", help="One seed drives arrivals, clients and the target.")
DURATION = typer.Option(None, "--duration", help="Cut or stretch the workload to this many seconds.")
RATE = typer.Option(None, "--rate", help="Scale the workload's rates so its peak is this (req/s).")
SET = typer.Option(None, "--set", help="Target knob KEY=VALUE (repeatable).")
JSON = typer.Option(False, "--json", help="Print the summary as JSON to stdout, nothing else.")
OUT = typer.Option(None, "--out", help="Result file path (default: runs/<time>-<kind>-<label>.json).")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress display.")


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _check_mode(mode: str) -> None:
    if mode != "sim":
        try:
            from harness import live  # noqa: F401
        except ImportError:
            fail(f"mode '{mode}' is not available in this build; use --mode sim")


@app.command()
def run(
    target: str = typer.Argument(..., help="Target spec (naive, hardened+blind-retries, ...) or TOML file."),
    workload: str = typer.Option("steady", "--workload", "-w", help="Workload name or TOML file."),
    mode: str = typer.Option("sim", "--mode", help="sim (virtual time) or live (real servers)."),
    seed: int = SEED,
    duration: Optional[float] = DURATION,
    rate: Optional[float] = RATE,
    set_: Optional[List[str]] = SET,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    scale: Optional[float] = typer.Option(None, "--scale", help="live: shrink rates and fleet together (default: ~310 req/s peak)."),
    model: str = typer.Option("mlp", "--model", help="live: torch model of the GPU workers (mlp, cnn, transformer)."),
    device: str = typer.Option("auto", "--device", help="live: auto, cpu or cuda."),
    template: Optional[Path] = typer.Option(None, "--template", help="live, URL target: JSON body template ({{input}}, ...)."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="live: allow a URL target outside loopback."),
) -> None:
    """Run one target under one workload and write its result file."""
    try:
        job = SimJob(target, workload, seed, parse_overrides(set_ or []), duration, rate)
        if not (mode == "live" and "://" in target):  # a URL target has no knobs to resolve
            resolve_target(target, job.overrides)
        load_workload(workload)
    except ConfigError as exc:
        fail(str(exc))
    if mode != "sim":
        from harness.cli_live import run_live  # live mode lives in its own module

        doc = run_live(job, mode, quiet or as_json, scale=scale, model=model, device=device,
                       template=template, allow_remote=allow_remote)
    else:
        from harness.progress import sim_progress

        with sim_progress(enabled=not (quiet or as_json) and out.is_terminal, console=err) as progress:
            doc = _run_job(job, progress)
    path = results.write_atomic(out_path or results.default_path("run", f"{target}-{workload}"), doc)
    if as_json:
        sys.stdout.write(json.dumps(results._clean(doc["summary"]), indent=1) + "\n")
        return
    render_run(doc["summary"], out)
    out.print(f"result: {path}", highlight=False)


def _run_job(job: SimJob, progress) -> dict:
    from harness.sim import SimRun

    config = resolve_target(job.target, job.overrides)
    wl = load_workload(job.workload)
    factor = (job.rate_rps / wl.peak_rps) if job.rate_rps and wl.peak_rps else 1.0
    if factor != 1.0 or job.duration_s:
        wl = wl.scaled(factor, job.duration_s)
    return SimRun(config, wl, job.seed, progress).run()


@app.command()
def compare(
    a: str = typer.Argument(..., help="Target A (spec or TOML file)."),
    b: str = typer.Argument(..., help="Target B (spec or TOML file)."),
    workload: Optional[List[str]] = typer.Option(None, "--workload", "-w", help="Workload (repeatable); default: the suite."),
    suite: str = typer.Option("bad-day", "--suite", help="Suite to run when no --workload is given."),
    seed: int = SEED,
    duration: Optional[float] = DURATION,
    rate: Optional[float] = RATE,
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Knob KEY=VALUE for BOTH sides (repeatable)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core)."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    mode: str = typer.Option("sim", "--mode", help="sim (virtual time) or live (real servers, one run at a time)."),
    scale: Optional[float] = typer.Option(None, "--scale", help="live: shrink rates and fleet together."),
) -> None:
    """Run two targets side by side over a suite (same seeds, same arrivals)."""
    try:
        overrides = parse_overrides(set_ or [])
        resolve_target(a, overrides)
        resolve_target(b, overrides)
        names = list(workload) if workload else load_suite(suite)
        durations = {} if workload else suite_durations(suite)
        for w in names:
            load_workload(w)
    except ConfigError as exc:
        fail(str(exc))
    if mode != "sim":
        from harness.cli_live import compare_live

        doc = compare_live(a, b, names, seed, overrides, duration, rate, scale, mode, quiet or as_json)
    else:
        from harness.progress import job_progress

        with job_progress(2 * len(names), enabled=not (quiet or as_json) and err.is_terminal, console=err) as tick:
            doc = run_compare(a, b, names, seed, overrides, duration, rate, jobs, on_done=tick, durations=durations)
    path = results.write_atomic(out_path or results.default_path("compare", f"{a}-vs-{b}"), doc)
    if as_json:
        sys.stdout.write(json.dumps(results._clean(compare_summary(doc)), indent=1) + "\n")
        return
    render_compare(doc, out)
    out.print(f"result: {path}  (re-render: harness report {path})", highlight=False)


@app.command()
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


@app.command()
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


@app.command()
def report(
    files: List[Path] = typer.Argument(..., help="Result files (run, compare, rank, ...)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
) -> None:
    """Render saved results again (terminal, and HTML with --html)."""
    docs = []
    for f in files:
        try:
            docs.append(results.load(f))
        except ValueError as exc:
            fail(str(exc))
    from reports.render import render_console

    for doc in docs:
        render_console(doc, out)
    if html is not None:
        from reports.html import write_html

        write_html(docs, html)
        out.print(f"html: {html}", highlight=False)


def main() -> None:  # pragma: no cover - console script entry
    app()


from harness import cli_extra  # noqa: E402,F401  (registers the other commands)
