"""Drive a live OpenAI-compatible completions endpoint open loop, and check the sim against it.

`drive(url, schedule, model)` sends every request of a token schedule at its
scheduled time (open loop: a slow server cannot slow the sender), streaming,
with a prompt of exactly `prompt_tokens` token ids and `max_tokens` =
`output_tokens`, as its tenant (OpenAI's `user` field: the schedule's tenant
name). Every SSE chunk's arrival is a token's time: TTFT and each ITL are
measured from the request's *scheduled* start, so the figures are comparable
with the sim's (`harness.engine.llm_metrics.run_figures` reads both). A 429 is
its tenant's limit shedding the request (`Sequence.shed`, as the sim marks
it), not an error. `serve_and_drive(...)` serves the tiny decoder in this
process on 127.0.0.1, drives it, and simulates the same schedule with a
profiled cost.

Every request is named (`X-Request-Id`: its index in the schedule), so the
engine's own times for it can be set beside the client's: server, engine and
driver share one event loop and so one clock, and the gaps between the two
are the front end the sim's cost must include (`Served.front_in_s`,
`Served.front_out_s`): the driver's send, the HTTP hop and the handler before
the engine sees a request; the stream's queue, the SSE write and the client's
read after a token is made.

Every request has a bound, `timeout_s` from its scheduled start
(`request_timeout_s`: ten times its SLO budget, TTFT + TPOT x output tokens, within
[`MIN_REQUEST_TIMEOUT_S`, `MAX_REQUEST_TIMEOUT_S`]; `DEFAULT_REQUEST_TIMEOUT_S`
when no SLO is given). A request not finished by then is abandoned: it counts as
timed out (`drive`'s third value) and stays unfinished in the trace (the tokens
it got before keep their times), never an error and never an exception. So a
drive ends at most `timeout_s` after its last scheduled start, whatever the
server does.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass

import aiohttp

from harness.engine.llm_run import EngineTrace, simulate
from harness.engine.hdr import new_histogram
from targets.llm import LlmEngineSpec, Sequence
from workloads.llm import LlmSchedule

__all__ = ["DEFAULT_REQUEST_TIMEOUT_S", "MAX_REQUEST_TIMEOUT_S", "MIN_REQUEST_TIMEOUT_S", "Served", "drive",
           "request_timeout_s", "serve_and_drive"]

_US = 1_000_000
SLO_MULTIPLE = 10.0                 # a request is abandoned at ten times its SLO budget...
MIN_REQUEST_TIMEOUT_S = 5.0         # ...but never sooner than this
MAX_REQUEST_TIMEOUT_S = 120.0       # ...nor later than this
DEFAULT_REQUEST_TIMEOUT_S = 60.0    # with no SLO to derive it from


def request_timeout_s(slo_ttft_s: float, slo_tpot_s: float, output_tokens: int) -> float:
    """The bound on one request of up to `output_tokens` tokens from its scheduled start: ten times its
    SLO budget (TTFT + TPOT x the tokens after the first), within [MIN, MAX]_REQUEST_TIMEOUT_S."""
    budget = slo_ttft_s + slo_tpot_s * max(0, output_tokens - 1)
    return min(MAX_REQUEST_TIMEOUT_S, max(MIN_REQUEST_TIMEOUT_S, SLO_MULTIPLE * budget))


async def _one(http: aiohttp.ClientSession, url: str, model: str, seq: Sequence, tenant: str, t0: float,
               itl: list[float], errors: list[str], in_window: list[int], window_s: float, timeout_s: float,
               timed_out: list[int]) -> None:
    loop = asyncio.get_running_loop()
    body = {"model": model, "prompt": [65 + (seq.id + i) % 26 for i in range(seq.prompt_tokens)],
            "max_tokens": seq.output_tokens, "stream": True, "user": tenant}
    try:
        async with (asyncio.timeout_at(t0 + seq.arrival_s + timeout_s),
                    http.post(url, json=body, headers={"X-Request-Id": str(seq.id)}) as resp):
            if resp.status == 429:
                seq.shed = True
                return
            if resp.status != 200:
                errors.append(f"HTTP {resp.status}: {(await resp.text())[:200]}")
                return
            async for raw in resp.content:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                if not json.loads(line[6:])["choices"][0]["text"]:
                    continue  # the closing chunk carries usage, not a token
                now = loop.time() - t0
                if seq.generated:
                    itl.append(now - seq.last_token_s)
                else:
                    seq.first_token_s = now
                seq.last_token_s = now
                seq.generated += 1
                in_window[0] += now <= window_s
            if seq.generated == seq.output_tokens:
                seq.finish_s = seq.last_token_s
    except TimeoutError:  # asyncio's and aiohttp's timeouts (ServerTimeoutError too) are TimeoutErrors
        timed_out[0] += 1
    except aiohttp.ClientError as exc:
        errors.append(f"{type(exc).__name__}: {exc}")


async def drive(url: str, schedule: LlmSchedule, model: str,
                timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[EngineTrace, list[str], int]:
    """The schedule sent open loop to `url`; the trace the metrics read, any errors, and how many
    requests timed out (each abandoned `timeout_s` after its scheduled start; unfinished in the trace)."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    loop = asyncio.get_running_loop()
    seqs = [Sequence(i, float(a), int(p), int(o), int(t)) for i, (a, p, o, t) in
            enumerate(zip(schedule.arrival_s, schedule.prompt_tokens, schedule.output_tokens, schedule.tenant))]
    itl: list[float] = []
    errors: list[str] = []
    in_window, timed_out = [0], [0]
    # No session-wide timeout (aiohttp's default is 5 minutes in total): each request has its own bound.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=None)) as http:
        t0 = loop.time()
        tasks = []
        for seq in seqs:
            await asyncio.sleep(max(0.0, t0 + seq.arrival_s - loop.time()))
            tasks.append(asyncio.create_task(_one(http, url, model, seq, schedule.tenants[seq.tenant], t0, itl,
                                                   errors, in_window, schedule.duration_s, timeout_s,
                                                   timed_out)))
        await asyncio.gather(*tasks)
        end = loop.time() - t0
    trace = EngineTrace(seqs, schedule.duration_s, end, new_histogram(), origin_s=t0)
    for gap in itl:
        trace.itl.record_value(max(1, round(gap * _US)))
    trace.tokens_in_window = in_window[0]
    return trace, errors, timed_out[0]


@dataclass(frozen=True)
class Served:
    """One schedule served live beside its sim. `steps`: the live engine's step log (prefill tokens,
    decode rows, context tokens, s). `front_in_s`: per request, scheduled start to the engine seeing
    it; `front_out_s`: per first and last token of each request, the engine making it to the client
    reading its chunk."""

    sim: EngineTrace
    live: EngineTrace
    errors: list[str]
    steps: list[tuple[int, int, int, float]]
    front_in_s: list[float]
    front_out_s: list[float]
    timed_out: int = 0       # requests abandoned at the drive's per-request bound (unfinished in `live`)


def _front_end(live: EngineTrace, seen: dict[str, Sequence]) -> tuple[list[float], list[float]]:
    """The client's times of each request against the engine's (one clock: see the module doc)."""
    into, out = [], []
    for seq in live.seqs:
        mine = seen.get(str(seq.id))
        if mine is None or math.isnan(seq.finish_s):
            continue
        into.append(mine.arrival_s - (live.origin_s + seq.arrival_s))
        out.append(live.origin_s + seq.first_token_s - mine.first_token_s)
        out.append(live.origin_s + seq.finish_s - mine.finish_s)
    return into, out


async def serve_and_drive(spec: LlmEngineSpec, schedule: LlmSchedule, max_len: int = 512, seed: int = 0,
                          threads: int | None = 1, timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> Served:
    """One schedule served and simulated: the tiny decoder on 127.0.0.1 with `spec`'s scheduler, and
    `spec` simulated. torch runs on `threads` intra-op threads (one by default: the tiny model gains
    nothing from more, which only contend with the server and the driver for the cores; None leaves
    torch's setting). `timeout_s`: each request's bound (`drive`)."""
    from harness.live.llm_serve import MODEL_NAME, start_llm_server

    server = await start_llm_server(spec, tenants=schedule.tenants, max_len=max_len, seed=seed, threads=threads)
    try:
        live, errors, timed_out = await drive(server.url, schedule, MODEL_NAME, timeout_s)
    finally:
        await server.close()
    front_in, front_out = _front_end(live, server.engine.seen)
    return Served(simulate(spec, schedule), live, errors, server.engine.step_log, front_in, front_out, timed_out)
