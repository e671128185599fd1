"""The `harness` command: an explicit table of commands, each a thin function.

A command parses options, calls one library function, renders the result and
writes its file; no arithmetic lives in `harness/cli/`. Every command is listed
in COMMANDS (name -> "module:function"), so reading this table is reading the
CLI, and registering a command imports nothing else of the CLI.
"""

from __future__ import annotations

from importlib import import_module

import typer

__all__ = ["COMMANDS", "app"]

# name: (module under harness.cli, function). In the order `harness --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"),
    "compare": ("run", "compare"),
    "rank": ("analysis", "rank"),
    "review": ("analysis", "review"),
    "gate": ("analysis", "gate"),
    "capacity": ("capacity", "capacity"),
    "sweep": ("sweep", "sweep"),
    "locustfile": ("locust", "locustfile"),
    "pool": ("pool", "pool"),
    "alerts": ("alerts", "alerts"),
    "canary": ("canary", "canary"),
    "serve": ("live", "serve"),
    "profile": ("live", "profile"),
    "targets": ("catalog", "targets"),
    "workloads": ("catalog", "workloads"),
    "report": ("catalog", "report"),
    "docs": ("docs", "docs"),
}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Load-test and design-review harness for batched ML inference serving.",
    pretty_exceptions_enable=False,
)

for _name, (_module, _func) in COMMANDS.items():
    app.command(_name)(getattr(import_module(f"harness.cli.{_module}"), _func))
