"""Live progress displays for long runs (rich). Off when not a TTY or --quiet.

They only display what the run reports through callbacks; they never read a
clock of their own, so sim runs stay deterministic.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from harness.results import RunResult
from reports.fmt import fmt_pct, fmt_s


@contextmanager
def sim_progress(enabled: bool, console: Console) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """Yields a callback for SimRun (or None when disabled)."""
    if not enabled:
        yield None
        return
    cols = (
        TextColumn("[bold]sim[/] {task.fields[t]:>6.1f}/{task.total:g} s"),
        BarColumn(),
        TextColumn("{task.fields[done]:>9,} answered  {task.fields[attempts]:>9,} attempts  queue {task.fields[queue]:>7,}"),
        TimeElapsedColumn(),
    )
    with Progress(*cols, console=console, transient=True) as progress:
        task = None

        def update(p: dict[str, Any]) -> None:
            nonlocal task
            if task is None:
                task = progress.add_task("sim", total=p["duration_s"], t=0.0, done=0, attempts=0, queue=0)
            progress.update(task, completed=min(p["t_s"], p["duration_s"]), t=p["t_s"],
                            done=p["finished"], attempts=p["attempts"], queue=p["queue_depth"])

        yield update


@contextmanager
def job_progress(total: int, enabled: bool, console: Console) -> Iterator[Callable[..., None] | None]:
    """Yields an `on_done(index, job, result)` callback that advances a bar."""
    if not enabled:
        yield None
        return
    cols = (TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} runs  {task.fields[last]}"), TimeElapsedColumn())
    with Progress(*cols, console=console, transient=True) as progress:
        task = progress.add_task("runs", total=total, last="")

        def done(_i: int, job: Any, result: RunResult) -> None:
            s = result.summary
            last = (f"{job.target} on {job.workload}: goodput {fmt_pct(s.goodput_ratio or 0.0)}, "
                    f"p99 {fmt_s(s.latency_s.p99)}")
            progress.update(task, advance=1, last=last)

        yield done
