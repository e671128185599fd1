"""Any typed result as CSV tables a spreadsheet opens: `harness report RESULT --csv DIR`.

One walk serves every result kind, so a new kind or field needs no code here. The
typed model says what is a field and what is a key: a model's fields (and dicts of
numbers, such as a config) become the columns of one row; a dict of models (per
scenario, per side, per tenant) or a list of records becomes a table of its own, one
row per entry, whose first columns say whose row it is (the keys above it); a block of
equal-length lists (per-window series, a latency CDF) becomes a table with one row per
point. Lists of words become one cell, joined with '; '.

Tables are named by where they sit in the document: `result` (the top row), then e.g.
`scenarios` (a compare's summaries, one row per scenario and side), `runs.timeseries`
(per-window series), `runs.summary.tenants` (per-tenant rows). Nothing is computed: every
cell is a value of the result file.
"""

from __future__ import annotations

import csv
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.results.base import Result

__all__ = ["Row", "tables", "write_csv"]

Row = dict[str, Any]
SCALARS = (str, int, float, bool, type(None), Enum)
# What a dict's keys name, where the field's own name is a plural that reads badly as a column.
KEY_NAMES = {"scenarios": "scenario", "runs": "scenario", "verdicts": "scenario", "per_scenario": "scenario",
             "tenants": "tenant", "ceiling": "side"}
# ... and the keys of a dict of dicts of records below them (a compare's scenario, then side).
INNER_KEY_NAMES = {"scenario": "side"}


def _scalar(v: Any) -> bool:
    return isinstance(v, SCALARS)


def _cell(v: Any) -> Any:
    return v.value if isinstance(v, Enum) else v


def _fields(obj: Any) -> list[tuple[str, Any]]:
    """(name as in the file, value) of a model's fields, or a plain dict's items."""
    if isinstance(obj, BaseModel):
        return [(f.alias or name, getattr(obj, name)) for name, f in type(obj).model_fields.items()]
    if isinstance(obj, (list, tuple)):  # a record kept as a pair or tuple: its places
        return [(str(i), x) for i, x in enumerate(obj)]
    return list(obj.items()) if isinstance(obj, dict) else [("value", obj)]


def _series(obj: Any) -> tuple[list[tuple[str, list[Any]]], Row] | None:
    """The columns of a block of equal-length lists of scalars (nested blocks flattened with
    dots) and its single values (a window's length: repeated on every row), or None when
    `obj` is not such a block."""
    cols: list[tuple[str, list[Any]]] = []
    consts: Row = {}

    def walk(o: Any, prefix: str) -> bool:
        for k, v in _fields(o):
            if _scalar(v):
                consts[prefix + str(k)] = _cell(v)
            elif isinstance(v, (list, tuple)) and all(_scalar(x) for x in v):
                cols.append((prefix + str(k), list(v)))
            elif isinstance(v, (dict, BaseModel)) and not _scalar(v):
                if not walk(v, f"{prefix}{k}."):
                    return False
            else:
                return False
        return True

    if not isinstance(obj, (dict, BaseModel)) or not walk(obj, ""):
        return None
    lengths = {len(v) for _, v in cols}
    return (cols, consts) if len(cols) >= 2 and len(lengths) == 1 and lengths != {0} else None


def _keyed(v: Any) -> bool:
    """A dict whose keys are data (scenario names, sides, tenants): its values are records."""
    return isinstance(v, dict) and bool(v) and all(isinstance(x, (dict, BaseModel)) for x in v.values())


class _Tables:
    def __init__(self) -> None:
        self.out: dict[str, list[Row]] = {}

    def row(self, table: str, keys: Row) -> Row:
        row = dict(keys)
        self.out.setdefault(table, []).append(row)
        return row

    def record(self, obj: Any, table: str, row: Row, keys: Row, prefix: str = "") -> None:
        """Fill `row` with `obj`'s fields; what is not one value goes to tables of its own."""
        for k, v in _fields(obj):
            name, path = f"{prefix}{k}", f"{table}.{prefix}{k}" if table != "result" else f"{prefix}{k}"
            while name in keys:  # a field named as a key column above it keeps both
                name += "_"
            if _scalar(v):
                row[name] = _cell(v)
            elif isinstance(v, (list, tuple)) and all(_scalar(x) for x in v):
                row[name] = "; ".join(str(_cell(x)) for x in v)
            elif (block := _series(v)) is not None:
                cols, consts = block
                for i in range(len(cols[0][1])):
                    self.row(path, keys).update({**{c: _cell(vals[i]) for c, vals in cols}, **consts})
            elif _keyed(v):
                self.keyed(v, path, keys, KEY_NAMES.get(str(k), str(k)))
            elif isinstance(v, (list, tuple)):
                for i, item in enumerate(v):
                    sub = {**keys, f"{k}#": i}
                    if _scalar(item):
                        self.row(path, sub)["value"] = _cell(item)
                    else:
                        self.record(item, path, self.row(path, sub), sub)
            elif isinstance(v, (dict, BaseModel)):  # a nested model or a dict of values: more columns of the same row
                self.record(v, table, row, keys, f"{name}.")
            else:  # anything else the model holds (a dataclass, ...): its text, one cell
                row[name] = str(v)

    def keyed(self, d: dict[str, Any], path: str, keys: Row, key: str) -> None:
        for k, v in d.items():
            sub = {**keys, key: k}
            if _keyed(v) and all(isinstance(x, BaseModel) for x in v.values()):
                self.keyed(v, path, sub, INNER_KEY_NAMES.get(key, f"{key}.key"))  # a dict of dicts of records: scenario, then side
            else:
                self.record(v, path, self.row(path, sub), sub)


def tables(result: Result) -> dict[str, list[Row]]:
    """Every table of one result: name -> rows (dicts of column -> value); `result` first."""
    t = _Tables()
    t.record(result, "result", t.row("result", {}), {})
    return {name: rows for name, rows in t.out.items() if rows}


def write_csv(result: Result, folder: str | Path, stem: str | None = None) -> list[Path]:
    """Write each table of `result` to FOLDER/STEM.TABLE.csv (STEM: the result's kind by
    default); the columns are every key any row has, in the order first seen. Returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in tables(result).items():
        columns = list(dict.fromkeys(c for r in rows for c in r))
        path = folder / f"{stem or result.kind}.{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns, restval="")
            w.writeheader()
            w.writerows({c: ("" if v is None else v) for c, v in r.items()} for r in rows)
        paths.append(path)
    return paths
