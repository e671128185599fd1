"""Replay a timestamped LLM request trace as a workload.

Reads CSV or JSONL (by extension: .jsonl/.ndjson is JSON lines, anything else
CSV) with the Azure LLM inference trace's columns as they are published:
`TIMESTAMP` (a date-time such as `2023-11-16 18:15:46.6805900`, or seconds as a
number), `ContextTokens` (prompt) and `GeneratedTokens` (output). An optional
`tenant` column names tenants. Arrivals are seconds since the first row,
divided by `speedup` (2.0 replays twice as fast); `window_s=(start, end)` keeps
the rows in that span of trace seconds (before the speed-up). Rows are sorted
by time; a row with a non-positive token count is an error naming its line.
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from workloads.llm import LlmSchedule

__all__ = ["SAMPLE_TRACE", "read_trace"]

SAMPLE_TRACE = Path(__file__).parent / "traces" / "azure-llm-sample.csv"
_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        if path.suffix in (".jsonl", ".ndjson"):
            for line_no, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield line_no, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}:{line_no}: not JSON ({exc.msg})") from None
        else:
            for line_no, row in enumerate(csv.DictReader(fh), 2):
                yield line_no, row


def _seconds(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    head, _, frac = text.partition(".")  # the trace has 7 fractional digits; datetime takes 6
    stamp = datetime.fromisoformat(head)
    return stamp.timestamp() + (float(f"0.{frac}") if frac else 0.0)


def read_trace(path: str | Path, speedup: float = 1.0, window_s: tuple[float, float] | None = None) -> LlmSchedule:
    """The trace at `path` as a schedule; ValueError naming the file and line of any problem."""
    path = Path(path)
    if not speedup > 0:
        raise ValueError(f"speedup must be > 0, got {speedup}")
    times, prompts, outputs, tenants = [], [], [], []
    for line_no, row in _rows(path):
        missing = [c for c in _COLUMNS if c not in row]
        if missing:
            raise ValueError(f"{path}:{line_no}: missing column(s) {', '.join(missing)} (need {', '.join(_COLUMNS)})")
        try:
            when, p, o = _seconds(row["TIMESTAMP"]), int(row["ContextTokens"]), int(row["GeneratedTokens"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{line_no}: {exc}") from None
        if p < 1 or o < 1:
            raise ValueError(f"{path}:{line_no}: ContextTokens and GeneratedTokens must be >= 1, got {p}, {o}")
        times.append(when)
        prompts.append(p)
        outputs.append(o)
        tenants.append(str(row.get("tenant") or "default"))
    if not times:
        raise ValueError(f"{path}: no requests")
    order = np.argsort(np.asarray(times), kind="stable")
    t = np.asarray(times)[order]
    t = t - t[0]
    keep = np.ones(len(t), dtype=bool) if window_s is None else (t >= window_s[0]) & (t < window_s[1])
    if not keep.any():
        raise ValueError(f"{path}: no requests in the window {window_s} s")
    start = window_s[0] if window_s is not None else 0.0
    names = tuple(dict.fromkeys(np.asarray(tenants)[order][keep]))
    index = {n: i for i, n in enumerate(names)}
    arrival = (t[keep] - start) / speedup
    span = ((window_s[1] - start) if window_s is not None else float(t[-1]) + 1e-9) / speedup
    return LlmSchedule(path.stem, span, names, arrival,
                       np.asarray(prompts, dtype=np.int64)[order][keep], np.asarray(outputs, dtype=np.int64)[order][keep],
                       np.array([index[x] for x in np.asarray(tenants)[order][keep]], dtype=np.int64))
