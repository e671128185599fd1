"""One registry of views: result kind -> the module that says it in words and charts.

A view module (reports/<kind>.py) is the `View` contract below: three functions of its
typed result,

    title(result) -> str                      a heading for the result
    render(result, console) -> None           the terminal view (rich), within 80 columns
    sections(result) -> list[Section]         the HTML sections (reports.page.Section)

Views are imported lazily by name, so `harness report` pays only for the kinds
it draws; `view(kind)` refuses a module that lacks one of the three. A new result
kind plugs in with one line here and one in harness/results/__init__.py
(RESULT_KINDS); tests/harness/test_result_contract.py fails until both are there.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["VIEWS", "VIEW_FUNCTIONS", "View", "view"]

VIEWS: dict[str, str] = {
    "run": "reports.run",
    "compare": "reports.compare",
    "rank": "reports.rank",
    "review": "reports.review",
    "gate": "reports.gate",
    "capacity": "reports.capacity",
    "pool": "reports.pool",
    "llm": "reports.llm",
    "fleet": "reports.fleet",
    "alerts": "reports.alerts",
    "canary": "reports.canary",
    "sweep": "reports.sweep",
}


class View(Protocol):
    """What a view module provides (a module satisfies a Protocol by its functions)."""

    def title(self, result: Any) -> str: ...

    def render(self, result: Any, console: Console) -> None: ...

    def sections(self, result: Any) -> list[Any]: ...  # reports.page.Section (page imports this module)


VIEW_FUNCTIONS = ("title", "render", "sections")


def view(kind: str) -> View:
    """The view module of a result kind; ValueError naming the known kinds, TypeError naming
    what a view module lacks."""
    name = VIEWS.get(kind)
    if name is None:
        raise ValueError(f"no report for result kind '{kind}' (known: {', '.join(VIEWS)})")
    module = import_module(name)
    missing = [f for f in VIEW_FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise TypeError(f"{name}, the view of '{kind}', lacks {', '.join(missing)} (a view has "
                        f"{', '.join(VIEW_FUNCTIONS)})")
    return cast(View, module)
