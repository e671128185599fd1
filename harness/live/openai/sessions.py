"""Drive conversations against an OpenAI-compatible streaming endpoint under a load mode.

`drive_sessions(url, api, conversations, load, request_of, ...)` sends each conversation's turns
in order on one user: turn k goes `think_time_s` after turn k-1's answer ended, carrying the
earlier turns and the answers the server actually gave (`request_of(history, prompt, index)`
builds its body from them: `turns.TurnBuilder`). A single prompt is a conversation of one turn.
The load (`load.Load`) decides when conversations start: `starts_s` (seeded arrivals, or the
file's times) for an open loop or replay; `concurrency` users in a closed loop, each taking the
next conversation as its last ends; `max_concurrency` slots under an open loop, the wait for a
slot kept per request (`TurnRecord.slot_wait_s`), apart from the server's latency.

Each request is read as `drive.drive_stream` reads it (the same `_Request` and `_one`): TTFT,
ITL and TPOT from when it was sent (`Sequence.arrival_s`: the scheduled time, or the slot's
grant under a cap), `timeout_s` its bound from then. Bounds: no turn is sent once `duration_s`
has passed since the start (its conversation ends there), a turn that waits for a slot past
`timeout_s` is dropped (`slot_timeouts`), a turn that fails ends its conversation; so a drive
ends by `duration_s` + 2 `timeout_s` whatever the server does.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Callable, Sequence as Seq

import aiohttp

from harness.engine.hdr import new_histogram
from harness.engine.llm_run import EngineTrace
from harness.live.openai.drive import _US, CountTokens, Driven, _one, _Request
from harness.live.openai.load import Load, LoadMode
from harness.live.openai.stream import Api
from targets.llm import Sequence
from workloads.datasets import Conversation, Message, Prompt

__all__ = ["RequestOf", "SessionsDriven", "TurnRecord", "drive_sessions"]

# (history, this turn's prompt, the request's index) -> (its JSON body, the messages it sends, prompt tokens,
# max_tokens)
RequestOf = Callable[[tuple[Message, ...], Prompt, int], tuple[dict[str, Any], tuple[Message, ...], int, int]]


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """Request i of the trace: its conversation, turn (1-based), when it was ready to go and how long it
    waited for a slot (s), and its context's length (prompt tokens, as estimated when sent)."""

    conversation: int
    turn: int
    ready_s: float
    slot_wait_s: float
    context_tokens: int


@dataclass
class SessionsDriven:
    driven: Driven
    turns: list[TurnRecord] = field(default_factory=list)    # parallel to driven.trace.seqs
    conversations: int = 0                                  # started
    max_in_flight: int = 0                                  # the client's own count
    slot_timeouts: int = 0
    itl_by_turn: dict[int, list[float]] = field(default_factory=dict)   # turn -> its inter-token gaps (s)


class _InFlight:
    def __init__(self) -> None:
        self.now = self.max = 0

    def enter(self) -> None:
        self.now += 1
        self.max = max(self.max, self.now)

    def leave(self) -> None:
        self.now -= 1


async def drive_sessions(url: str, api: Api, conversations: Seq[Conversation], load: Load, request_of: RequestOf,
                         duration_s: float, starts_s: Seq[float] | None = None, headers: dict[str, str] | None = None,
                         timeout_s: float = 60.0,
                         opening: Callable[[int], tuple[Message, ...]] | None = None,
                         count_tokens: CountTokens | None = None, start_at: float | None = None) -> SessionsDriven:
    """See the module doc. `starts_s`: each conversation's start (s from the drive's start) for an open
    loop or replay (one per conversation); unused in a closed loop. `opening(conversation)`: the
    messages every turn of it starts with (a shared system prompt). `start_at`: the loop time of the
    drive's start (time.monotonic on the driver's loop, which every process of a machine shares: the
    driver processes of one run start together); None: as soon as the session is open. ValueError
    for a bad bound."""
    if not timeout_s > 0 or not duration_s > 0:
        raise ValueError(f"timeout_s and duration_s must be > 0, got {timeout_s!r}, {duration_s!r}")
    closed = load.mode is LoadMode.CONCURRENCY
    if not closed and (starts_s is None or len(starts_s) != len(conversations)):
        raise ValueError("an open loop needs one start time per conversation")
    loop = asyncio.get_running_loop()
    trace = EngineTrace([], duration_s, 0.0, new_histogram())
    out = SessionsDriven(Driven(trace, [], []))
    itl: list[float] = []
    flight = _InFlight()
    slots = asyncio.Semaphore(load.max_concurrency) if load.mode is LoadMode.CAPPED and load.max_concurrency else None
    hdrs = headers or {}

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=None)) as http:
        if start_at is not None:
            await asyncio.sleep(max(0.0, start_at - loop.time()))
        t0 = loop.time() if start_at is None else start_at

        async def turn(conv: int, k: int, prompt: Prompt, history: tuple[Message, ...],
                       ready_s: float) -> tuple[Message, ...] | None:
            if slots is not None:
                try:
                    async with asyncio.timeout(timeout_s):
                        await slots.acquire()
                except TimeoutError:
                    out.slot_timeouts += 1
                    return None
            try:
                index = len(trace.seqs)
                # The body (history, token counts) is built before the clock is read: its cost is the
                # client's, not the server's, and a closed loop's TTFT is from this reading.
                body, messages, prompt_tokens, max_tokens = request_of(history, prompt, index)
                sent_s = loop.time() - t0
                seq = Sequence(index, sent_s if slots is not None or closed else ready_s, prompt_tokens, max_tokens)
                trace.seqs.append(seq)
                out.driven.tallies.append(None)
                out.driven.ended_s.append(float("nan"))
                out.driven.sent_s.append(float("nan"))
                out.driven.asked_tokens.append(max_tokens)
                out.turns.append(TurnRecord(conv, k, ready_s, max(0.0, sent_s - ready_s) if slots else 0.0,
                                            prompt_tokens))
                gaps: list[float] = []
                req = _Request(seq, out.driven, gaps, duration_s, count_tokens)
                req.texts = []
                flight.enter()
                try:
                    await _one(http, url, api, body, hdrs, req, t0, timeout_s, index)
                finally:
                    flight.leave()
                    itl.extend(gaps)
                    out.itl_by_turn.setdefault(k, []).extend(gaps)
            finally:
                if slots is not None:
                    slots.release()
            if math.isnan(seq.finish_s):
                return None
            return (*messages, Message("assistant", "".join(req.texts)))

        async def conversation(conv: int, start_s: float) -> None:
            out.conversations += 1
            c = conversations[conv]
            history: tuple[Message, ...] | None = opening(conv) if opening is not None else ()
            ready = start_s
            for k, prompt in enumerate(c.turns, 1):
                if ready >= duration_s:
                    return
                await asyncio.sleep(max(0.0, t0 + ready - loop.time()))
                assert history is not None
                history = await turn(conv, k, prompt, history, ready)
                if history is None:
                    return
                ready = loop.time() - t0 + c.think_time_s

        if closed:
            taken = count()

            async def user() -> None:
                while (now := loop.time() - t0) < duration_s:
                    conv = next(taken)
                    if conv >= len(conversations):
                        return
                    await conversation(conv, now)

            await asyncio.gather(*(user() for _ in range(load.concurrency or 1)))
        else:
            assert starts_s is not None
            tasks = []
            for conv, start in enumerate(starts_s):
                if start >= duration_s:
                    break
                await asyncio.sleep(max(0.0, t0 + start - loop.time()))
                tasks.append(asyncio.create_task(conversation(conv, start)))
            await asyncio.gather(*tasks)
        trace.end_s = loop.time() - t0
    trace.origin_s = t0
    out.max_in_flight = flight.max
    for gap in itl:
        trace.itl.record_value(max(1, round(gap * _US)))
    return out
