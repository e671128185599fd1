"""The `harness` command: an explicit table of commands, each a thin function.

A command parses options, calls one library function, renders the result and
writes its file; no arithmetic lives in `harness/cli/`. Every command is listed
in COMMANDS (name -> module, function, the `--help` panel it is listed in, its
one-line help), so reading this table is reading the CLI; a command's module is
imported when that command is looked up (`CommandTable`: to run it, or to list it
in `--help`), so `harness compare` starts without what `review` or `serve` import.
Each command's options are shown in the panels `harness.cli.applies.OPTIONS` gives
them (common, sim, live, URL, LLM, output; an option of one command only: its
"Options"); `run`, `compare` and `sweep` send each kind of target to its job in
`harness.cli.dispatch`.
"""

from __future__ import annotations

import inspect
from copy import copy
from importlib import import_module
from typing import Any, Callable, NamedTuple

import typer
import typer.main
from typer.core import TyperGroup
from typer.models import OptionInfo

from harness.cli.applies import Panel, panel_of
from harness.engine.collector import imports_uncollected

__all__ = ["COMMANDS", "COMMAND_PANELS", "Command", "CommandTable", "app"]

# The panels of `harness --help`, in order.
COMMAND_PANELS = ("Design review", "Operations and CI", "Live and serving", "Reference")
DESIGN, OPS, LIVE, REFERENCE = COMMAND_PANELS


class Command(NamedTuple):
    module: str  # under harness.cli
    function: str
    panel: str  # one of COMMAND_PANELS
    help: str  # the one line `harness --help` lists (at most 56 characters: no wrap at 80 columns)


# In the order `harness --help` lists them within each panel.
COMMANDS: dict[str, Command] = {
    "compare": Command("run", "compare", DESIGN, "Two targets side by side over a bad-day suite."),
    "rank": Command("analysis", "rank", DESIGN, "Rank the design doc's flaws by what each costs."),
    "review": Command("analysis", "review", DESIGN, "The design-review demo: each flaw, its cost, its fix."),
    "capacity": Command("capacity", "capacity", DESIGN, "Part 2: the formula's fleet beside the simulated ones."),
    "pool": Command("pool", "pool", DESIGN, "Part 3: two models on one 8-GPU pool, by policy."),
    "gate": Command("analysis", "gate", OPS, "CI gate: judge a gate file's checks; exit 1 on a miss."),
    "alerts": Command("alerts", "alerts", OPS, "Alert rules and a dashboard, proven on the bad days."),
    "canary": Command("canary", "canary", OPS, "Canary plans on bad days: rollback odds, blast radius."),
    "sweep": Command("sweep", "sweep", OPS, "The highest rate whose goodput stays within the SLO."),
    "run": Command("run", "run", LIVE, "One target under one workload (sim, live or a URL)."),
    "serve": Command("live", "serve", LIVE, "Start a target for real, until Ctrl-C."),
    "profile": Command("live", "profile", LIVE, "Measure batch time by batch size; write a cost table."),
    "locustfile": Command("locust", "locustfile", LIVE, "Write a locustfile that reproduces a workload."),
    "targets": Command("catalog", "targets", REFERENCE, "List target bases, flaws and (--knobs) every knob."),
    "workloads": Command("catalog", "workloads", REFERENCE, "List workloads and suites, or explain one."),
    "report": Command("catalog", "report", REFERENCE, "Render saved results again (terminal, --html, --csv)."),
    "docs": Command("docs", "docs", REFERENCE, "Generate the reference pages in docs/."),
}

_PANEL_RANK: dict[Panel | None, int] = {None: 0, **{p: i + 1 for i, p in enumerate(Panel)}}


def _paneled(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` with each option in its panel (from `panel_of`), options ordered panel by panel (typer
    shows panels in the order their first option comes). Sets `func.__signature__` only: typer
    reads the signature, and calls `func` by keyword."""
    signature = inspect.signature(func)
    params, ranks = [], {}
    for p in signature.parameters.values():
        info = p.default
        if isinstance(info, OptionInfo):
            decls = info.param_decls or ()
            panel = panel_of(name, next((d for d in decls if d.startswith("--")), ""))
            info = copy(info)  # a shared option (SEED, ...) may sit in another panel elsewhere
            info.rich_help_panel = panel.value if panel is not None else None
            p = p.replace(default=info)
            ranks[p.name] = _PANEL_RANK[panel]
        params.append(p)
    params.sort(key=lambda p: ranks.get(p.name, -1))  # arguments first, in their order (a stable sort)
    func.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return func


def _command(name: str) -> Any:
    """The click command `name`, built from its module's function (imported now, not at start-up)."""
    spec = COMMANDS[name]
    with imports_uncollected():
        func = getattr(import_module(f"harness.cli.{spec.module}"), spec.function)
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    one.command(name, rich_help_panel=spec.panel, short_help=spec.help)(_paneled(name, func))
    return typer.main.get_command(one)


# Panel by panel (typer lists panels in the order their first command comes), then COMMANDS' order.
_ORDER = [name for panel in COMMAND_PANELS for name, cmd in COMMANDS.items() if cmd.panel == panel]


class CommandTable(TyperGroup):
    """The `harness` group over COMMANDS: a command's module is imported when that command is
    looked up (to run it, or to list it in `--help`), so `harness compare` does not import what
    `rank`, `pool` or `serve` need. `commands` builds them all, for the docs and the tests that
    walk the whole tree."""

    _built: dict[str, Any]

    @property  # type: ignore[override]
    def commands(self) -> dict[str, Any]:
        return {name: self.get_command(None, name) for name in _ORDER}

    @commands.setter
    def commands(self, given: Any) -> None:  # typer passes the (empty) registered commands
        self._built = {}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self._built:
            self._built[cmd_name] = _command(cmd_name)
        return self._built[cmd_name]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(_ORDER)


app = typer.Typer(
    cls=CommandTable,
    add_completion=False,
    no_args_is_help=True,
    help="Load-test and design-review harness for batched ML inference serving.",
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    pass  # the group takes no options of its own; each command is in COMMANDS
