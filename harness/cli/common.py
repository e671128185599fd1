"""What every command shares: the consoles, the error exit, and the common options.

Common options mean the same on every command that runs work: `--seed`, `--json`
(the result alone on stdout), `--out` (result file), `--quiet` (no progress).
"""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

out = Console()
err = Console(stderr=True)

SEED = typer.Option(1, "--seed", help="One seed drives arrivals, clients and the target.")
DURATION = typer.Option(None, "--duration", help="Cut or stretch the workload to this many seconds.")
RATE = typer.Option(None, "--rate", help="Scale the workload's rates so its peak is this (req/s).")
SET = typer.Option(None, "--set", help="Target knob KEY=VALUE (repeatable).")
JSON = typer.Option(False, "--json", help="Print the result as JSON to stdout, nothing else.")
OUT = typer.Option(None, "--out", help="Result file path (default: runs/<time>-<kind>-<label>.json).")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress display.")
HTML = typer.Option(None, "--html", help="Also write a self-contained HTML report here.")


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
