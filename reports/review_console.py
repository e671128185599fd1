"""Terminal view of a review document: the design doc item by item, the flaw
ranking with the top three, then the Part 2 and Part 3 answers and notes.

Reads only the finished document (harness/review.py); every figure printed
is one the review measured.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.rule import Rule

from reports.rank_console import render_rank

_FIELDS = ("flaw", "experiment", "measured", "fix", "gain", "interaction")


def render_review(doc: dict[str, Any], console: Console) -> None:
    narrative = doc.get("narrative") or []
    console.print(Rule(f"design review: {doc['design']}"))
    if narrative:
        console.print(narrative[0], highlight=False)
    for it in doc.get("items") or []:
        console.print()
        name = it["flaw"].split(":", 1)[0]
        console.print(f"[bold]Item {it['item']}: {name}[/] (rank {it.get('rank', '?')})", highlight=False)
        for key in _FIELDS:
            text = it.get(key)
            if key == "flaw":
                text = it["flaw"].split(":", 1)[-1].strip()
            if text:
                console.print(f"  [bold]{key}:[/] {text}", highlight=False)
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
