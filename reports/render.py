"""Render any saved result document to the terminal, by its kind.

Renderers are looked up lazily by import path, so each kind's renderer lives
beside its own views and importing this module stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

from rich.console import Console

RENDERERS: dict[str, str] = {
    "run": "reports.console:render_run_doc",
    "compare": "reports.console:render_compare",
    "rank": "reports.rank_console:render_rank",
    "capacity": "reports.capacity_console:render_capacity",
    "pool": "reports.pool_console:render_pool_doc",
    "review": "reports.review_console:render_review",
    "gate": "reports.gate_console:render_gate",
}


def renderer(kind: str) -> Callable[[dict[str, Any], Console], None]:
    path = RENDERERS.get(kind)
    if path is None:
        raise ValueError(f"no terminal renderer for result kind '{kind}' (known: {', '.join(RENDERERS)})")
    module, _, name = path.partition(":")
    return getattr(import_module(module), name)


def render_console(doc: dict[str, Any], console: Console) -> None:
    renderer(doc.get("kind", "run"))(doc, console)
