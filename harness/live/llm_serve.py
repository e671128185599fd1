"""The tiny decoder served behind the OpenAI-compatible `/v1/completions` server, on an address.

`start_llm_server(spec, host, port)` builds the live engine with `spec`'s
scheduler (`llm-static`, `llm-dynamic` or `llm-continuous`), serves
`targets.llm.server.create_llm_app` on `host:port` (0: any free port) and
returns the running server; `await server.close()` stops it. `harness serve
llm-...` serves one until Ctrl-C; `harness.live.llm_drive.serve_and_drive`
serves one on 127.0.0.1 for the length of a driven schedule.

Closing gives requests still in flight `shutdown_timeout_s` (1 s by default)
to finish, then cancels them: a request the scheduler never runs (a static
batch that never fills) must not hold the close for aiohttp's default minute.

Loopback is the caller's to check (`targets.http.limits.check_exposure`): this binds
what it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from aiohttp import web

from targets.llm import LlmEngineSpec
from targets.llm.live_engine import LiveEngine

__all__ = ["LlmServer", "MAX_LEN", "MODEL_NAME", "start_llm_server"]

MODEL_NAME = "tiny-llm"   # the `model` the server answers to
MAX_LEN = 512             # the tiny decoder's context (prompt + output tokens), as LIVE_ENGINE is sized for


@dataclass
class LlmServer:
    engine: LiveEngine
    runner: web.AppRunner
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1/completions"

    async def close(self) -> None:
        await self.runner.cleanup()


async def start_llm_server(spec: LlmEngineSpec, host: str = "127.0.0.1", port: int = 0, *,
                           token: str | None = None, tenants: tuple[str, ...] = (), max_len: int = MAX_LEN,
                           seed: int = 0, threads: int | None = 1, shutdown_timeout_s: float = 1.0,
                           count_tokens: Callable[[str], int] | None = None) -> LlmServer:
    """The tiny decoder (`seed`, `max_len`) served with `spec`'s scheduler on `host:port`, knowing
    `tenants` up front (`LiveEngine.for_spec`). torch runs on `threads` intra-op threads (one by
    default: the tiny model gains nothing from more, which only contend with the server for the
    cores; None leaves torch's setting). `count_tokens`: how `usage` counts tokens (a tokenizer's
    count, `--tokenizer`; None: the decoder's bytes). OSError when the address cannot be bound."""
    from targets.gpu.executor import torch_threads
    from targets.llm.decoder import TinyDecoder
    from targets.llm.server import create_llm_app

    torch_threads(threads)
    engine = LiveEngine.for_spec(TinyDecoder(seed=seed, max_len=max_len), spec, tenants)
    runner = web.AppRunner(create_llm_app(engine, MODEL_NAME, token=token, count_tokens=count_tokens), shutdown_timeout=shutdown_timeout_s)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # an asyncio.Server once started
    return LlmServer(engine, runner, host, bound)
