"""`harness sweep`: the highest offered rate within the SLO, for a sim target, a live one or a URL.

Parses options, calls ``harness.analysis.sweep.run_sweep`` (with ``harness.analysis.capacity``'s
fleet as its capacity check under --check-capacity), prints each step as it
ends, writes the result and renders it with ``reports.sweep``; `--check` judges it
(``harness.gate.sweep``) and exits 1 when a check fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.cli.common import (DEVICE, HTML, JSON, MODE, MODEL, OUT, QUIET, SEED, SET, LIVE_SCALE, bounded,
                                check_target_mode, err, fail, out, publish)
from harness.cli.live import BALANCER, DRIVER_PROCS, WARMUP
from harness.results import io as results
from workloads.loader import ConfigError


def sweep(
    target: str = typer.Argument(..., help="Target spec, TOML file, or http URL (--mode live)."),
    mode: str = MODE,
    start: Optional[float] = typer.Option(None, "--start-rate", help="First rate to try (default: the target's peak).",
                                          callback=bounded("--start-rate", gt=0, unit=" req/s")),
    duration: Optional[float] = typer.Option(None, "--step-duration", help="Seconds per step (default: 2-5 s).",
                                             callback=bounded("--step-duration", gt=0, unit=" s")),
    rel_tol: float = typer.Option(0.05, "--tolerance", help="Stop when the bracket is within this ratio.",
                                  callback=bounded("--tolerance", gt=0, le=0.5)),
    min_ratio: float = typer.Option(0.99, "--min-goodput", help="Share of requests that must meet the SLO.",
                                    callback=bounded("--min-goodput", gt=0, le=1)),
    check: Optional[List[str]] = typer.Option(None, "--check", help='Gate check, e.g. "max_rate_within_slo >= 800".'),
    check_capacity: bool = typer.Option(False, "--check-capacity", help="sim: also ask `capacity` for the fleet."),
    send_lag: float = typer.Option(0.005, "--send-lag-limit", help="live: a step whose send lag p99 exceeds this "
                                   "(s) is invalid.", callback=bounded("--send-lag-limit", gt=0, unit=" s")),
    set_: Optional[List[str]] = SET,
    seed: int = SEED,
    scale: Optional[float] = LIVE_SCALE,
    model: str = MODEL,
    device: str = DEVICE,
    pad_to_s: Optional[float] = typer.Option(None, "--pad-to-s", help="live host: pad batches to this (0: off).",
                                             callback=bounded("--pad-to-s", ge=0, unit=" s")),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="live: allow a URL target outside loopback."),
    warmup: Optional[float] = WARMUP,
    driver_procs: int = DRIVER_PROCS,
    balancer: str = BALANCER,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
) -> None:
    """Find the highest offered rate whose goodput stays within the SLO (binary search, early stops)."""
    from harness.analysis.capacity import capacity_agreement
    from harness.analysis.sweep import run_sweep
    from harness.gate.sweep import judge_sweep
    from reports.sweep import step_row
    from targets.spec import parse_overrides

    check_target_mode(target, mode)

    def shown(step) -> None:
        if not (quiet or as_json):
            err.print("  " + "  ".join(step_row(step, None)), highlight=False)

    try:
        result = run_sweep(target, mode, overrides=parse_overrides(set_ or []), seed=seed, start_rps=start,
                           duration_s=duration, rel_tol=rel_tol, min_ratio=min_ratio, scale=scale, model=model,
                           device=device, pad_to_s=pad_to_s, allow_remote=allow_remote,
                           capacity_check=capacity_agreement if check_capacity else None, on_step=shown,
                           warmup_s=warmup, send_lag_limit_s=send_lag, driver_procs=driver_procs,
                           balancer=balancer)
        outcomes = judge_sweep(result, list(check or []))
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))
    except RuntimeError as exc:
        fail(str(exc), code=1)
    label = target.split("://")[-1].replace("/", "_").replace(":", "_")
    publish(result, out_path or results.default_path("sweep", label), html, as_json)
    for o in outcomes:
        if not as_json:
            out.print(f"{o.status}: {o.check} ({o.note})", highlight=False)
    if any(not o.passed for o in outcomes):
        raise typer.Exit(1)
