"""A small OpenAI-compatible streaming server for tests, with set timing, on a thread of its own.

`serve(FakeOpenAI(ttft_s=0.05, itl_s=0.01))` yields the completions URL of a server on
127.0.0.1 that answers every request after `ttft_s` (plus `queue_s` per request in flight:
a server that slows under load), then one chunk per `tokens_per_chunk` tokens, each `itl_s` per token it holds after the one before, exactly `max_tokens` tokens; usage in a last chunk without choices when asked
(`usage`; on every chunk too with `continuous_usage`); none after `hang_after` requests; a prompt counts `tokens_per_word` per word plus `overhead` tokens. It runs
on its own thread and loop, so code under test may run its own `asyncio.run`.

`serve_process(cfg)` runs it in a process of its own instead (`python -m tests.harness.fake_openai`),
so that a client's figures are not moved by the server's share of this process (the GIL): the truth
checks use that. Only the timing fields travel (`ttft_s`, `itl_s`, `tokens_per_chunk`,
`continuous_usage`, `max_concurrent`, `model`); what the server saw stays in its process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from harness.live.serve_child import stop_child


@dataclass
class FakeOpenAI:
    ttft_s: float = 0.02
    itl_s: float = 0.005
    queue_s: float = 0.0            # added to TTFT per request already in flight
    usage: bool = True              # send usage when asked
    refuse_ignore_eos: bool = False
    tokens_per_chunk: int = 1
    tokens_per_word: int = 2
    overhead: int = 3
    hang_after: int | None = None   # answer this many requests, then never answer again
    continuous_usage: bool = False  # usage (completion tokens so far) on every content chunk, as vLLM's option
    model: str = "fake-model"
    tag_answers: bool = False       # each answer's first chunk is "<aN>" (N: the request's number), to trace it
    max_concurrent: int | None = None   # serve at most this many at once; the rest wait (as guidellm's mock)
    seen: list[dict] = field(default_factory=list)
    # What it did, by its own clock: per answer, (received -> first chunk written, per-token gaps: each
    # gap between chunk writes over the chunk's tokens), the truth a client's TTFT and ITL are held to.
    wrote: list[tuple[float, list[float]]] = field(default_factory=list)
    inflight: int = 0
    max_inflight: int = 0
    inflight_at: list[int] = field(default_factory=list)   # parallel to seen: requests in flight, this one included

    def run_peak(self) -> int:
        """The most requests in flight when one of a run's requests (not a probe: user "probe") arrived;
        the probes all end before a run starts, so this counts the run's requests only."""
        return max((n for body, n in zip(self.seen, self.inflight_at) if body.get("user") != "probe"), default=0)


def app_of(cfg: FakeOpenAI) -> web.Application:
    state: dict = {}

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": cfg.model, "object": "model"}]})

    async def complete(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        cfg.seen.append(body)
        cfg.inflight_at.append(cfg.inflight + 1)   # (a request refused below is counted here, not in flight)
        if cfg.refuse_ignore_eos and "ignore_eos" in body:
            return web.json_response({"error": {"message": "unknown field ignore_eos"}}, status=400)
        if body.get("model") != cfg.model:
            return web.json_response({"error": {"message": "no such model"}}, status=404)
        chat = request.path.endswith("/chat/completions")
        text = " ".join(m["content"] for m in body["messages"]) if chat else body["prompt"]
        prompt_tokens = cfg.tokens_per_word * len(text.split()) + cfg.overhead
        number = len(cfg.seen)
        cfg.inflight += 1
        cfg.max_inflight = max(cfg.max_inflight, cfg.inflight)
        if cfg.max_concurrent is not None and "slots" not in state:
            state["slots"] = asyncio.Semaphore(cfg.max_concurrent)
        slot = state.get("slots")
        loop = asyncio.get_running_loop()
        received, writes = loop.time(), []
        try:
            if slot is not None:
                await slot.acquire()
            await asyncio.sleep(cfg.ttft_s + cfg.queue_s * (cfg.inflight - 1))
            if cfg.hang_after is not None and len(cfg.seen) > cfg.hang_after:
                await asyncio.sleep(3600)
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            n = body["max_tokens"]
            sent = 0
            while sent < n:
                k = min(cfg.tokens_per_chunk, n - sent)
                if sent:  # a chunk of k tokens comes k token-times after the one before it
                    await asyncio.sleep(cfg.itl_s * k)
                word = f"<a{number}>" if cfg.tag_answers and sent == 0 else "x" * k
                piece = {"delta": {"content": word}} if chat else {"text": word}
                doc: dict = {"choices": [{**piece, "finish_reason": None}]}
                sent += k
                if cfg.continuous_usage:
                    doc["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": sent,
                                    "total_tokens": prompt_tokens + sent}
                await resp.write(f"data: {json.dumps(doc)}\n\n".encode())
                writes.append((loop.time(), k))
            end = {"delta": {}} if chat else {"text": ""}
            await resp.write(f"data: {json.dumps({'choices': [{**end, 'finish_reason': 'length'}]})}\n\n".encode())
            if cfg.usage and (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
                await resp.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            gaps = [(t - t0) / k for (t0, _), (t, k) in zip(writes, writes[1:]) for _ in range(k)]
            cfg.wrote.append((writes[0][0] - received, gaps))
            return resp
        finally:
            cfg.inflight -= 1
            if slot is not None:
                slot.release()

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", complete)
    app.router.add_post("/v1/chat/completions", complete)
    return app


@contextmanager
def serve(cfg: FakeOpenAI, chat: bool = False) -> Iterator[str]:
    """The server's completions (or chat) URL while the block runs."""
    ready = threading.Event()
    state: dict = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        state["loop"] = loop
        runner = web.AppRunner(app_of(cfg), shutdown_timeout=0.5)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{state['port']}/v1/{'chat/' if chat else ''}completions"
    finally:
        state["loop"].call_soon_threadsafe(state["loop"].stop)
        thread.join(10)


ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


@contextmanager
def serve_process(cfg: FakeOpenAI, chat: bool = False) -> Iterator[str]:
    """As `serve`, with the server in a process of its own (see the module doc)."""
    cmd = [sys.executable, "-m", "tests.harness.fake_openai", "--ttft-ms", f"{cfg.ttft_s * 1000:g}",
           "--itl-ms", f"{cfg.itl_s * 1000:g}", "--tokens-per-chunk", str(cfg.tokens_per_chunk), "--model", cfg.model]
    if cfg.continuous_usage:
        cmd.append("--continuous-usage")
    if cfg.max_concurrent is not None:
        cmd += ["--max-concurrent", str(cfg.max_concurrent)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()   # "PORT n" once it listens (a bound: the child exits on error)
        if not line.startswith("PORT "):
            raise RuntimeError(f"the fake server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1/{'chat/' if chat else ''}completions"
    finally:
        stop_child(proc)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="A fake OpenAI-compatible streaming server with set timing.")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--continuous-usage", action="store_true")
    ap.add_argument("--max-concurrent", type=int)
    ap.add_argument("--model", default="fake-model")
    args = ap.parse_args(argv)
    cfg = FakeOpenAI(ttft_s=args.ttft_ms / 1000, itl_s=args.itl_ms / 1000, tokens_per_chunk=args.tokens_per_chunk,
                     continuous_usage=args.continuous_usage, max_concurrent=args.max_concurrent, model=args.model)

    async def run() -> None:
        runner = web.AppRunner(app_of(cfg), shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        print(f"PORT {site._server.sockets[0].getsockname()[1]}", flush=True)  # type: ignore[union-attr]
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
