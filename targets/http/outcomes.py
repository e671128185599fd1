"""How a request ended at the front door, as its client saw it: the label of the front end's latency.

The layer-4 proxy (targets.http.l4proxy) times every request from its first
byte there to its answer's first byte back (or to the client closing, or the
front end refusing it) and reports it with one of these outcomes; the
goodput SLI the burn-rate alerts read (harness.ops.rules) is the share of
those requests answered `OK` within the SLO. The names follow the harness's
outcomes of an attempt (harness.engine.recorder): a client that closes its
connection before its answer began gave up on it (its timeout: HTTP/1.1 has no
other way to cancel).

Pure functions of bytes; no sockets.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FrontOutcome", "outcome_of_answer", "status_of_answer"]


class FrontOutcome(StrEnum):
    OK = "ok"                # a 2xx answer
    SHED = "shed"            # 429 or 503: refused on purpose (the API servers, the proxy's guard or its caps)
    TIMED_OUT = "timed-out"  # the client closed its connection before its answer began
    FAILED = "failed"        # any other answer (4xx, 5xx, 408 header timeout), or the backend lost it


_SHED = (429, 503)


def status_of_answer(chunk: bytes) -> int | None:
    """The status code of the HTTP/1.x answer that ``chunk`` starts, or None when it starts none."""
    if not chunk.startswith(b"HTTP/1.") or len(chunk) < 12 or chunk[8:9] != b" ":
        return None
    code = chunk[9:12]
    return int(code) if code.isdigit() else None


def outcome_of_answer(chunk: bytes) -> FrontOutcome:
    """The outcome of a request whose answer starts with ``chunk`` (FAILED when none can be read)."""
    code = status_of_answer(chunk)
    if code is None:
        return FrontOutcome.FAILED
    if 200 <= code < 300:
        return FrontOutcome.OK
    return FrontOutcome.SHED if code in _SHED else FrontOutcome.FAILED
