"""The base of every result kind: a frozen, validated document with a kind and a schema.

A result is what a command that runs work returns and writes: one JSON file,
`to_json()` out and `from_json()` back in, the same figures both ways. Field
names are the JSON keys scripts and CI read (the README lists them), so a
result's Python attributes and its file say the same thing.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from harness.results.io import SCHEMA, clean, versions

__all__ = ["Figures", "Result"]


class Figures(BaseModel):
    """A block of figures inside a result: frozen and strict about its keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    # Keys written only when they hold a value (optional blocks older files lack).
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in self.OMIT_IF_NONE:
            if data.get(key, 0) is None:
                del data[key]
        return data


class Result(Figures):
    """One result document. Subclasses set KIND and declare their fields."""

    KIND: ClassVar[str] = ""

    schema_: str = Field(SCHEMA, alias="schema")
    kind: str
    versions: dict[str, str] = Field(default_factory=versions)

    def to_json(self) -> dict[str, Any]:
        """The document as JSON-safe data (non-finite floats become null)."""
        return clean(self.model_dump(mode="python", by_alias=True))

    def summary_json(self) -> dict[str, Any]:
        """What a command's `--json` prints: the whole document, unless a kind says less
        (e.g. no time series)."""
        return self.to_json()

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        """The result back from its JSON data; pydantic's ValidationError names the bad key."""
        return cls.model_validate(doc)
