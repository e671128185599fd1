"""One registry of views: result kind -> the module that says it in words and charts.

Each view module (reports/<kind>.py) exports three functions of its typed result:

    title(result) -> str                      a heading for the result
    render(result, console) -> None           the terminal view (rich)
    sections(result) -> list[Section]         the HTML sections (reports.page.Section)

Views are imported lazily by name, so `harness report` pays only for the kinds
it draws. A new result kind plugs in with one line here and one in
harness/results/__init__.py (RESULT_KINDS).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

__all__ = ["VIEWS", "view"]

VIEWS: dict[str, str] = {
    "run": "reports.run",
    "compare": "reports.compare",
    "rank": "reports.rank",
    "review": "reports.review",
    "gate": "reports.gate",
    "capacity": "reports.capacity",
    "pool": "reports.pool",
    "llm": "reports.llm",
    "alerts": "reports.alerts",
    "canary": "reports.canary",
    "sweep": "reports.sweep",
}


def view(kind: str) -> ModuleType:
    """The view module of a result kind; ValueError naming the known kinds."""
    name = VIEWS.get(kind)
    if name is None:
        raise ValueError(f"no report for result kind '{kind}' (known: {', '.join(VIEWS)})")
    return import_module(name)
