"""Result documents: one JSON file per run, written atomically.

A result holds the summary (the keys scripts and CI rely on), the full target
and workload config, the seed, versions and the time series, so any report
can be rendered again from the file alone.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

# The result format's version: every document (a nested result too) carries it as
# `schema`. Bump it when a document's keys change in a way older code misreads, and add
# the step from the version before to UPGRADES, so files written before still load.
SCHEMA_VERSION = 1
SCHEMA = f"harness.result/{SCHEMA_VERSION}"
_SCHEMA_PREFIX = "harness.result/"

# version -> the function that turns a document of that version into one of the next.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
RUNS_DIR = Path("runs")


def versions() -> dict[str, str]:
    """The versions a result records (Python, the core as built, the packages that decide it)."""
    return dict(_versions())


@functools.cache
def _versions() -> dict[str, str]:
    # Once a process: each package's version is read from its installed metadata files
    # (about 1.5 ms for the five), and a process writes a document per sim run.
    from importlib.metadata import PackageNotFoundError, version

    from targets.native import status

    out = {"python": platform.python_version(), "core": status()}  # compiled (mypyc) or pure Python, and why
    for pkg in ("inference-harness", "numpy", "hdrhistogram", "aiohttp", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


_PLAIN = (str, int, bool)  # JSON as they are (exact types: a subclass may be a numpy scalar's)


def clean(obj: Any) -> Any:
    """JSON-safe: non-finite floats become None (JSON has no Infinity)."""
    if obj is None or type(obj) in _PLAIN:  # most leaves: returned before the probes below
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "model_dump"):  # a typed result or block inside plain data
        return clean(obj.model_dump(mode="python", by_alias=True))
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return clean(obj.item())
    return obj


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(clean(doc), indent=1, sort_keys=False, allow_nan=False)


def write_atomic(path: Path, doc: Any) -> Path:
    """Write a result (or plain JSON data) to `path` via a temp file + rename: never a torn file."""
    data = doc.to_json() if hasattr(doc, "to_json") else doc
    return write_text_atomic(Path(path), dumps(data))


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` via a temp file in the same folder + rename. `mode` sets
    permissions (mkstemp's default is 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def schema_version(doc: dict[str, Any]) -> int:
    """The format version a document says it has (ValueError when its `schema` is not ours)."""
    schema = str(doc.get("schema", ""))
    number = schema.removeprefix(_SCHEMA_PREFIX)
    if not schema.startswith(_SCHEMA_PREFIX) or not number.isdigit():
        raise ValueError(f"unknown result schema '{schema}' (this harness writes '{SCHEMA}')")
    return int(number)


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a document of today's schema: the same object when it is one (or says no
    schema: a block built in code), else upgraded one version at a time. ValueError for a
    document of a newer schema than this harness reads."""
    if "schema" not in doc:
        return doc
    version = schema_version(doc)
    if version > SCHEMA_VERSION:
        raise ValueError(f"written by a newer harness (result schema {version}; this one reads "
                         f"{SCHEMA_VERSION} and older): upgrade the harness to read it")
    while version < SCHEMA_VERSION:
        doc = {**UPGRADES[version](doc), "schema": f"{_SCHEMA_PREFIX}{version + 1}"}
        version += 1
    return doc


def default_path(kind: str, label: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)[:80]
    return RUNS_DIR / f"{stamp}-{kind}-{safe}.json"


def load(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ValueError(f"{p}: no such result file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not a result file (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("harness."):
        raise ValueError(f"{p}: not a harness result file (no 'schema' key)")
    return doc


_clean = clean  # older name, kept for scripts that imported it
