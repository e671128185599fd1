"""Parsing and validating one /predict body: `parse_predict` -> PredictRequest or BadRequest.

No web types here (the API server in targets.http.server maps BadRequest to HTTP).
Reasons name the fault and never echo the request (not a key, not a value),
and are at most MAX_REASON_CHARS long; any number, however large, is refused
cleanly (json rejects integers past 4,300 digits, and comparisons do not
overflow).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

FIELDS = frozenset({"tenant", "request_id", "deadline_ms", "input"})
MAX_DEADLINE_MS = 600_000
MAX_REASON_CHARS = 200
_TENANT_RE = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")
_RID_RE = re.compile(r"[\x21-\x7e]{1,128}\Z")
_QUOTED = re.compile(r"'[^']*'?|\"[^\"]*\"?")  # a validator quoting the value it choked on


def clip(reason: str) -> str:
    """A reason cut to MAX_REASON_CHARS."""
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 3] + "..."


class BadRequest(Exception):
    """A request the server refuses: HTTP `status`, a short `kind`, a human `reason`."""

    def __init__(self, status: int, kind: str, reason: str) -> None:
        reason = clip(reason)
        super().__init__(reason)
        self.status = status
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class PredictRequest:
    tenant: str
    request_id: str | None
    deadline_ms: float | None
    input: Any


def _no_constants(name: str) -> Any:
    raise ValueError("NaN and Infinity are not valid JSON")


def parse_predict(body: bytes, tenants: frozenset[str] | None,
                  validate: Callable[[Any], Any]) -> PredictRequest:
    """Parse and validate one /predict body; raise BadRequest (400 or 422) naming the fault.

    `validate(input)` raises ValueError for an input the model cannot take; what it returns,
    when not None, is the input as the model takes it (an array), and becomes the request's
    `input` (the JSON value itself otherwise).
    """
    if not body:
        raise BadRequest(400, "empty-body", "request body is empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, "not-utf8", f"body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise BadRequest(400, "malformed-json", "body is not valid JSON: nested too deeply") from None
    except ValueError as exc:
        raise BadRequest(400, "malformed-json", f"body is not valid JSON: {str(exc)[:120]}") from None
    if not isinstance(data, dict):
        raise BadRequest(422, "not-an-object", f"body must be a JSON object, got {type(data).__name__}")
    unknown = len(data.keys() - FIELDS)
    if unknown:
        raise BadRequest(422, "unknown-field", f"{unknown} unknown field(s); allowed: {sorted(FIELDS)}")
    for name in ("tenant", "input"):
        if name not in data:
            raise BadRequest(422, "missing-field", f"field '{name}' is required")
    tenant = data["tenant"]
    if not isinstance(tenant, str):
        raise BadRequest(422, "wrong-type", f"'tenant' must be a string, got {type(tenant).__name__}")
    if not _TENANT_RE.match(tenant):
        raise BadRequest(422, "bad-tenant", "'tenant' must be 1-64 characters of A-Z a-z 0-9 _ . -")
    if tenants is not None and tenant not in tenants:
        raise BadRequest(422, "unknown-tenant", "'tenant' is not a tenant this server serves")
    rid = data.get("request_id")
    if rid is not None and not (isinstance(rid, str) and _RID_RE.match(rid)):
        raise BadRequest(422, "bad-request-id", "'request_id' must be 1-128 printable ASCII characters, or null")
    deadline = data.get("deadline_ms")
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
            raise BadRequest(422, "wrong-type", f"'deadline_ms' must be a number, got {type(deadline).__name__}")
        # Plain comparisons: no overflow for huge ints, and NaN/inf fail them.
        if not 1 <= deadline <= MAX_DEADLINE_MS:
            raise BadRequest(422, "absurd-deadline", f"'deadline_ms' must be within 1..{MAX_DEADLINE_MS}")
        deadline = float(deadline)
    try:
        prepared = validate(data["input"])
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise BadRequest(422, "bad-input", f"'input': {_QUOTED.sub('(a value)', str(exc))}") from None
    return PredictRequest(tenant, rid, deadline, data["input"] if prepared is None else prepared)
