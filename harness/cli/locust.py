"""Locust as a driver: `harness locustfile` and `harness run --driver locust` (via ``run_with_locust``).

Parses options and calls harness.live.locust_file / harness.live.locust_run; Locust itself
only ever runs in subprocesses (importing it patches sockets).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from harness.cli.common import fail, out, writable_file
from harness.results.run import RunResult
from workloads.loader import ConfigError


def locustfile(
    workload: str = typer.Argument(..., help="Workload name or TOML file."),
    out_path: Path = typer.Option(..., "--out", "-o", help="Locustfile to write.", callback=writable_file("--out")),
    rate: Optional[float] = typer.Option(None, "--rate", help="Scale the workload's rates so its peak is this."),
    duration: Optional[float] = typer.Option(None, "--duration", help="Cut or stretch the workload to this many s."),
    timeout_s: float = typer.Option(1.0, "--timeout", help="Client timeout (s): Locust's network timeout."),
) -> None:
    """Write a locustfile whose shape and users reproduce WORKLOAD (as closely as Locust allows)."""
    from harness.live.locust_file import LIMITS_TEXT, locustfile_text
    from workloads.loader import load_workload

    try:
        wl = load_workload(workload).at_rate(rate, duration)
    except ConfigError as exc:
        fail(str(exc))
    out_path.write_text(locustfile_text(wl, timeout_s))
    out.print(f"locustfile: {out_path} ({wl.name}, {wl.duration_s:g} s, peak {wl.peak_rps:,.0f} req/s)\n"
              f"where Locust cannot follow: {LIMITS_TEXT}\n"
              f"run: locust -f {out_path} --headless --host http://127.0.0.1:8000", highlight=False, soft_wrap=True)


def run_with_locust(job: Any, workers: int, scale: float | None, model: str, device: str = "auto",
                    template: Path | None = None, allow_remote: bool = False) -> RunResult:
    """`harness run TARGET --mode live --driver locust`: a URL is driven as it is (outside loopback only
    with `allow_remote`), each request `model`'s input or the `template` body; a target spec gets its
    host started as the built-in driver's runs do (same scale, padding, faults and `device`)."""
    from harness.live.locust_run import run_locust, run_locust_hosted
    from harness.live.plan import plan_live

    try:
        text = template.read_text() if template is not None else None
        if text is not None and "://" not in job.target:
            fail("--template applies to a URL target (a target the harness starts takes its own body)")
        plan = plan_live(job.target, job.workload, job.seed, job.overrides, job.duration_s, job.rate_rps, scale,
                         model, device, None, text, allow_remote, warmup_s=0)
    except (ConfigError, ValueError, OSError, UnicodeDecodeError) as exc:
        fail(str(exc))
    try:
        if plan.url is not None:
            return run_locust(job.target, plan.workload, plan.config, workers, job.seed, model, text)
        return run_locust_hosted(plan, workers)
    except RuntimeError as exc:
        fail(str(exc), code=1)
