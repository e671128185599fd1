"""Render any saved result document to the terminal, by its kind."""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Console

from reports.console import render_compare, render_run

RENDERERS: dict[str, Callable[[dict[str, Any], Console], None]] = {
    "run": lambda doc, c: render_run(doc["summary"], c),
    "compare": render_compare,
}


def register(kind: str, fn: Callable[[dict[str, Any], Console], None]) -> None:
    RENDERERS[kind] = fn


def render_console(doc: dict[str, Any], console: Console) -> None:
    kind = doc.get("kind", "run")
    fn = RENDERERS.get(kind)
    if fn is None:
        raise ValueError(f"no terminal renderer for result kind '{kind}' (known: {', '.join(RENDERERS)})")
    fn(doc, console)
