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

from harness import result as results
from harness.cli import JSON, OUT, QUIET, SEED, app, err, fail, out
from workloads.loader import ConfigError, load_suite


def _progress(total: int, quiet: bool):
    from harness.progress import job_progress

    return job_progress(total, enabled=not quiet and err.is_terminal, console=err)


@app.command()
def rank(
    suite: str = typer.Option("bad-day", "--suite", help="Suite of scenarios to rank the flaws over."),
    seed: int = SEED,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core)."),
    scale: float = typer.Option(1.0, "--scale", help="Multiply every compressed run length by this."),
    budget: int = typer.Option(0, "--budget", help="Expected requests per run (0: the default plan; -1: full lengths)."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
) -> None:
    """Rank the design doc's flaws: each put back into hardened, each fixed alone in naive."""
    from harness.ablation import REQUEST_BUDGET, job_count
    from harness.ablation import rank as run_rank
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
        sys.stdout.write(results.dumps({k: v for k, v in doc.items() if k != "baselines"}) + "\n")
        return
    from reports.rank_console import render_rank

    render_rank(doc, out)
    out.print(f"result: {path}  (re-render: harness report {path})", highlight=False)
