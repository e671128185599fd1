"""No input reaches a 500: a corpus of 300+ malformed requests, raw bytes on real sockets.

Each case is sent on its own connection, through the L4 proxy or straight at an
API server, and every answer on it is read back: each must be a 4xx (or 503)
in the JSON contract ({"error", "reason"}, the reason at most 200 characters)
and none may echo the request (every case carries a marker that must not come
back). After the corpus, a correct request is still answered 200.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from targets.config import TargetConfig
from targets.http.limits import EdgeLimits
from targets.http.stack import start_stack

pytestmark = pytest.mark.live

MARK = "ECHOMARK"
LIM = EdgeLimits(idle_timeout_s=1.0, header_timeout_s=0.5, body_timeout_s=0.5, max_connections=256,
                 max_connections_per_client=64)
CFG = TargetConfig(batching="dynamic", max_wait_s=0.002, batch_time_s=0.005, batch_size=8, cache="off", gpus=1,
                   api_servers=2, request_ids=True, dedupe=True, peak_qps=20_000)
MAX_BODY = 64 * 1024


def _req(body: bytes, ctype: str = "application/json", method: str = "POST", path: str = "/predict",
         extra: str = "", length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if ctype:
        head += f"Content-Type: {ctype}\r\n"
    if length != -1:
        head += f"Content-Length: {n}\r\n"
    return (head + extra + "\r\n").encode("latin-1") + body


def _json(**fields) -> bytes:
    return json.dumps({"tenant": "t0", "input": [1.0, 2.0], **fields}).encode()


def corpus() -> list[tuple[str, bytes]]:
    """(kind, raw request) pairs: 31 kinds x 10 variants."""
    m = MARK.encode()
    cases: list[tuple[str, bytes]] = []
    for i in range(10):
        zeros = (400, 20, 1000, 4000, 300, 399, 401, 2000, 3000, 4200)[i]
        cases += [
            ("huge-int-deadline", _req(b'{"tenant":"t0","deadline_ms":1' + b"0" * zeros + b',"input":[1.0]}')),
            ("int-past-4300-digits", _req(b'{"tenant":"t0","deadline_ms":' + b"9" * (4301 + i) + b',"input":[1]}')),
            ("inf-deadline", _req(b'{"tenant":"t0","deadline_ms":' + (b"-", b"")[i % 2] + b'1e999,"input":[1]}')),
            ("nan-literal", _req(b'{"tenant":"t0","input":[' + (b"NaN", b"Infinity", b"-Infinity")[i % 3] + b"]}")),
            ("huge-input-number", _req(b'{"tenant":"t0","input":[1e999, 1' + b"0" * (400 + i) + b"]}")),
            ("deep-nesting", _req(b"[" * (20_000 + i) + b"]" * (20_000 + i))),
            ("long-unknown-key", _req(b'{"tenant":"t0","input":[1],"' + m * (5000 + i) + b'":1}')),
            ("marker-tenant", _req(json.dumps({"tenant": MARK * (i + 9), "input": [1]}).encode())),
            ("marker-input", _req(json.dumps({"tenant": "t0", "input": [MARK] * (i + 1)}).encode())),
            ("marker-request-id", _req(_json(request_id=MARK + " " * (i + 1)))),
            ("not-utf8", _req(b'{"tenant":"' + m + bytes([0xff, 0x80 + i]) + b'","input":[1]}')),
            ("too-large", _req(b'{"tenant":"t0","input":[' + b"1," * (MAX_BODY // 2 + i) + b"1]}")),
            ("wrong-content-type", _req(_json(), ctype=("text/plain", MARK, "application/x-" + MARK)[i % 3])),
            ("body-shorter-than-length", _req(_json(), length=len(_json()) + 10 + i)),
            ("gzip-garbage", _req(m * 4, extra="Content-Encoding: gzip\r\n")),
            ("traversal", _req(b"", method="GET", path=("/../../etc/passwd", "/predict/../metrics",
                                                          "/%2e%2e/%2e%2e/" + MARK, "//" + MARK, "/predict%00")[i % 5])),
            ("wrong-method", _req(_json(), method=("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE")[i % 5])),
            ("bad-method", f"G{MARK}@T / HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
            ("bad-version", f"POST /predict HTTP/{(9, 0, 3, 2, 1)[i % 5]}.{MARK}\r\nHost: x\r\n\r\n".encode()),
            ("long-request-line", f"GET /{MARK * (1100 + i)} HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
            ("long-header", _req(_json(), extra=f"X-A: {MARK * (1100 + i)}\r\n")),
            ("10k-headers", _req(_json(), extra="".join(f"X-{MARK}-{k}: v\r\n" for k in range(10_000)))),
            ("header-without-colon", _req(_json(), extra=f"{MARK} no colon here {i}\r\n")),
            ("nul-in-header", _req(_json(), extra=f"X-A: a\x00{MARK}\r\n")),
            ("cl-te-conflict", _req(b"5\r\nhello\r\n0\r\n\r\n", extra="Transfer-Encoding: chunked\r\n")),
            ("two-lengths", _req(_json(), extra=f"Content-Length: {len(_json()) + 1 + i}\r\n")),
            ("bad-length", _req(_json(), length=-1, extra=f"Content-Length: {('-5', 'abc', '1e3', MARK, '0x10')[i % 5]}\r\n")),
            ("bad-chunk", _req(f"zz{MARK}\r\nxx\r\n0\r\n\r\n".encode(), length=-1, extra="Transfer-Encoding: chunked\r\n")),
            ("tls-hello", bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]) + m + bytes(range(i + 10))),
            ("bare-newlines", b"\r\n" * (i + 2) + m + b"\r\n\r\n"),
            ("pipelined-garbage", _req(_json()).replace(b"Connection: close\r\n", b"") + m + b" / HTTP/1.1\r\n\r\n"),
        ]
    return cases


def _responses(data: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Split the bytes a connection got into (status, headers, body) responses."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, f"a truncated response: {data[:200]!r}"
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        n = int(headers["content-length"])
        out.append((int(lines[0].split()[1]), headers, rest[:n]))
        data = rest[n:]
    return out


async def _send(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        return await asyncio.wait_for(reader.read(), 3.0)  # every case ends with the server closing
    except (ConnectionError, asyncio.IncompleteReadError):
        return b""
    finally:
        writer.close()


@pytest.mark.slow
async def test_no_malformed_request_reaches_a_500_or_echoes_itself() -> None:
    stack = await start_stack(CFG, LIM, max_body_bytes=MAX_BODY)
    try:
        cases = corpus()
        assert len(cases) >= 300 and len({k for k, _ in cases}) >= 30
        gate = asyncio.Semaphore(16)
        kinds: dict[str, set[int]] = {}

        async def one(n: int, kind: str, raw: bytes) -> None:
            port = stack.port if n % 2 else stack.api_ports[n % 4 // 2]  # via the proxy, and straight
            async with gate:
                data = await _send(port, raw)
            got = _responses(data)
            assert got or kind in ("tls-hello", "bare-newlines"), (kind, data[:200])  # silence is allowed there
            for status, headers, body in got:
                kinds.setdefault(kind, set()).add(status)
                assert status < 500 or status == 503, (kind, status, body[:200])
                assert MARK.encode() not in data, (kind, data[:300])
                if status != 200:
                    assert headers["content-type"].startswith("application/json"), (kind, headers)
                    doc = json.loads(body)
                    assert doc["error"] and doc["reason"] and len(doc["reason"]) <= 200, (kind, doc)

        await asyncio.gather(*(one(n, kind, raw) for n, (kind, raw) in enumerate(cases)))
        assert all(s for s in kinds.values())
        ok = await _send(stack.port, _req(_json(request_id="after-the-corpus")))
        assert _responses(ok)[0][0] == 200
    finally:
        await stack.stop()
