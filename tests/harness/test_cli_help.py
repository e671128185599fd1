"""`--help` at 80 columns: commands in panels by job, one line each; options in panels by where
they apply (the panels of harness.cli.applies.OPTIONS)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from harness.cli import COMMAND_PANELS, COMMANDS, app

runner = CliRunner()
COLUMNS = {"COLUMNS": "80", "TERMINAL_WIDTH": "80"}


def _help(*args: str) -> str:
    res = runner.invoke(app, [*args, "--help"], env=COLUMNS)
    assert res.exit_code == 0, res.output
    return res.output


def _panels(text: str) -> dict[str, list[str]]:
    """Panel title -> the lines inside its box."""
    panels: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        top = re.match(r"╭─ (.+?) ─", line)
        if top:
            current = top.group(1)
            panels[current] = []
        elif line.startswith("╰"):
            current = None
        elif current is not None:
            panels[current].append(line)
    return panels


def test_harness_help_groups_the_commands_by_job_one_line_each() -> None:
    text = _help()
    assert max(len(line) for line in text.splitlines()) <= 80
    panels = _panels(text)
    assert [p for p in panels if p in COMMAND_PANELS] == list(COMMAND_PANELS)
    for panel in COMMAND_PANELS:
        lines = panels[panel]
        names = [line.split()[1] for line in lines]
        assert names == [n for n, c in COMMANDS.items() if c.panel == panel], panel
        for line, name in zip(lines, names):  # one line each: every line of the box starts a command
            assert COMMANDS[name].help in line, f"{name}'s entry wraps: {line!r}"


def test_each_listed_line_fits_without_wrapping() -> None:
    width = max(len(n) for n in COMMANDS) + 2  # typer's name column
    for name, cmd in COMMANDS.items():
        assert len(cmd.help) <= 80 - 4 - width - 2, f"{name}: {len(cmd.help)} characters wrap at 80 columns"


def test_compare_help_groups_its_options() -> None:
    panels = _panels(_help("compare"))
    assert [p for p in panels if p not in ("Arguments", "Options")] == [
        "Common", "Sim mode", "Live mode", "LLM URLs", "Output"]
    where = {opt: title for title, lines in panels.items() for line in lines for opt in re.findall(r"--[\w-]+", line)
             if line.split()[1:2] == [opt]}
    assert where["--seeds"] == where["--jobs"] == "Sim mode"
    assert where["--warmup"] == where["--balancer"] == where["--scale"] == "Live mode"
    assert where["--model"] == where["--api-key-env"] == where["--template"] == "LLM URLs"
    assert where["--json"] == where["--out"] == "Output"
    assert where["--suite"] == where["--seed"] == "Common"


@pytest.mark.parametrize("command", ["run", "sweep", "alerts", "canary", "capacity", "report"])
def test_every_command_shows_its_options_in_panels(command: str) -> None:
    panels = _panels(_help(command))
    assert "Options" in panels  # --help, and the options of this command only
    if command in ("run", "sweep", "alerts", "canary"):
        assert {"Common", "Live mode", "Output"} <= set(panels), panels.keys()
