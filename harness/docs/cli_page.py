"""docs/cli.md: every command and option, walked from the click tree of the `harness` app.

The tree is passed in (`typer.main.get_command(app)`, built by harness.cli.docs) so this
package never imports the CLI above it. Options are listed from their declarations, not
from rendered `--help` text, so nothing depends on the terminal's width.
"""

from __future__ import annotations

import inspect
from pathlib import PurePath
from typing import Any, Iterator

from harness.docs.markdown import anchor, banner, code, table


def commands(group: Any, prefix: str = "harness") -> Iterator[tuple[str, Any]]:
    """(full name, command) for every command under `group`, in the group's order, depth first."""
    for name, cmd in getattr(group, "commands", {}).items():
        if getattr(cmd, "hidden", False):
            continue
        full = f"{prefix} {name}"
        yield full, cmd
        yield from commands(cmd, full)


def params(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if not getattr(p, "hidden", False) and "--help" not in getattr(p, "opts", [])]


def _type(p: Any) -> str:
    if getattr(p, "is_flag", False):
        return "flag"
    name = p.bare_type() if hasattr(p, "bare_type") else getattr(getattr(p, "type", None), "name", "")
    name = name[5:-1] if name.startswith("list[") else name  # a repeated option: one value each time
    return {"str": "text", "Path": "path", "int": "integer", "float": "number"}.get(name, name)


def _default(p: Any) -> str:
    value = p.default
    if callable(value) or value is None or (getattr(p, "is_flag", False) and value is False):
        return ""
    if isinstance(value, PurePath):
        value = value.as_posix()
    if isinstance(value, (list, tuple)):
        return ", ".join(code(v) for v in value) if value else ""
    return code(value)


def _names(p: Any) -> str:
    if p.param_type_name == "argument":
        return code(p.name.upper()) + ("..." if p.nargs == -1 else "")
    names = " ".join(code(o) for o in (*p.opts, *getattr(p, "secondary_opts", [])))
    return names + (" (repeatable)" if getattr(p, "multiple", False) else "")


def _usage(full: str, cmd: Any) -> str:
    parts = [full]
    if any(p.param_type_name == "option" for p in params(cmd)):
        parts.append("[OPTIONS]")
    for p in params(cmd):
        if p.param_type_name == "argument":
            name = p.name.upper() + ("..." if p.nargs == -1 else "")
            parts.append(name if p.required else f"[{name}]")
    return " ".join(parts)


def _groups(items: list[tuple[str, Any]], panel_of: Any, default: str) -> list[tuple[str, list[tuple[str, Any]]]]:
    """`items` grouped by their `--help` panel (`rich_help_panel`), panels in order of first appearance."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for name, item in items:
        groups.setdefault(panel_of(item) or default, []).append((name, item))
    return list(groups.items())


def _summary(cmd: Any) -> str:
    """The one line `harness --help` lists: the command's short help, else its help's first line."""
    return getattr(cmd, "short_help", None) or inspect.cleandoc(cmd.help or "").split("\n")[0]


def page(app: Any) -> str:
    out = [banner(["harness/cli/ (the command table in harness/cli/__init__.py)"]),
           "# Commands\n",
           " ".join(inspect.cleandoc(app.help or "").split()) + " Every number, name and path is checked "
           "before any work starts: a bad one ends the command with one line naming the option, and exit "
           "code 2. An option given where it does not apply (a live-only option in sim, ...) is refused the same "
           "way. Commands and options are grouped by job, as `--help` shows them.\n"]
    for panel, group in _groups(list(commands(app)), lambda c: getattr(c, "rich_help_panel", None), "Commands"):
        out.append(f"**{panel}**\n")
        out.append(table(("command", "what it does"),
                         [(f"[{code(full)}](#{anchor(full)})", _summary(c)) for full, c in group]))
    for full, cmd in commands(app):
        out.append(f"## {full}\n")
        out.append(inspect.cleandoc(cmd.help or "") + "\n")
        out.append(f"Usage: {code(_usage(full, cmd))}\n")
        named = [(p.name, p) for p in params(cmd)]
        shown = [("", p) for _, p in named if p.param_type_name == "argument"]
        for title, group in [("Arguments", shown)] + _groups(
                [(n, p) for n, p in named if p.param_type_name != "argument"],
                lambda p: getattr(p, "rich_help_panel", None), "Options"):
            rows = []
            for _, p in group:
                env = f" (env {code(p.envvar)})" if getattr(p, "envvar", None) else ""
                rows.append((_names(p), _type(p), _default(p), (getattr(p, "help", "") or "") + env))
            if rows:
                out.append(f"{title}:\n")
                out.append(table(("option" if title != "Arguments" else "argument", "type", "default", "meaning"),
                                 rows))
    return "\n".join(out)
