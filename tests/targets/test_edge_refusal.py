"""The proxy's canned refusal: where a refused request ends, and the 503 it answers."""

from __future__ import annotations

import pytest

from targets.http.refusal import refusal, request_end

_HEAD = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize("chunk, expected", [
    (_HEAD + b"Content-Length: 4\r\n\r\n{\"a\"", 0),        # head and body in one chunk: ends with it
    (_HEAD + b"Content-Length: 10\r\n\r\n{\"a\"", 6),       # 6 body bytes still to come: skipped as they arrive
    (_HEAD + b"Content-Length: 10\r\n\r\n", 10),            # head alone (clients often write the body apart)
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 0),       # no length, no body
    (b"POST /p HTTP/1.1\r\ncontent-length:  3 \r\n\r\nabc", 0),  # any case, spaces around the value
    (_HEAD + b"Content-Length: 4\r\n\r\nabcdGET", None),    # a pipelined next request follows: close
    (_HEAD + b"Content-Len", None),                         # the head is split over chunks: close
    (_HEAD + b"Transfer-Encoding: chunked\r\n\r\n4\r\n", None),   # chunked: its end is not cheap to find
    (_HEAD + b"Content-Length: 4\r\nContent-Length: 4\r\n\r\nabcd", None),  # repeated: ambiguous
    (_HEAD + b"Content-Length: -4\r\n\r\n", None),          # malformed
    (_HEAD + b"Content-Length: 4\nX: y\r\n\r\nabcd", None),  # a bare LF inside the head: no guessing
])
def test_request_end(chunk: bytes, expected: int | None) -> None:
    assert request_end(chunk) == expected


def _parse(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}, body


@pytest.mark.parametrize("retry_s, close, retry_after, ms", [
    (0.05, False, "1", "50"),     # under a second: Retry-After is whole seconds, at least 1; ms exact
    (2.3, True, "3", "2300"),     # rounded up; close says so
])
def test_refusal_is_a_complete_503(retry_s: float, close: bool, retry_after: str, ms: str) -> None:
    import json

    status, headers, body = _parse(refusal(retry_s, "too busy", close))
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert headers["retry-after"] == retry_after and headers["x-retry-after-ms"] == ms
    assert int(headers["content-length"]) == len(body)
    assert ("connection" in headers) is close
    assert json.loads(body) == {"error": "overloaded", "reason": "too busy", "retry_after_s": round(retry_s, 3)}
