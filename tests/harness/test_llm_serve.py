"""`harness serve llm-...`: the tiny decoder served on its own, and the LLM driver's per-request bound.

The live tests start real servers on 127.0.0.1 (the CLI as a subprocess; tiny aiohttp servers in
process) and read real SSE over loopback; their time bounds are loose.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time

import aiohttp
import numpy as np
import pytest
from aiohttp import web
from typer.testing import CliRunner

from harness.cli import app
from harness.live.llm_drive import (MAX_REQUEST_TIMEOUT_S, MIN_REQUEST_TIMEOUT_S, drive, request_timeout_s)
from workloads.llm import LlmSchedule

runner = CliRunner()


def _harness(*args: str) -> subprocess.Popen:
    # SIGINT back to its default: a shell may start background jobs with it ignored.
    return subprocess.Popen([sys.executable, "-c", "from harness.cli import app; app()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _url(proc: subprocess.Popen, timeout_s: float = 90.0) -> str:
    """The URL the serve command prints on its first line."""
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        found = re.search(r"http://\S+/v1/completions", line)
        if found:
            return found.group(0)
    proc.kill()
    raise AssertionError(f"no URL printed: {proc.communicate()[1][-2000:]}")


async def _stream(url: str, headers: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """One streaming completion as a plain client reads it: the status and the `data:` payloads."""
    body = {"model": "tiny-llm", "prompt": "Once upon a time", "max_tokens": 6, "stream": True}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        async with http.post(url, json=body, headers=headers) as resp:
            events = []
            async for raw in resp.content:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    events.append(line[len("data: "):])
            return resp.status, events


@pytest.mark.live
def test_serve_llm_continuous_streams_sse_chunks_to_done():
    proc = _harness("serve", "llm-continuous", "--port", "0", "--token", "s3cret")
    try:
        url = _url(proc)
        assert url.startswith("http://127.0.0.1:")
        refused, _ = asyncio.run(_stream(url))
        assert refused == 401
        status, events = asyncio.run(_stream(url, {"Authorization": "Bearer s3cret"}))
        assert status == 200 and events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        tokens = [c["choices"][0]["text"] for c in chunks if c["choices"][0]["text"]]
        assert len(tokens) == 6  # one chunk per token, then the closing chunk
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        assert {c["id"] for c in chunks} == {chunks[0]["id"]} and chunks[0]["model"] == "tiny-llm"
    finally:
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=30)
    assert proc.returncode == 0, errs[-2000:]
    assert "stopped" in out


@pytest.mark.parametrize("args, message", [
    (["llm-continuous", "--model", "cnn"], "--model: not used by an LLM target"),
    (["llm-static", "--scale", "0.5", "--tenant", "a"], "--scale, --tenant: not used"),
    (["llm-continuous", "--host", "0.0.0.0"], "pass --expose"),
    (["llm-continuous", "--set", "nope=1"], "not an LLM engine knob"),
    (["llm-dynamic", "--set", "batch_size=0"], "batch_size must be >= 1"),
    (["llm-continuous", "--set", "batch_size"], "is not KEY=VALUE"),
    (["llm-nope"], "unknown LLM policy 'llm-nope'"),
])
def test_bad_llm_serves_fail_with_one_line_before_binding(args, message):
    res = runner.invoke(app, ["serve", *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


def test_the_request_bound_is_ten_slo_budgets_within_limits():
    assert request_timeout_s(2.0, 0.1, 25) == pytest.approx(10 * (2.0 + 0.1 * 24))
    assert request_timeout_s(0.01, 0.001, 1) == MIN_REQUEST_TIMEOUT_S
    assert request_timeout_s(2.0, 0.1, 10_000) == MAX_REQUEST_TIMEOUT_S


def _schedule(arrivals: list[float], output_tokens: int = 4) -> LlmSchedule:
    n = len(arrivals)
    return LlmSchedule("stall", duration_s=max(arrivals) + 0.01, tenants=("default",),
                       arrival_s=np.array(arrivals), prompt_tokens=np.full(n, 8),
                       output_tokens=np.full(n, output_tokens), tenant=np.zeros(n, dtype=np.int64))


async def _silent_server(handler) -> tuple[web.AppRunner, str]:  # type: ignore[no-untyped-def]
    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    srv = web.AppRunner(app, shutdown_timeout=0.1)
    await srv.setup()
    site = web.TCPSite(srv, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return srv, f"http://127.0.0.1:{port}/v1/completions"


@pytest.mark.live
async def test_a_server_that_never_answers_gives_timed_out_requests_within_the_bound():
    async def never(request: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        return web.Response()

    async def one_token_then_stall(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        doc = {"choices": [{"index": 0, "text": "A", "finish_reason": None}]}
        await resp.write(f"data: {json.dumps(doc)}\n\n".encode())
        await asyncio.sleep(3600)
        return resp

    for handler, got_first in ((never, False), (one_token_then_stall, True)):
        srv, url = await _silent_server(handler)
        try:
            start = time.monotonic()
            trace, errors, timed_out = await drive(url, _schedule([0.0, 0.1, 0.2]), "tiny-llm", timeout_s=0.5)
            took = time.monotonic() - start
        finally:
            await srv.cleanup()
        assert errors == [] and timed_out == 3, (handler.__name__, errors)
        assert 0.6 <= took < 3.0, (handler.__name__, took)  # last start 0.2 s + 0.5 s bound, loose on top
        assert all(np.isnan(s.finish_s) for s in trace.seqs)  # unfinished, as the metrics count them
        assert all((s.generated == 1) == got_first for s in trace.seqs)  # a token it got keeps its time


async def test_a_drive_needs_a_positive_bound():
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        await drive("http://127.0.0.1:9/v1/completions", _schedule([0.0]), "tiny-llm", timeout_s=0)


@pytest.mark.live
async def test_a_static_batch_that_never_fills_ends_at_the_bound_with_a_result():
    """Three requests never fill a static batch of four: each is abandoned at its bound, and closing the
    server does not wait on their handlers (aiohttp's default grace is a minute)."""
    from dataclasses import replace

    from harness.live.llm_drive import serve_and_drive
    from harness.live.llm_profile import LIVE_ENGINE
    from targets.llm import LlmPolicy

    spec = replace(LIVE_ENGINE, policy=LlmPolicy.STATIC, batch_size=4)
    start = time.monotonic()
    served = await serve_and_drive(spec, _schedule([0.0, 0.05, 0.1]), timeout_s=1.0)
    took = time.monotonic() - start
    assert served.errors == [] and served.timed_out == 3
    assert all(np.isnan(s.finish_s) for s in served.live.seqs)
    assert took < 8.0, took  # 0.1 s + the 1 s bound + a 1 s close grace, loose for a loaded machine
