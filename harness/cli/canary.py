"""`harness canary`: a rollout plan on every canary bad day over many seeds, in sim.

Parses options, calls ``harness.analysis.canary_days.run_canary``, writes the
result and renders it with ``reports.canary``; no arithmetic lives here.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.results import io as results
from harness.cli.common import HTML, JOBS, JSON, OUT, QUIET, SEED, bounded, err, fail, publish


def canary(
    plans: List[str] = typer.Argument(..., help="Plan TOML files or built-in names (careful, fast)."),
    target: str = typer.Option("hardened", "--target", "-t", help="Target spec; sized to the plan's rate."),
    seeds: int = typer.Option(20, "--seeds", help="Seeds per plan and day.", callback=bounded("--seeds", ge=1)),
    day: Optional[List[str]] = typer.Option(None, "--day", help="Only these canary days (repeatable)."),
    jobs: Optional[int] = JOBS,
    seed: int = SEED,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
) -> None:
    """Canary rollout plans on the canary bad days: P(rollback), time to decision, blast radius."""
    from harness.analysis.canary_days import CANARY_DAYS, run_canary

    unknown = [d for d in day or [] if d not in CANARY_DAYS]
    if unknown:
        fail(f"unknown canary day(s) {', '.join(unknown)} (known: {', '.join(CANARY_DAYS)})")
    tick = None
    if not (quiet or as_json):
        def tick(done: int, total: int) -> None:
            err.print(f"  {done}/{total} rollouts", style="dim", highlight=False)
    try:
        result = run_canary(plans, target, seeds, seed, day or None, workers=jobs, on_done=tick)
    except ValueError as exc:
        fail(str(exc))
    publish(result, out_path or results.default_path("canary", "-".join(result.plans)), html, as_json)
