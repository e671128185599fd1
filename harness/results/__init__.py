"""Typed results: one kind per command that runs work, each `to_json` / `from_json`.

RESULT_KINDS maps a document's `kind` to its type; `from_json(doc)` and
`load_result(path)` pick the type by that key, importing its module then (a
command builds only the models of the kinds it reads or writes, of ~140 in all).
A new kind plugs in with one entry in `_KINDS` here and one in
`reports/registry.py`; `harness.results.base` states the whole contract a kind
keeps.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from pydantic import ValidationError

from harness.results.base import Result
from harness.results.io import load as load_document

if TYPE_CHECKING:  # each kind's module is imported at run time on first use (below)
    from harness.results.alerts import AlertsResult
    from harness.results.canary import CanaryResult
    from harness.results.capacity import CapacityResult
    from harness.results.compare import CompareResult
    from harness.results.fleet import FleetResult
    from harness.results.gate import GateResult
    from harness.results.llm import LlmResult
    from harness.results.pool import PoolResult
    from harness.results.rank import RankResult
    from harness.results.review import ReviewResult
    from harness.results.run import RunResult, RunSummary
    from harness.results.sweep import SweepResult

__all__ = ["RESULT_KINDS", "CompareResult", "Result", "RunResult", "RunSummary", "from_json", "load_result"]

# kind -> its class, in the module of the kind's name (harness.results.<kind>): a kind's models are
# built when it is first used, so a command that writes one kind does not build the other kinds'
# ~140 models at start-up.
_KINDS: dict[str, str] = {
    "run": "RunResult",
    "compare": "CompareResult",
    "rank": "RankResult",
    "review": "ReviewResult",
    "gate": "GateResult",
    "capacity": "CapacityResult",
    "pool": "PoolResult",
    "llm": "LlmResult",
    "fleet": "FleetResult",
    "alerts": "AlertsResult",
    "canary": "CanaryResult",
    "sweep": "SweepResult",
}
_EXPORTS = {name: kind for kind, name in _KINDS.items()} | {"RunSummary": "run"}  # class -> its module


def _class(module: str, name: str) -> Any:
    return getattr(import_module(f"harness.results.{module}"), name)


class _Kinds(Mapping[str, "type[Result]"]):
    """RESULT_KINDS: each kind's type, its module imported on first lookup."""

    def __getitem__(self, kind: str) -> type[Result]:
        cls: type[Result] = _class(kind, _KINDS[kind])
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(_KINDS)

    def __len__(self) -> int:
        return len(_KINDS)


RESULT_KINDS: Mapping[str, type[Result]] = _Kinds()


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return _class(_EXPORTS[name], name)
    raise AttributeError(f"module 'harness.results' has no attribute '{name}'")


def from_json(doc: dict[str, Any], source: str = "result") -> Result:
    """The typed result of a document, by its `kind`; ValueError naming the problem."""
    kind = str(doc.get("kind", "run"))
    cls = RESULT_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"{source}: unknown result kind '{kind}' (known: {', '.join(RESULT_KINDS)})")
    try:
        return cls.from_json(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "schema"  # a whole-document check: its schema
        why = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{source}: not a valid '{kind}' result: key '{where}': {why}"
                         f" ({exc.error_count()} problem(s))") from None


def load_result(path: str | Path) -> Result:
    """Read and validate one result file (ValueError naming the file on any problem)."""
    return from_json(load_document(path), str(path))
