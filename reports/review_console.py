"""Terminal view of a review document: the design doc item by item, the flaw
ranking with the top three, then the Part 2 and Part 3 answers and notes.

Reads only the finished document (harness/review.py); every figure printed
is one the review measured.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from reports.rank_console import render_rank

_FIELDS = ("flaw", "experiment", "measured", "fix", "gain", "interaction")


def render_review(doc: dict[str, Any], console: Console) -> None:
    narrative = doc.get("narrative") or []
    console.print(Rule(f"design review: {doc['design']}"))
    if narrative:
        console.print(narrative[0], highlight=False)
    for it in doc.get("items") or []:
        console.print()
        name, _, failure = it["flaw"].partition(":")
        where = "Implicit flaw" if it["item"] == "implicit" else f"Item {it['item']}"
        console.print(f"[bold]{where}: {name}[/] (rank {it.get('rank', '?')})", highlight=False)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="bold", min_width=13)
        grid.add_column(overflow="fold")
        for key in _FIELDS:
            text = failure.strip() if key == "flaw" else it.get(key)
            if text:
                grid.add_row(f"  {key}", str(text))
        console.print(grid, highlight=False)
    if doc.get("rank"):
        console.print()
        console.print(Rule("ranking"))
        render_rank(doc["rank"], console)
    rest = [p for p in narrative if p.startswith(("Part 2", "Part 3"))]
    if rest:
        console.print()
        console.print(Rule("Part 2 and Part 3"))
        for p in rest:
            console.print(p, highlight=False)
            console.print()
    for note in doc.get("notes") or []:
        console.print(f"[dim]note:[/] {note}", highlight=False)
    wall = doc.get("wall_s")
    if wall:
        console.print(f"review took {wall:.0f} s.", highlight=False)
