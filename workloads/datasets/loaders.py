"""Read a prompt data set: ShareGPT JSON, JSONL or CSV of prompts, a Mooncake-style trace.

`load_dataset(path, fmt=None, think_time_s=0.0)` reads `path` in format `fmt`, else the one
`detect_format` reads from it (.json: ShareGPT; .csv: CSV; .jsonl/.ndjson: Mooncake when
its first row has `hash_ids`, else JSONL). Every problem is a `DatasetError` of one line
naming the file, the line (JSON: the line of the syntax error; ShareGPT: the entry) and
what is wrong: not JSON or cut short, a missing field, an empty file.

- ShareGPT: a JSON list of `{"id", "conversations": [{"from", "value"}, ...]}`. Every
  human turn is a turn (not only the first); a `system` turn goes before the first; the
  `gpt` turn after a human turn is its `reference` answer. Trailing human turns without
  an answer are kept; an entry without a human turn is skipped (ShareGPT has many).
- JSONL / CSV: one prompt a row, a `prompt` (text) or `messages` (a JSON list of
  `{"role", "content"}`) column; optional `output_tokens` (or `output_length`,
  `max_tokens`) and `timestamp` (seconds).
- Mooncake: JSONL rows `{"timestamp" (ms), "input_length", "output_length", "hash_ids"}`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator

from workloads.datasets.model import Conversation, Dataset, DatasetError, DatasetFormat, Message, Prompt

__all__ = ["detect_format", "load_dataset"]

_OUTPUT_KEYS = ("output_tokens", "output_length", "max_tokens")
_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bard": "assistant",
          "assistant": "assistant", "model": "assistant", "system": "system"}


def detect_format(path: Path) -> DatasetFormat:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return DatasetFormat.SHAREGPT
    if suffix == ".csv":
        return DatasetFormat.CSV
    if suffix in (".jsonl", ".ndjson"):
        for _, row in _json_lines(path):
            return DatasetFormat.MOONCAKE if "hash_ids" in row else DatasetFormat.JSONL
        raise DatasetError(f"{path}: empty file")
    raise DatasetError(f"{path}: cannot tell the format from '{suffix or 'no suffix'}' "
                       f"(give --dataset-format {'|'.join(f.value for f in DatasetFormat)})")


def load_dataset(path: str | Path, fmt: DatasetFormat | str | None = None, think_time_s: float = 0.0) -> Dataset:
    """The data set at `path`; DatasetError (one line: file, line, problem) for any fault."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise DatasetError(f"{path}: empty file")
    try:
        kind = DatasetFormat(fmt) if fmt is not None else detect_format(path)
    except ValueError as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"--dataset-format '{fmt}': valid are {', '.join(f.value for f in DatasetFormat)}") from None
    read = {DatasetFormat.SHAREGPT: _sharegpt, DatasetFormat.JSONL: _tabular, DatasetFormat.CSV: _tabular,
            DatasetFormat.MOONCAKE: _mooncake}[kind]
    try:
        conversations = tuple(read(path, kind, think_time_s))
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8 text") from None
    return Dataset(str(path), kind, conversations)


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{line_no}: not JSON ({exc.msg}, column {exc.colno})") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{line_no}: a row must be a JSON object")
            yield line_no, row


def _sharegpt(path: Path, _kind: DatasetFormat, think_time_s: float) -> Iterator[Conversation]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not JSON or cut short ({exc.msg}, column {exc.colno})") from None
    if not isinstance(doc, list):
        raise DatasetError(f"{path}:1: a ShareGPT file is a JSON list of entries with 'conversations'")
    for k, entry in enumerate(doc):
        where = f"{path}: entry {k}"
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list):
            raise DatasetError(f"{where}: no 'conversations' list")
        prompts: list[Prompt] = []
        system: str | None = None
        for j, turn in enumerate(turns):
            if not isinstance(turn, dict) or not isinstance(turn.get("value"), str) or "from" not in turn:
                raise DatasetError(f"{where}, turn {j}: needs 'from' and a string 'value'")
            role = _ROLES.get(str(turn["from"]).lower())
            if role is None:
                raise DatasetError(f"{where}, turn {j}: unknown speaker {turn['from']!r}")
            if role == "system":
                system = turn["value"]
            elif role == "user":
                text = turn["value"] if system is None or prompts else f"{system}\n\n{turn['value']}"
                prompts.append(Prompt(text=text))
            elif prompts and prompts[-1].reference is None:
                last = prompts[-1]
                prompts[-1] = Prompt(text=last.text, reference=turn["value"])
        if prompts:
            yield Conversation(str(entry.get("id", k)), tuple(prompts), think_time_s)


def _rows(path: Path, kind: DatasetFormat) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind is DatasetFormat.JSONL:
        yield from _json_lines(path)
        return
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise DatasetError(f"{path}: empty file")
        for line_no, row in enumerate(reader, 2):
            yield line_no, row


def _positive_int(value: Any, where: str, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value) if not isinstance(value, bool) else -1
    except (TypeError, ValueError):
        number = -1
    if number < 1:
        raise DatasetError(f"{where}: '{name}' must be a whole number >= 1, got {value!r}")
    return number


def _seconds(value: Any, where: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: 'timestamp' must be a number of seconds, got {value!r}") from None


def _messages(value: Any, where: str) -> tuple[Message, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DatasetError(f"{where}: 'messages' is not a JSON list") from None
    if not isinstance(value, list) or not value or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in value):
        raise DatasetError(f"{where}: 'messages' must be a non-empty list of {{'role', 'content'}} strings")
    return tuple(Message(m["role"], m["content"]) for m in value)


def _tabular(path: Path, kind: DatasetFormat, think_time_s: float) -> Iterator[Conversation]:
    first: float | None = None
    any_row = False
    for line_no, row in _rows(path, kind):
        any_row = True
        where = f"{path}:{line_no}"
        out_key = next((k for k in _OUTPUT_KEYS if row.get(k) not in (None, "")), None)
        output = _positive_int(row.get(out_key), where, out_key) if out_key else None
        if isinstance(row.get("prompt"), str) and row["prompt"].strip():
            prompt = Prompt(text=row["prompt"], output_tokens=output)
        elif row.get("messages") not in (None, ""):
            prompt = Prompt(messages=_messages(row["messages"], where), output_tokens=output)
        else:
            raise DatasetError(f"{where}: no 'prompt' text or 'messages' list")
        when = _seconds(row.get("timestamp"), where)
        if when is not None:
            first = when if first is None else first
        yield Conversation(str(row.get("id", line_no)), (prompt,), think_time_s,
                           None if when is None or first is None else when - first)
    if not any_row:
        raise DatasetError(f"{path}: empty file")


def _mooncake(path: Path, _kind: DatasetFormat, think_time_s: float) -> Iterator[Conversation]:
    first: float | None = None
    for line_no, row in _json_lines(path):
        where = f"{path}:{line_no}"
        missing = [k for k in ("timestamp", "input_length", "output_length", "hash_ids") if k not in row]
        if missing:
            raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
        ids = row["hash_ids"]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool)
                                                           for i in ids):
            raise DatasetError(f"{where}: 'hash_ids' must be a non-empty list of integers")
        stamp = _seconds(row["timestamp"], where)
        inp = _positive_int(row["input_length"], where, "input_length")
        out = _positive_int(row["output_length"], where, "output_length")
        if stamp is None or inp is None or out is None:
            raise DatasetError(f"{where}: timestamp, input_length and output_length must not be empty")
        first = stamp if first is None else first
        prompt = Prompt(hash_ids=tuple(ids), input_tokens=inp, output_tokens=out)
        yield Conversation(str(line_no), (prompt,), think_time_s, (stamp - first) / 1000.0)  # Mooncake: ms
