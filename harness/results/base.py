"""The base of every result kind: a frozen, validated document with a kind and a schema.

A result is what a command that runs work returns and writes: one JSON file,
`to_json()` out and `from_json()` back in, the same figures both ways. Field
names are the JSON keys scripts and CI read (docs/results.md lists them), so a
result's Python attributes and its file say the same thing.

The contract of a result kind, all of it checked by tests/harness/test_result_contract.py:

- a `Result` subclass whose `kind` field is `Literal["<kind>"] = "<kind>"`;
- `summary_json()`, what the command's `--json` prints (abstract here: a kind that
  forgets it cannot be made); `to_json()` and `from_json()` come with the base;
- an entry in `harness.results.RESULT_KINDS`, so `load_result` reads its files;
- a view in `reports.registry.VIEWS` (`title`, `render` for the terminal, `sections`
  for `harness report --html`), whose terminal tables fit 80 columns.

Every document carries `schema` (`harness.results.io.SCHEMA`, the format's version):
a document of an older version is upgraded as it is read, one of a newer version is
refused (`harness.results.io.upgrade`), nested results included.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from harness.results.io import SCHEMA, clean, upgrade, versions

__all__ = ["Figures", "Result"]


class Figures(BaseModel):
    """A block of figures inside a result: frozen and strict about its keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    # Keys written only when they hold a value (optional blocks older files lack).
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    @functools.cache
    def _omitted(cls) -> frozenset[str]:
        """OMIT_IF_NONE of this class and every base: a subclass adds keys, never drops one."""
        return frozenset().union(*(vars(c).get("OMIT_IF_NONE", ()) for c in cls.__mro__))

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in self._omitted():
            if data.get(key, 0) is None:
                del data[key]
        return data


class Result(Figures):
    """One result document. Subclasses declare `kind: Literal["<kind>"] = "<kind>"`, their
    fields, and `summary_json`."""

    OMIT_IF_NONE = frozenset({"cached_runs"})

    schema_: str = Field(SCHEMA, alias="schema")
    kind: str
    versions: dict[str, str] = Field(default_factory=versions)
    # How it was made, like `versions`: the sim runs the run cache gave back instead of running
    # them (harness.engine.run_cache; 'target on workload, seed N', 'capacity point KEY', 'canary
    # PLAN on DAY, seed N', 'pool experiment, every policy', 'LLM follow-up, seed N', ...);
    # absent when none did.
    cached_runs: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """A document of an older schema read as today's; a newer one refused (ValueError)."""
        return upgrade(data) if isinstance(data, dict) else data

    def to_json(self) -> dict[str, Any]:
        """The document as JSON-safe data (non-finite floats become null)."""
        return clean(self.model_dump(mode="python", by_alias=True))

    @abstractmethod
    def summary_json(self) -> dict[str, Any]:
        """What the command's `--json` prints: a JSON object (the whole document, or what the
        kind says is its summary, e.g. without time series). Each kind states it."""

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        """The result back from its JSON data; pydantic's ValidationError names the bad key."""
        return cls.model_validate(doc)
