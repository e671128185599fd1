"""The live LLM engine: a scheduler's steps run on the real tiny decoder, one iteration at a time.

The same step machine as in sim (`Continuous` by default) decides every
iteration; this loop only executes it. Whenever the engine is idle it asks
`schedule(now)`, runs the step's prefill chunks and decode tokens on the model
in a worker thread (torch must not block the event loop serving HTTP), calls
`complete(step, now)` and hands each new token to its request's stream. A
preempted sequence's cache is dropped and rebuilt from its prompt and the
tokens it already streamed, as the scheduler's recompute preemption assumes.
The clock is the event loop's: wall time live.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import count
from typing import AsyncIterator

from targets.llm import LlmScheduler
from targets.llm.decoder import Cache, TinyDecoder
from targets.llm.sequence import Sequence, Step

__all__ = ["LiveEngine"]

_DONE = -1
MAX_LOGGED_STEPS = 100_000


@dataclass(eq=False)
class _Live:
    seq: Sequence
    ids: list[int]                      # prompt, then every token streamed
    cache: Cache | None = None
    out: asyncio.Queue[int] = field(default_factory=asyncio.Queue)


class LiveEngine:
    def __init__(self, model: TinyDecoder, scheduler: LlmScheduler) -> None:
        self.model, self.scheduler = model, scheduler
        self._live: dict[int, _Live] = {}
        self._ids = count()
        self._wake = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tiny-llm")
        self._task: asyncio.Task[None] | None = None
        self.steps = 0
        # (prefill tokens, decode rows, context tokens, wall s) per step, schedule to complete: the rows
        # `harness profile llm` fits the sim's step cost to (bounded: the first MAX_LOGGED_STEPS).
        self.step_log: list[tuple[int, int, int, float]] = []
        # Request id -> its sequence, in the engine's clock (arrival: when the engine saw it; token times:
        # when the engine made them), for requests that named an id; the same bound. `profile llm` sets
        # them beside the client's times to measure the front end.
        self.seen: dict[str, Sequence] = {}

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="llm-engine")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._pool.shutdown(wait=True)

    async def generate(self, prompt: list[int], max_tokens: int, request_id: str | None = None
                       ) -> AsyncIterator[int]:
        """Yield exactly `max_tokens` token ids as the engine makes them; ValueError if it can never fit."""
        now = asyncio.get_running_loop().time()
        live = _Live(Sequence(next(self._ids), now, len(prompt), max_tokens), list(prompt))
        if not self.scheduler.add(live.seq, now):
            raise ValueError(f"{len(prompt)} prompt + {max_tokens} output tokens can never fit this engine")
        self._live[live.seq.id] = live
        if request_id is not None and len(self.seen) < MAX_LOGGED_STEPS:
            self.seen[request_id] = live.seq
        self._wake.set()
        while (token := await live.out.get()) != _DONE:
            yield token

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            step = self.scheduler.schedule(began)
            if step is None:  # idle until an arrival, or the scheduler's own timer (a batch's max wait)
                self._wake.clear()
                wake = self.scheduler.wake_at()
                try:
                    await asyncio.wait_for(self._wake.wait(), None if wake is None else max(0.0, wake - began))
                except TimeoutError:
                    pass
                continue
            tokens = await loop.run_in_executor(self._pool, self._execute, step)
            now = loop.time()
            out = self.scheduler.complete(step, now)
            self.steps += 1
            if len(self.step_log) < MAX_LOGGED_STEPS:
                self.step_log.append((step.prefill_tokens, step.decode_seqs, step.context_tokens, now - began))
            for live, token in tokens:
                live.ids.append(token)
                live.out.put_nowait(token)
            for seq in out.finished:
                self._live.pop(seq.id).out.put_nowait(_DONE)

    def _execute(self, step: Step) -> list[tuple[_Live, int]]:
        """Run the step on the model (worker thread); the tokens sampled, in step order."""
        made = []
        for seq, n in step.prefills:
            live = self._live[seq.id]
            if seq.computed == 0:
                live.cache = None  # first prefill, or recompute after preemption
            logits, live.cache = self.model(live.ids[seq.computed:seq.computed + n], live.cache)
            if n == seq.prefill_left:  # the prompt is complete: this pass samples a token
                made.append((live, self.model.greedy(logits)))
        for seq in step.decodes:
            live = self._live[seq.id]
            logits, live.cache = self.model(live.ids[-1:], live.cache)
            made.append((live, self.model.greedy(logits)))
        return made
