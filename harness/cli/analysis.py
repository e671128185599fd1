"""`harness rank`, `harness review` and `harness gate`: option parsing only.

The library does the work (harness/ablation.py, harness/review.py,
harness/gate.py); these commands build its arguments, write the result file
and hand the document to its terminal renderer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from harness.results import io as results
from harness.cli.common import JSON, OUT, QUIET, SEED, err, fail, out
from workloads.loader import ConfigError, load_suite


def _progress(total: int, quiet: bool):
    from harness.cli.progress import job_progress

    return job_progress(total, enabled=not quiet and err.is_terminal, console=err)


def rank(
    suite: str = typer.Option("bad-day", "--suite", help="Suite of scenarios to rank the flaws over."),
    seed: int = SEED,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core)."),
    scale: float = typer.Option(1.0, "--scale", help="Multiply every shortened run's length by this (see harness/shorten.py)."),
    budget: int = typer.Option(0, "--budget", help="Expected requests per run (0: the default plan; -1: full lengths)."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
) -> None:
    """Rank the design doc's flaws: each put back into hardened, each fixed alone in naive."""
    from harness.analysis.ablation import REQUEST_BUDGET, job_count
    from harness.analysis.ablation import rank as run_rank
    from targets.flaws import FLAWS

    try:
        names = load_suite(suite)
    except ConfigError as exc:
        fail(str(exc))
    if scale <= 0:
        fail("--scale must be > 0")
    request_budget = None if budget < 0 else (budget or REQUEST_BUDGET)
    with _progress(job_count(len(FLAWS), len(names)), quiet or as_json) as tick:
        doc = run_rank(suite, seed, jobs, scale, request_budget, on_done=tick)
    path = results.write_atomic(out_path or results.default_path("rank", suite), doc)
    if as_json:
        sys.stdout.write(results.dumps(doc) + "\n")
        return
    from reports.rank_console import render_rank

    render_rank(doc, out)
    out.print(f"result: {path}  (re-render: harness report {path})", highlight=False)


def review(
    design: Optional[str] = typer.Argument(None, help="Design to review: a target spec or TOML file (default: naive, the doc)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the self-contained HTML report here."),
    quick: bool = typer.Option(False, "--quick", help="Shorter runs (a rougher review in about half the time)."),
    rank_file: Optional[Path] = typer.Option(None, "--rank", help="Reuse a saved rank result instead of running the ablation."),
    no_parts: bool = typer.Option(False, "--no-parts", help="Skip Part 2 (capacity) and Part 3 (pool)."),
    seed: int = SEED,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core)."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
) -> None:
    """The design-review demo: each doc item's flaw, experiment, cost, fix and gain, then the ranking."""
    from harness.analysis.review import check_design, review_scenarios
    from harness.analysis.review import review as run_review

    rank_doc = None
    try:
        if design:
            check_design(design)
        if rank_file is not None:
            rank_doc = results.load(rank_file)
            if rank_doc.get("kind") != "rank":
                fail(f"{rank_file}: not a rank result (kind '{rank_doc.get('kind')}')")
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    total = 2 * len({w for ws in review_scenarios().values() for w in ws}) + 2 * sum(map(len, review_scenarios().values()))
    with _progress(0 if rank_doc else total, quiet or as_json) as tick:
        doc = run_review(design, quick, seed, jobs, not no_parts, rank_doc, on_done=tick)
    path = results.write_atomic(out_path or results.default_path("review", design or "naive"), doc)
    if html is not None:
        try:
            from reports.page import write_html
        except ImportError as exc:
            err.print(f"note: no HTML report in this build ({exc})", highlight=False)
        else:
            write_html([doc], html)
    if as_json:
        sys.stdout.write(results.dumps(doc) + "\n")
        return
    from reports.review_console import render_review

    render_review(doc, out)
    out.print(f"result: {path}" + (f"  html: {html}" if html else ""), highlight=False)


def gate(
    gate_file: Path = typer.Argument(..., help="Gate file (TOML; format: harness/gate/file.py, example harness/gate/ci.toml)."),
    target: Optional[str] = typer.Option(None, "--target", help="Replace the target under test (every gate's target, side A of paired gates)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Result file the 'baseline' checks compare with."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write a JUnit XML report here."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown report here."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core)."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
) -> None:
    """CI performance gate: run the gate file's scenarios (sim, seeded); exit 0 pass, 1 violation, 2 bad file."""
    from harness.gate.check import run_gate
    from reports.gate_console import junit_xml, markdown as to_markdown, render_gate

    try:
        base = results.load(baseline) if baseline is not None else None
        doc = run_gate(str(gate_file), target, base, jobs)
    except (ConfigError, ValueError) as exc:
        fail(str(exc), code=2)
    path = results.write_atomic(out_path or results.default_path("gate", gate_file.stem), doc)
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(junit_xml(doc))
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(to_markdown(doc))
    if as_json:
        sys.stdout.write(results.dumps({k: v for k, v in doc.items() if k != "summaries"}) + "\n")
    else:
        render_gate(doc, out)
        out.print(f"result: {path}", highlight=False)
    raise typer.Exit(0 if doc["passed"] else 1)
