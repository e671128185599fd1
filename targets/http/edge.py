"""The HTTP edge of an API server: aiohttp's connection handler, made to keep the contract.

aiohttp answers what its parser refuses (a bad request line, a header line
too long, too many headers, broken chunked framing) before any application
code runs, in plain text (some of it echoing the request) and with a logged
traceback. `JsonEdgeHandler` answers those in the JSON contract
(`{"error", "reason"}`, nothing of the request echoed) and logs at most a few
lines a window (`LogBudget`). `serve_socket` starts one listening socket with
it and with the parser limits and idle timeout of an `EdgeLimits`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any, Callable

from aiohttp import http_exceptions as hx
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from targets.http.limits import LISTEN_BACKLOG, EdgeLimits, LogBudget

log = logging.getLogger("targets.http.server")

# Most specific first: (exception class, kind, reason).
_PARSER_ERRORS: tuple[tuple[type[BaseException], str, str], ...] = (
    (hx.LineTooLong, "line-too-long", "a request line or header is over the size limit"),
    (hx.BadHttpMethod, "bad-method", "the request line's method is not an HTTP method"),
    (hx.InvalidURLError, "bad-target", "the request target is not a valid URL path"),
    (hx.BadStatusLine, "bad-request-line", "the request line is not valid HTTP/1.x"),
    (hx.InvalidHeader, "bad-header", "a header name or value is malformed"),
    (hx.TransferEncodingError, "bad-framing", "the chunked body framing is malformed"),
    (hx.ContentLengthError, "bad-framing", "the body does not match its Content-Length"),
    (hx.ContentEncodingError, "bad-encoding", "the body's content encoding is not supported"),
    (hx.BadHttpMessage, "bad-http", "the request is not valid HTTP/1.1 (framing, headers or length)"),
)


def describe_error(status: int, exc: BaseException | None) -> tuple[int, str, str]:
    """(status, kind, reason) for an error aiohttp raises outside the app; no request text."""
    if exc is not None:
        for cls, kind, reason in _PARSER_ERRORS:
            if isinstance(exc, cls):
                code = getattr(exc, "code", 400) or 400
                return (code if 400 <= code < 500 else 400), kind, reason
    if isinstance(exc, ConnectionError):
        return 400, "client-dropped", "the client closed its connection"
    if status == 504:
        return 503, "timeout", "the request was not answered in time"
    if 400 <= status < 500:
        return status, "bad-http", "the request is not valid HTTP/1.1"
    return 500, "internal", "internal server error"


def json_body(kind: str, reason: str) -> bytes:
    return json.dumps({"error": kind, "reason": reason}).encode()


class JsonEdgeHandler(RequestHandler):
    """aiohttp's per-connection handler, answering its own refusals as JSON.

    `on_error(kind)` is told each refusal (for metrics); `budget` rate-limits
    the log lines they cause.
    """

    def __init__(self, manager: web.Server, *, on_error: Callable[[str], None], budget: LogBudget,
                 **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._on_error = on_error
        self._budget = budget

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        code, kind, reason = describe_error(status, exc)
        self._on_error(kind)
        suppressed = self._budget.allow(self._loop.time())
        if suppressed is not None:
            more = f" ({suppressed} more since the last line)" if suppressed else ""
            if kind == "client-dropped":
                log.info("client dropped its connection mid-request%s", more)
            elif code >= 500:
                log.error("%s answering a request: %s%s", code, type(exc).__name__ if exc else "-", more,
                          exc_info=exc)
            else:
                log.info("refused a malformed request (%s)%s", kind, more)
        if request.writer.output_size > 0:  # an answer is half sent: the connection is broken
            raise ConnectionError("response already started")
        resp = web.Response(status=code, body=json_body(kind, reason), content_type="application/json")
        resp.force_close()
        return resp


async def serve_socket(runner: web.AppRunner, host: str, limits: EdgeLimits,
                       on_error: Callable[[str], None], budget: LogBudget) -> tuple[asyncio.AbstractServer, int]:
    """Listen on (host, any free port) with `runner`'s app behind a JsonEdgeHandler."""
    loop = asyncio.get_running_loop()
    manager = runner.server
    assert manager is not None, "runner.setup() first"
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))

    def factory() -> JsonEdgeHandler:
        # keepalive_timeout also bounds the wait for a request's head: aiohttp
        # closes a connection still waiting for a complete head when it fires.
        return JsonEdgeHandler(manager, loop=loop, on_error=on_error, budget=budget, access_log=None,
                               keepalive_timeout=limits.idle_timeout_s, max_line_size=limits.max_line_bytes,
                               max_field_size=limits.max_field_bytes, max_headers=limits.max_headers,
                               lingering_time=0.5, auto_decompress=False)

    server = await loop.create_server(factory, sock=sock, backlog=LISTEN_BACKLOG)
    return server, sock.getsockname()[1]
