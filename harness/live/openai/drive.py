"""Drive an OpenAI-compatible streaming endpoint open loop: one request per scheduled arrival.

`drive_stream(url, api, schedule, body_of, headers, timeout_s)` sends every request
of a token schedule at its scheduled time (open loop: a slow server cannot slow the
sender) with the body `body_of(seq, tenant)` gives, and reads its SSE answer line by
line (`stream.parse_line`). Every content chunk's arrival is a token's time: TTFT and
each inter-token gap are measured from the request's *scheduled* start, so the figures
are comparable with the sim's (`harness.engine.llm_metrics.run_figures` reads both).

An answer is finished when the server says so (a `finish_reason`, or `data: [DONE]`)
after at least one content chunk; its output tokens are then the server's
`usage.completion_tokens` when sent, else its content chunks (`stream.Tally`), and the
sequence's `output_tokens` become that count, so TPOT is (last - first) / (tokens - 1)
as vLLM's `bench serve` computes it. ITL is per token: a content chunk holding several
tokens (counted from the growth of a usage the server sends on every chunk, else with
the tokenizer, else one) spreads the gap before it evenly over them, one ITL each
(vllm #27485 is the bug of reading one gap per chunk; #42661 its fix). A 429 is
the server shedding the request (`Sequence.shed`), not an error; any other status, a
stream line that is not JSON, or a broken connection is an error (the first ones kept);
a stream that ends before the server said it finished is `cut`.

Every request has a bound, `timeout_s` from its scheduled start; a request not
finished by then is abandoned and counted as timed out, unfinished in the trace (the
tokens it got keep their times), never an exception. So a drive ends at most
`timeout_s` after its last scheduled start, whatever the server does.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp

from harness.engine.hdr import new_histogram
from harness.engine.llm_run import EngineTrace
from harness.live.openai.server_metrics import ScrapeSeries
from harness.live.openai.stream import DONE, Api, Chunk, Tally, parse_line
from targets.llm import Sequence
from workloads.llm import LlmSchedule

__all__ = ["BodyOf", "Driven", "drive_stream"]

_US = 1_000_000
MAX_ERRORS_KEPT = 5
BodyOf = Callable[[Sequence, str], dict[str, Any]]   # (the request, its tenant) -> its JSON body
CountTokens = Callable[[str], int]                   # a tokenizer's count of a text's tokens


@dataclass
class Driven:
    """One drive: the trace the metrics read, and how the answers were counted."""

    trace: EngineTrace
    tallies: list[Tally | None]               # per request, in schedule order (None: no 200 answer)
    asked_tokens: list[int]                   # max_tokens each request asked for
    errors: list[str] = field(default_factory=list)   # the first MAX_ERRORS_KEPT
    error_count: int = 0
    timed_out: int = 0
    cut: int = 0
    http_status: Counter[str] = field(default_factory=Counter)
    server: ScrapeSeries | None = None        # --server-metrics: the server's own series, from the origin
    ended_s: list[float] = field(default_factory=list)   # per request: when its answer ended, any outcome
    sent_s: list[float] = field(default_factory=list)    # per request: when its send began (its lag: less arrival_s)

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(text)


class _Request:
    """One request's reading of its answer (times in s since the drive's origin)."""

    def __init__(self, seq: Sequence, driven: Driven, itl: list[float], window_s: float,
                 count_tokens: CountTokens | None = None) -> None:
        self.seq, self.driven, self.itl, self.window_s = seq, driven, itl, window_s
        self.count_tokens = count_tokens
        self.tally = Tally()
        self.texts: list[str] | None = None   # the answer's text, kept when a list is set (conversations)

    def tokens_in(self, chunk: Chunk, usage_before: int | None) -> int:
        """How many tokens a content chunk holds: the growth of the server's running usage when it
        sends usage on every chunk, else the tokenizer's count of its text, else one."""
        if chunk.completion_tokens is not None and usage_before is not None:
            return max(1, chunk.completion_tokens - usage_before)
        if self.count_tokens is not None:
            return max(1, self.count_tokens(chunk.text))
        return 1

    def token(self, now: float, n: int = 1) -> None:
        """A content chunk of `n` tokens came at `now`: the gap since the last one is spread evenly
        over its `n` tokens (one ITL each), as vLLM's fix for multi-token chunks does (vllm #42661)."""
        seq = self.seq
        if seq.generated:
            self.itl.extend([(now - seq.last_token_s) / n] * n)
        else:
            seq.first_token_s = now
        seq.last_token_s = now
        seq.generated += n
        if now <= self.window_s:
            self.driven.trace.tokens_in_window += n

    def finish(self) -> None:
        seq, tally, trace = self.seq, self.tally, self.driven.trace
        if not tally.finished or not seq.generated:
            self.driven.cut += 1
            return
        seq.output_tokens = max(1, tally.tokens)
        seq.finish_s = seq.last_token_s
        if seq.last_token_s <= self.window_s:
            trace.tokens_in_window += max(0, tally.tokens - seq.generated)  # chunks that held several tokens
        if seq.first_token_s <= self.window_s:
            trace.prompt_tokens_in_window += tally.prompt_tokens or seq.prompt_tokens


async def _one(http: aiohttp.ClientSession, url: str, api: Api, body: dict[str, Any], headers: dict[str, str],
               req: _Request, t0: float, timeout_s: float, index: int) -> None:
    loop = asyncio.get_running_loop()
    seq, driven = req.seq, req.driven
    if index < len(driven.sent_s):
        driven.sent_s[index] = loop.time() - t0
    try:
        async with (asyncio.timeout_at(t0 + seq.arrival_s + timeout_s),
                    http.post(url, json=body, headers={**headers, "X-Request-Id": str(seq.id)}) as resp):
            driven.http_status[str(resp.status)] += 1
            if resp.status == 429:
                seq.shed = True
                return
            if resp.status != 200:
                driven.error(f"HTTP {resp.status}: {(await resp.text())[:200]}")
                return
            driven.tallies[index] = req.tally
            async for raw in resp.content:
                chunk = parse_line(raw, api)
                if chunk is None:
                    continue
                if chunk == DONE:
                    req.tally.done = True
                    break
                assert isinstance(chunk, Chunk)
                before = req.tally.usage_tokens
                if req.tally.add(chunk):
                    req.token(loop.time() - t0, req.tokens_in(chunk, before if req.tally.chunks > 1 else 0))
                    if req.texts is not None:
                        req.texts.append(chunk.text)
        req.finish()
    except TimeoutError:  # asyncio's and aiohttp's timeouts are TimeoutErrors
        driven.timed_out += 1
    except (aiohttp.ClientError, ValueError) as exc:  # ValueError: a stream line that is not JSON
        driven.error(f"{type(exc).__name__}: {exc}")
    finally:
        driven.ended_s[index] = loop.time() - t0


async def drive_stream(url: str, api: Api, schedule: LlmSchedule, body_of: BodyOf,
                       headers: dict[str, str] | None = None, timeout_s: float = 60.0,
                       count_tokens: CountTokens | None = None) -> Driven:
    """The schedule sent open loop to `url`; see the module doc. `count_tokens`: a tokenizer's count,
    for the tokens of a chunk. ValueError when `timeout_s` <= 0."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    loop = asyncio.get_running_loop()
    seqs = [Sequence(i, float(a), int(p), int(o), int(t)) for i, (a, p, o, t) in
            enumerate(zip(schedule.arrival_s, schedule.prompt_tokens, schedule.output_tokens, schedule.tenant))]
    trace = EngineTrace(seqs, schedule.duration_s, 0.0, new_histogram())
    driven = Driven(trace, [None] * len(seqs), [s.output_tokens for s in seqs],
                    ended_s=[float("nan")] * len(seqs), sent_s=[float("nan")] * len(seqs))
    itl: list[float] = []
    bodies = [body_of(seq, schedule.tenants[seq.tenant]) for seq in seqs]  # built before the clock starts
    # No session-wide timeout (aiohttp's default is 5 minutes in total): each request has its own bound.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=None)) as http:
        t0 = loop.time()
        tasks = []
        for i, seq in enumerate(seqs):
            await asyncio.sleep(max(0.0, t0 + seq.arrival_s - loop.time()))
            req = _Request(seq, driven, itl, schedule.duration_s, count_tokens)
            tasks.append(asyncio.create_task(_one(http, url, api, bodies[i], headers or {}, req, t0, timeout_s, i)))
        await asyncio.gather(*tasks)
        trace.end_s = loop.time() - t0
    trace.origin_s = t0
    for gap in itl:
        trace.itl.record_value(max(1, round(gap * _US)))
    return driven
