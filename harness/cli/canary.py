"""`harness canary`: a rollout plan on every canary bad day over many seeds, in sim or live.

Parses options, calls ``harness.analysis.canary.run_canary`` (``run_rollouts``
for a suite's ``[[canary]]`` rollouts, ``--suite``), writes the
result and renders it with ``reports.canary``; no arithmetic lives here. ``--mode live``
calls ``harness.analysis.canary.live.run_canary_live`` instead: each rollout on a
served target with two torch models.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.results import io as results
from harness.cli.common import (DEVICE, HTML, JOBS, JSON, MODE, MODEL, OUT, QUIET, SEED, bounded, err, fail,
                                publish)


def canary(
    plans: Optional[List[str]] = typer.Argument(None, help="Plan TOML files or built-in names (careful, fast); "
                                                           "omit with --suite."),
    suite: Optional[str] = typer.Option(None, "--suite", help="Run a suite's canary rollouts (its canary tables, e.g. the canary suite) "
                                                              "instead of PLANS on every day."),
    target: str = typer.Option("hardened", "--target", "-t", help="Target spec; sized to the plan's rate."),
    seeds: Optional[int] = typer.Option(None, "--seeds", help="Seeds per plan and day (default 20; live: 1).",
                                        callback=bounded("--seeds", ge=1)),
    day: Optional[List[str]] = typer.Option(None, "--day", help="Only these canary days (repeatable)."),
    n_jobs: Optional[int] = JOBS,
    seed: int = SEED,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
    mode: str = MODE,
    rate: Optional[float] = typer.Option(None, "--rate", help="live: the rollout's traffic, requests/s (default "
                                         "200; the plan's rate is a sim figure).",
                                         callback=bounded("--rate", gt=0, le=5000)),
    model: str = MODEL,
    device: str = DEVICE,
) -> None:
    """Canary rollout plans on the canary bad days: P(rollback), time to decision, blast radius."""
    from harness.cli.applies import Kind, Mode, Where, check

    check("canary", Where(Kind.DESIGN, Mode(mode)), canary, dict(locals()))  # --rate: live; --suite: sim
    from harness.analysis.canary import CANARY_DAYS, run_canary, run_rollouts
    from harness.engine.jobs import Jobs
    from workloads.loader import ConfigError, load_suite_config

    unknown = [d for d in day or [] if d not in CANARY_DAYS]
    if unknown:
        fail(f"unknown canary day(s) {', '.join(unknown)} (known: {', '.join(CANARY_DAYS)})")
    if bool(plans) == bool(suite):
        fail("give PLANS or --suite SUITE (a suite names its own plans)")
    pairs = None
    if suite:
        try:
            pairs = [(p, d) for p, d in load_suite_config(suite).rollouts if not day or d in day]
        except ConfigError as exc:
            fail(str(exc))
        if not pairs:
            fail(f"suite '{suite}' has no canary rollouts{' on those days' if day else ''} "
                 "(its scenarios run with `harness compare --suite`)")
    tick = None
    if not (quiet or as_json):
        def tick(done: int, total: int) -> None:
            err.print(f"  {done}/{total} rollouts", style="dim", highlight=False)
    if mode == "live":
        from harness.analysis.canary.live import DEFAULT_RATE_RPS, run_canary_live

        try:
            result = run_canary_live(plans or [], target, seeds or 1, seed, day or None, rate or DEFAULT_RATE_RPS,
                                     model, device, on_done=tick)
        except (ValueError, RuntimeError) as exc:
            fail(str(exc))
        publish(result, out_path or results.default_path("canary", "live-" + "-".join(result.plans)), html, as_json)
        return
    seeds = seeds or 20
    jobs = Jobs(workers=n_jobs)  # this machine's worker processes
    try:
        result = (run_rollouts(pairs, target, seeds, seed, jobs, on_done=tick) if pairs else
                  run_canary(plans or [], target, seeds, seed, day or None, jobs, on_done=tick))
    except ValueError as exc:
        fail(str(exc))
    publish(result, out_path or results.default_path("canary", suite or "-".join(result.plans)), html, as_json)
