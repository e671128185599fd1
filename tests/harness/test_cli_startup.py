"""What a command imports before it runs: only its own module, and only the result kinds it
writes (a cached `harness compare` is mostly start-up, so an eager import elsewhere in the CLI
or in harness.results shows in every command's time). Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.cli import COMMANDS, CommandTable


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_command_module() -> None:
    loaded = _modules_after("import harness.cli")
    assert not {f"harness.cli.{c.module}" for c in COMMANDS.values()} & loaded


def test_looking_up_compare_imports_its_module_and_not_the_others() -> None:
    loaded = _modules_after("import typer.main\nfrom harness.cli import app\n"
                            "typer.main.get_command(app).get_command(None, 'compare')")
    assert "harness.cli.run" in loaded
    for other in ("analysis", "pool", "canary", "alerts", "capacity", "catalog", "docs"):
        assert f"harness.cli.{other}" not in loaded, other
    # compare writes a compare document: the other kinds' models are not built
    for kind in ("rank", "review", "alerts", "canary", "pool", "capacity", "fleet", "gate", "sweep"):
        assert f"harness.results.{kind}" not in loaded, kind


def test_every_command_is_listed_and_built() -> None:
    import typer.main

    from harness.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, CommandTable)
    assert list(group.commands) == [n for p in ("Design review", "Operations and CI", "Live and serving", "Reference")
                                    for n, c in COMMANDS.items() if c.panel == p]
    assert all(cmd.name == name for name, cmd in group.commands.items())
    assert group.get_command(None, "no-such-command") is None
