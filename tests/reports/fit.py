"""Whether a view fits a terminal: every table cell whole, on its own lines, at a given width.

A view prints rich tables. At 80 columns rich makes a table fit by narrowing columns,
which cuts cells ("offe…", "100.…") or wraps them ("KNEE" over "pass"). `cut_cells`
renders a view on a recording console of that width and, for every table it printed
(inside padding and groups too), measures each cell against the width rich gave
its column:

- a figure column (the default) must hold each cell, header included, on one line;
- a prose column (`overflow="fold"`: notes, explanations, checks) may wrap at spaces,
  but no word of it may be broken.

It reads rich's column layout (`Table._calculate_column_widths`, what `Table.__rich_console__`
itself calls) so the verdict is the layout rich draws, not a guess at it.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from rich.console import Console, ConsoleOptions, Group
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

__all__ = ["cut_cells", "rendered"]

UNBOUNDED = 10_000  # measure a cell as wide as it wants (rich clamps a measure to the width given)


def rendered(render: Callable[[Any, Console], None], result: Any, width: int = 80) -> tuple[str, list[str]]:
    """(the text `render` printed at `width` columns, every cut cell in words)."""
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None, force_terminal=False)
    printed: list[Any] = []
    plain_print = console.print

    def print_(*objects: Any, **kwargs: Any) -> None:
        printed.extend(objects)
        plain_print(*objects, **kwargs)

    console.print = print_  # type: ignore[method-assign]
    render(result, console)
    cuts: list[str] = []
    for obj in printed:
        cuts.extend(_cuts(console, console.options, obj))
    return console.export_text(), cuts


def cut_cells(render: Callable[[Any, Console], None], result: Any, width: int = 80) -> list[str]:
    """Every cell `render` cuts or wraps at `width` columns (empty: the view fits)."""
    return rendered(render, result, width)[1]


def _cuts(console: Console, options: ConsoleOptions, obj: Any) -> list[str]:
    """The cut cells of one printed object: a table, or one inside padding or a group."""
    if isinstance(obj, Table):
        return _table_cuts(console, options, obj)
    if isinstance(obj, Padding):
        inner = options.update_width(max(1, options.max_width - obj.left - obj.right))
        return _cuts(console, inner, obj.renderable)
    if isinstance(obj, Group):
        return [c for r in obj.renderables for c in _cuts(console, options, r)]
    return []


def _plain(cell: Any) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return type(cell).__name__


def _table_cuts(console: Console, options: ConsoleOptions, table: Table) -> list[str]:
    max_width = table.width if table.width is not None else options.max_width
    table_options = options.update_width(max_width - table._extra_width)
    widths = table._calculate_column_widths(console, table_options)
    name = _plain(table.title) if table.title else "table"
    cuts = []
    for index, (column, width) in enumerate(zip(table.columns, widths)):
        prose = column.overflow == "fold"
        header = _plain(column.header) or f"column {index}"
        for cell in table._get_cells(console, index, column):
            need = Measurement.get(console, table_options.update_width(UNBOUNDED), cell.renderable)
            if (need.minimum if prose else need.maximum) > width:
                inner = cell.renderable.renderable if isinstance(cell.renderable, Padding) else cell.renderable
                if isinstance(inner, Table):
                    continue  # a nested table wraps its own cells; checked below
                how = "a word of it broken" if prose else "cut or wrapped"
                cuts.append(f"{name}: column '{header}' ({width} wide) {how}: {_plain(inner)!r}")
        for nested in column.cells:
            if isinstance(nested, Table):
                cuts.extend(_table_cuts(console, options.update_width(width), nested))
    return cuts
