"""`harness capacity`: Part 2, the doc's formula beside the simulated realtime and offline fleets.

Parses options, calls ``harness.analysis.capacity.plan_capacity``, writes the result file and
renders it with ``reports.capacity``; no arithmetic lives here.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

import typer

from harness.results import io as results
from harness.cli.common import (EXECUTOR, HTML, JOBS, JSON, OUT, QUIET, SEED, bounded, err, existing_file, fail, one_of,
                                publish)
from harness.engine.jobs import Executor, Jobs


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A bar over sim points; the total grows as the fleet searches ask for more."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    cols = (TextColumn("[bold]capacity"), BarColumn(),
            TextColumn("{task.completed}/{task.total} sim points  {task.fields[last]}"), TimeElapsedColumn())
    with Progress(*cols, console=err, transient=True) as bar:
        task = bar.add_task("capacity", total=None, last="")

        def update(done: int, total: int, key: str) -> None:
            bar.update(task, completed=done, total=total, last=key)

        yield update


def capacity(
    qps: float = typer.Option(10_000, "--qps", help="Peak load to size for (requests/s).",
                              callback=bounded("--qps", gt=0, unit=" req/s")),
    batch_size: int = typer.Option(32, "--batch-size", "-B", help="B, the model's maximum batch.",
                                   callback=bounded("--batch-size", ge=1, le=4096)),
    batch_time: float = typer.Option(0.1, "--batch-time", help="t(B): s per full batch (a cost table overrides).",
                                     callback=bounded("--batch-time", gt=0, unit=" s")),
    slo_p99: float = typer.Option(0.3, "--slo-p99", help="Latency target: p99 in seconds.",
                                  callback=bounded("--slo-p99", gt=0, unit=" s")),
    cost_model: str = typer.Option("constant", "--cost-model", help="constant (the doc), affine (t0 + k b), table.",
                                   callback=one_of("--cost-model", ("constant", "affine", "table"))),
    cost_table: Optional[Path] = typer.Option(None, "--cost-table",
                                              help="Cost table JSON from `harness profile` (--cost-model table).",
                                              callback=existing_file("--cost-table")),
    headroom: float = typer.Option(1.25, "--headroom", help="Size the headroom fleet for this multiple of peak.",
                                   callback=bounded("--headroom", ge=1)),
    quick: bool = typer.Option(False, "--quick", help="About a quarter of the simulation: shorter runs, fewer points."),
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    seed: int = SEED,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
) -> None:
    """Part 2: the formula's fleet beside the simulated realtime (+headroom, N+1) and offline ones."""
    from harness.analysis.capacity import plan_capacity

    if cost_model == "table" and cost_table is None:
        fail("--cost-model table needs --cost-table FILE (from `harness profile`)")
    try:
        with _progress(not (quiet or as_json) and err.is_terminal) as tick:
            result = plan_capacity(qps, batch_size, batch_time, slo_p99, cost_model, seed=seed, quick=quick,
                                   jobs=Jobs(Executor(executor), n_jobs),
                                   cost_table=None if cost_table is None else str(cost_table),
                                   headroom_factor=headroom, progress=tick)
    except ValueError as exc:
        fail(str(exc))
    publish(result, out_path or results.default_path("capacity", f"{qps:g}qps-B{batch_size}"), html, as_json)
