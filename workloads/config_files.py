"""Read config files (TOML) and validate them, with errors that name file, key, problem.

The floor of the project's config reading: workloads, target specs and gate files all
read TOML through ``read_toml`` and validate through ``validate``, and all raise
``ConfigError``. It imports nothing from the project, so ``targets`` may use it without
depending on the workload model.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Type, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["ConfigError", "read_toml", "validate"]

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config file (or value) is malformed; the message names file, key, problem."""


def _key(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def validate(model: Type[M], data: dict[str, Any], source: str) -> M:
    """Validate `data` as `model`, turning pydantic's errors into a ConfigError."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        tags = {"constant", "ramp", "spike", "sinusoid"}
        errors = [
            # Drop discriminator tags (e.g. 'constant') from the path.
            (tuple(p for p in err["loc"] if not (isinstance(p, str) and p in tags)), err["msg"])
            for err in exc.errors()
        ]
        lines = []
        for loc, msg in errors:
            # A container error that only echoes an error inside it adds noise.
            if any(len(other) > len(loc) and other[: len(loc)] == loc for other, _ in errors):
                continue
            lines.append(f"{source}: key '{_key(loc)}': {msg}")
        raise ConfigError("\n".join(lines)) from None


def read_toml(path: Path) -> dict[str, Any]:
    return parse_toml(read_bytes(path), path)


def read_bytes(path: Path) -> bytes:
    """A config file's bytes (a missing file: ConfigError naming it)."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None


def parse_toml(raw: bytes, path: Path) -> dict[str, Any]:
    """`raw`, the bytes of the TOML file `path`, parsed (not valid TOML: ConfigError naming it)."""
    try:
        return tomllib.loads(raw.decode())
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
