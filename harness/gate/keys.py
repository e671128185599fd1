"""The keys a gate check may name: a run summary's numbers, a canary cell's, a sweep's.

`key_problem` walks a summary model (RunSummary) along a dotted key and says why
it names no number, or None; `CANARY_KEYS` and `SWEEP_KEYS` are the figures a
[[canary]] or [[sweep]] check may read. Apart from the gate file's parser
(harness/gate/file.py) because the docs generator reads the same lists.
"""

from __future__ import annotations

from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from harness.results.canary import CanaryCell

__all__ = ["CANARY_KEYS", "SWEEP_KEYS", "key_problem"]


def _unwrap(tp: Any) -> Any:
    """`X | None` -> X (an optional figure is still that figure)."""
    args = [a for a in get_args(tp) if a is not type(None)]
    if get_origin(tp) in (Union, UnionType) and len(args) == 1:
        return args[0]
    return tp


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """A block's keys as the result file spells them, with their types."""
    return {(info.alias or name): info.annotation for name, info in model.model_fields.items()}


def _is_table(tp: Any) -> bool:
    return get_origin(tp) is dict


def key_problem(key: str, schema: Any, tenants: set[str]) -> str | None:
    """Why `key` names no number of a summary of type `schema`, or None when it does."""
    node: Any = schema
    parts = key.split(".")
    for i, part in enumerate(parts):
        here = ".".join(parts[:i])
        node = _unwrap(node)
        if here == "attempt_status":
            return None if i == len(parts) - 1 else f"unknown summary key '{key}'"
        if node is Any:  # free-form block (live mode's figures): checked when read
            return None
        if _is_table(node):
            if here == "tenants" and part != "*" and part not in tenants:
                return f"unknown summary key '{key}': no tenant '{part}' (tenants: {', '.join(sorted(tenants))}, or *)"
            node = get_args(node)[1]
            continue
        if not (isinstance(node, type) and issubclass(node, BaseModel)):
            return f"unknown summary key '{key}': '{here}' is a number, it has no '{part}'"
        fields = _fields(node)
        if part not in fields:
            return f"unknown summary key '{key}': '{part}' is not one of {', '.join(sorted(fields))}"
        node = fields[part]
    node = _unwrap(node)
    if _is_table(node) or (isinstance(node, type) and issubclass(node, BaseModel)):
        names = "an entry name or *" if _is_table(node) else ", ".join(sorted(_fields(node)))
        return f"summary key '{key}' is a table, not a number (add one of: {names})"
    if node is bool or not (node in (int, float) or node is Any):
        return f"summary key '{key}' is not a number"
    return None


# The figures of a sweep result a [[sweep]] check may name (req/s).
SWEEP_KEYS: tuple[str, ...] = ("max_rate_within_slo", "first_failing_rate")

# The figures of a canary cell a [[canary]] check may name (its numbers, as the result spells them).
CANARY_KEYS: tuple[str, ...] = tuple(k for k, tp in _fields(CanaryCell).items() if _unwrap(tp) in (int, float))
