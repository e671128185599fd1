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

import math
from dataclasses import dataclass
from typing import Any

from harness.engine.llm_run import EngineTrace, simulate
from harness.live.openai.drive import drive_stream
from harness.live.openai.stream import Api
from targets.llm import LlmEngineSpec, Sequence
from workloads.llm import LlmSchedule

__all__ = ["DEFAULT_REQUEST_TIMEOUT_S", "MAX_REQUEST_TIMEOUT_S", "MIN_REQUEST_TIMEOUT_S", "Served", "drive",
           "request_timeout_s", "serve_and_drive"]

SLO_MULTIPLE = 10.0                 # a request is abandoned at ten times its SLO budget...
MIN_REQUEST_TIMEOUT_S = 5.0         # ...but never sooner than this
MAX_REQUEST_TIMEOUT_S = 120.0       # ...nor later than this
DEFAULT_REQUEST_TIMEOUT_S = 60.0    # with no SLO to derive it from


def request_timeout_s(slo_ttft_s: float, slo_tpot_s: float, output_tokens: int,
                      multiple: float = SLO_MULTIPLE) -> float:
    """The bound on one request of up to `output_tokens` tokens from its scheduled start: `multiple`
    (ten) times its SLO budget (TTFT + TPOT x the tokens after the first), within
    [MIN, MAX]_REQUEST_TIMEOUT_S."""
    budget = slo_ttft_s + slo_tpot_s * max(0, output_tokens - 1)
    return min(MAX_REQUEST_TIMEOUT_S, max(MIN_REQUEST_TIMEOUT_S, multiple * budget))


async def drive(url: str, schedule: LlmSchedule, model: str,
                timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[EngineTrace, list[str], int]:
    """The schedule sent open loop to `url` (`harness.live.openai.drive_stream`), each prompt as
    `prompt_tokens` token ids; the trace the metrics read, the first errors, and how many requests
    timed out (each abandoned `timeout_s` after its scheduled start; unfinished in the trace)."""
    def body(seq: Sequence, tenant: str) -> dict[str, Any]:
        return {"model": model, "prompt": [65 + (seq.id + i) % 26 for i in range(seq.prompt_tokens)],
                "max_tokens": seq.output_tokens, "stream": True, "stream_options": {"include_usage": True},
                "user": tenant}

    driven = await drive_stream(url, Api.COMPLETIONS, schedule, body, timeout_s=timeout_s)
    return driven.trace, driven.errors, driven.timed_out


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
