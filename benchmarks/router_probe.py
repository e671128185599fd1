"""Probe a shipped LLM router's policy on the wire: which worker it sends each prompt to.

Usage (from the repository root)::

    python benchmarks/router_probe.py vllm cache_aware     # about 20 s
    python benchmarks/router_probe.py sglang cache_aware

Three recording workers on 127.0.0.1 (aiohttp; they answer every probe the router
makes, note each completion's prompt and hold it `--hold` seconds before answering)
sit behind the router (`harness.live.llm_fleet_external.start_external_front`, as a
live fleet starts it). Then three patterns, each on prompts the router has not
seen (random printable text, 200 characters):

1. six distinct prompts one at a time (each answered before the next is sent): where
   does a cold prompt go on an idle fleet?
2. six distinct prompts 50 ms apart, all held at once: do cold prompts spread by load?
3. one prompt with a 300-character head, answered; then four prompts under that head
   sent at once: does a shared head pull them to the worker that has it?

Printed: the worker of each request in each pattern, and every path the router
asked the workers for besides completions (what it probes). This is how the sim's
model of each shipped policy (`harness.analysis.llm.fleet_live.SIM_OF`) was chosen.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import string
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from harness.live.llm_fleet_external import EXTERNAL_ROUTERS, external_available, start_external_front  # noqa: E402
from harness.live.llm_serve import MODEL_NAME  # noqa: E402

WORKERS = 3


class Worker:
    def __init__(self, index: int, hold_s: float, render: bool) -> None:
        self.index, self.hold_s, self.render = index, hold_s, render
        self.prompts: list[str] = []
        self.paths: Counter[str] = Counter()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if request.method == "POST" and path in ("/v1/completions", "/generate", "/v1/chat/completions"):
            body = await request.json()
            prompt = body.get("prompt") or body.get("text") or str(body.get("messages"))
            self.prompts.append(str(prompt))
            if prompt != "ready?":
                await asyncio.sleep(self.hold_s)
            return web.json_response({"id": "x", "object": "text_completion", "model": MODEL_NAME,
                                      "choices": [{"index": 0, "text": " ok", "finish_reason": "length"}],
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        self.paths[f"{request.method} {path}"] += 1
        if request.method == "POST" and path.endswith("/render") and self.render:
            body = await request.json()   # vLLM's shape: one rendered prompt per prompt
            return web.json_response([{"token_ids": [ord(c) for c in str(body.get("prompt", ""))],
                                       "sampling_params": {}, "model": MODEL_NAME, "request_id": "cmpl-probe"}])
        if path == "/v1/models":
            return web.json_response({"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]})
        if path in ("/get_model_info", "/model_info"):
            return web.json_response({"model_path": MODEL_NAME, "is_generation": True})
        if path in ("/get_server_info", "/server_info"):
            return web.json_response({"model_path": MODEL_NAME})
        return web.json_response({"status": "ok"})


def text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + " ") for _ in range(n))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("router", choices=sorted(EXTERNAL_ROUTERS))
    ap.add_argument("policy")
    ap.add_argument("--hold", type=float, default=1.0, help="seconds each worker holds a completion")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--render", action="store_true",
                    help="answer POST /v1/completions/render with token ids (one per character), as vLLM does")
    args = ap.parse_args()
    if not external_available(args.router):
        sys.exit(f"{args.router}-router is not installed: {EXTERNAL_ROUTERS[args.router].install}")
    rng = random.Random(args.seed)
    workers = [Worker(i, args.hold, args.render) for i in range(WORKERS)]
    runners, urls = [], []
    for w in workers:
        runner = web.AppRunner(w.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        urls.append(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}")  # type: ignore[union-attr]
    proc, url = await start_external_front(args.router, urls, args.policy)

    def where(prompt: str) -> int:
        return next(w.index for w in workers if prompt in w.prompts)

    async def send(http: aiohttp.ClientSession, prompt: str) -> None:
        async with http.post(url, json={"model": MODEL_NAME, "prompt": prompt, "max_tokens": 1}) as resp:
            await resp.read()
            assert resp.status == 200, (resp.status, await resp.text())

    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            print(f"{args.router}-router --policy {args.policy}, {WORKERS} workers holding each answer {args.hold:g} s")
            serial = [text(rng, 200) for _ in range(6)]
            for p in serial:
                await send(http, p)
            print(f"1. six cold prompts one at a time: workers {[where(p) for p in serial]}")
            spread = [text(rng, 200) for _ in range(6)]
            tasks = []
            for p in spread:
                tasks.append(asyncio.create_task(send(http, p)))
                await asyncio.sleep(0.05)
            await asyncio.gather(*tasks)
            print(f"2. six cold prompts 50 ms apart: workers {[where(p) for p in spread]}")
            head = text(rng, 300)
            first = head + text(rng, 40)
            await send(http, first)
            under = [head + text(rng, 40) for _ in range(4)]
            await asyncio.gather(*(send(http, p) for p in under))
            print(f"3. a head answered on worker {where(first)}; four prompts under it at once: "
                  f"workers {[where(p) for p in under]}")
        probes = sum((w.paths for w in workers), Counter())
        print(f"what it asked the workers besides completions: {dict(probes) or 'nothing'}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
        for r in runners:
            await r.cleanup()


if __name__ == "__main__":
    t0 = time.monotonic()
    asyncio.run(main())
    print(f"({time.monotonic() - t0:.1f} s)")
