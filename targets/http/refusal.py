"""The proxy's own answer to a request it will not relay: a canned 503, and where that request ends.

The layer-4 proxy refuses an overloaded front end's new requests itself
(targets.http.overload.ProxyGuard decides), because a refusal that crosses
aiohttp costs almost half a served request. To keep the client's keep-alive
connection usable it must skip exactly the refused request's bytes, so it reads
the request's framing from the chunk that starts it: the head's end and its
Content-Length. Anything it cannot read cheaply and for sure (a head split
over chunks, a chunked body, a repeated or malformed length, bytes of a
pipelined next request) is answered with ``Connection: close`` instead. A client that asked
for its connection to end (``Connection: close``, or HTTP/1.0 without ``keep-alive``) gets its
503 with ``Connection: close`` and then the connection's end: such a client may read its answer
until the server closes, so a refusal that kept the connection open left it waiting for good.

Pure functions of bytes; no sockets.
"""

from __future__ import annotations

import json
import math

__all__ = ["refusal", "request_end", "wants_close"]

_CRLF2 = b"\r\n\r\n"


def request_end(chunk: bytes) -> int | None:
    """Body bytes of the request that ``chunk`` starts still to arrive after it (0: it ends with the
    chunk), or None when its end cannot be found cheaply and for sure."""
    head_end = chunk.find(_CRLF2)
    if head_end < 0:
        return None
    length = 0
    seen = False
    for line in chunk[:head_end].split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            return None
        name = name.strip().lower()
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            value = value.strip()
            if seen or not value.isdigit():
                return None
            length, seen = int(value), True
    rest = len(chunk) - (head_end + 4 + length)
    return None if rest > 0 else -rest


def wants_close(chunk: bytes) -> bool:
    """True when the request that ``chunk`` starts asks for the connection to end after its answer:
    a ``Connection`` header with the ``close`` token, or an HTTP/1.0 request line without
    ``keep-alive`` (RFC 9112 9.3). Reads the head as far as the chunk holds it."""
    head_end = chunk.find(_CRLF2)
    lines = (chunk if head_end < 0 else chunk[:head_end]).split(b"\r\n")
    tokens: set[bytes] = set()
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"connection":
            tokens.update(t.strip().lower() for t in value.split(b","))
    if b"close" in tokens:
        return True
    return lines[0].rstrip().endswith(b"HTTP/1.0") and b"keep-alive" not in tokens


def refusal(retry_after_s: float, reason: str, close: bool = False) -> bytes:
    """A complete HTTP/1.1 ``503`` with ``Retry-After`` (whole seconds, at least 1) and
    ``X-Retry-After-Ms`` (as the API servers' own 503s carry), and a small JSON body with the
    same fields as theirs; ``close`` adds ``Connection: close``."""
    body = json.dumps({"error": "overloaded", "reason": reason[:200],
                       "retry_after_s": round(retry_after_s, 3)}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: {max(1, math.ceil(retry_after_s))}\r\n"
            f"X-Retry-After-Ms: {max(1, round(retry_after_s * 1000))}\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    return head.encode() + body
