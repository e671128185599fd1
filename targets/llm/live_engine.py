"""The live LLM engine: a scheduler's steps run on the real tiny decoder, one iteration at a time.

The same step machine as in sim (`Continuous` by default) decides every
iteration; this loop only executes it. Whenever the engine is idle it asks
`schedule(now)`, runs the step's prefill chunks and decode tokens on the model
in a worker thread (torch must not block the event loop serving HTTP), calls
`complete(step, now)` and hands each new token to its request's stream. A
preempted sequence's cache is dropped and rebuilt from its prompt and the
tokens it already streamed, as the scheduler's recompute preemption assumes.
The clock is the event loop's: wall time live.

Prefix caching (`prefix_caching`, continuous only): each sequence is named by its
prompt's full blocks (`live_prefix.names_of`), and by its answer's as they fill;
the scheduler's `PrefixCache` decides what is cached and evicted, and a
`BlockStore` keeps the real keys and values of those blocks, so a hit starts the
sequence's cache from them and only the rest is prefilled (`prefix_figures`).

Tenants: a request names its tenant (the server reads OpenAI's `user` field;
`DEFAULT_TENANT` when none), and the engine gives each name the index
`Sequence.tenant` that the scheduler's limits and priority classes key on.
`for_spec` builds the scheduler with the names it must know up front (those
`tenant_priority` gives a class, and a workload's); any other name gets the next
index on first sight, class 0. A name is a client's word, not an identity: a
client can take a fresh name for a fresh bucket, so at most `MAX_TENANTS` names
get their own index and later ones share one, which bounds the engine's memory
and makes a flood of new names share one limit.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import count
from typing import AsyncIterator

from targets.llm import LlmEngineSpec, LlmScheduler, create_scheduler
from targets.llm.continuous import Continuous
from targets.llm.decoder import Cache, TinyDecoder, cache_len
from targets.llm.live_prefix import BlockStore, names_of
from targets.llm.sequence import Sequence, Step
from targets.llm.tenants import TenantAdmission

__all__ = ["DEFAULT_TENANT", "MAX_TENANTS", "LiveEngine", "RateLimited", "prefix_cache_of"]

DEFAULT_TENANT = "default"   # as a workload's single tenant is named
MAX_TENANTS = 4096


class RateLimited(ValueError):
    """The request's tenant is over its limits (`targets.llm.tenants`): it was shed. `retry_after_s`:
    how long until the same request would pass (inf: never, it is larger than the tenant's burst)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


_DONE = -1


def prefix_cache_of(scheduler: LlmScheduler) -> BlockStore | None:
    """A block store over the scheduler's prefix cache (None: it has none), through tenant limits."""
    inner = scheduler.inner if isinstance(scheduler, TenantAdmission) else scheduler
    if isinstance(inner, Continuous) and inner.prefix is not None:
        return BlockStore(inner.prefix)
    return None

MAX_LOGGED_STEPS = 100_000


@dataclass(eq=False)
class _Live:
    seq: Sequence
    ids: list[int]                      # prompt, then every token streamed
    cache: Cache | None = None
    kept: int = 0                       # leading blocks checked into the block store
    out: asyncio.Queue[int] = field(default_factory=asyncio.Queue)


class LiveEngine:
    def __init__(self, model: TinyDecoder, scheduler: LlmScheduler, tenants: tuple[str, ...] = ()) -> None:
        """`tenants`: names in the index order `scheduler` was built with (`create_scheduler`'s)."""
        self.model, self.scheduler = model, scheduler
        self.tenants: dict[str, int] = {name: i for i, name in enumerate(tenants)}
        self._live: dict[int, _Live] = {}
        self._ids = count()
        self._wake = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tiny-llm")
        self._task: asyncio.Task[None] | None = None
        self.steps = 0
        self.busy_s = 0.0   # wall seconds of steps, schedule to complete (the sim's busy GPU-seconds)
        # (prefill tokens, decode rows, context tokens, wall s) per step, schedule to complete: the rows
        # `harness profile llm` fits the sim's step cost to (bounded: the first MAX_LOGGED_STEPS).
        self.step_log: list[tuple[int, int, int, float]] = []
        # Beside each logged step: how long the engine sat idle before it (s; since start for the first),
        # what `StepCost.wake_s` is fitted from.
        self.step_idle: list[float] = []
        self._last_end = 0.0
        # Request id -> its sequence, in the engine's clock (arrival: when the engine saw it; token times:
        # when the engine made them), for requests that named an id; the same bound. `profile llm` sets
        # them beside the client's times to measure the front end.
        self.seen: dict[str, Sequence] = {}
        self.store = prefix_cache_of(scheduler)

    @classmethod
    def for_spec(cls, model: TinyDecoder, spec: LlmEngineSpec, tenants: tuple[str, ...] = ()) -> LiveEngine:
        """An engine with `spec`'s scheduler, knowing `tenants` (e.g. a workload's, so indices match
        its sim) and every tenant `spec.tenant_priority` names, in that order."""
        names = tuple(dict.fromkeys([*tenants, *(name for name, _ in spec.tenant_priority)]))
        return cls(model, create_scheduler(spec, names), names)

    def tenant_index(self, name: str) -> int:
        """`name`'s index, given on first sight; past MAX_TENANTS names, the one shared overflow index."""
        index = self.tenants.get(name)
        if index is None:
            if len(self.tenants) >= MAX_TENANTS:
                return MAX_TENANTS
            index = self.tenants[name] = len(self.tenants)
        return index

    @property
    def running(self) -> bool:
        """The engine loop is started and has not stopped."""
        return self._task is not None and not self._task.done()

    def info(self, model: str) -> dict[str, object]:
        """What `GET /get_server_info` answers: the model, the engine's state and its prefix cache's figures."""
        return {"model_path": model, "max_model_len": self.model.max_len, "steps": self.steps,
                "busy_s": round(self.busy_s, 6),
                "pending": self.scheduler.pending(), "running": self.scheduler.running(),
                "prefix_caching": self.store is not None, "prefix_cache": self.prefix_figures()}

    def flush_cache(self) -> int | None:
        """Drop the prefix cache's free blocks and their tensors while nothing is pending or running
        (the blocks dropped); None when busy (or no prefix cache: 0)."""
        if self.store is None:
            return 0
        if self.scheduler.pending() or self.scheduler.running() or self._live:
            return None
        return self.store.flush()

    def start(self) -> None:
        self._last_end = asyncio.get_running_loop().time()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="llm-engine")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._pool.shutdown(wait=True)

    async def generate(self, prompt: list[int], max_tokens: int, request_id: str | None = None,
                       tenant: str = DEFAULT_TENANT) -> AsyncIterator[int]:
        """Yield exactly `max_tokens` token ids as the engine makes them, for `tenant`; ValueError if it
        can never fit, RateLimited if its tenant's limits shed it."""
        now = asyncio.get_running_loop().time()
        seq = Sequence(next(self._ids), now, len(prompt), max_tokens, self.tenant_index(tenant))
        if self.store is not None:
            seq.block_hashes = names_of(prompt, self.store.cache.block_size)
        live = _Live(seq, list(prompt))
        if not self.scheduler.add(seq, now):
            if seq.shed:
                raise self._shed(seq, tenant, now)
            raise ValueError(f"{len(prompt)} prompt + {max_tokens} output tokens can never fit this engine")
        self._live[live.seq.id] = live
        if request_id is not None and len(self.seen) < MAX_LOGGED_STEPS:
            self.seen[request_id] = live.seq
        self._wake.set()
        while (token := await live.out.get()) != _DONE:
            yield token

    def _shed(self, seq: Sequence, tenant: str, now: float) -> RateLimited:
        # Only tenant limits shed (`Sequence.shed`), so the scheduler is a TenantAdmission.
        retry = self.scheduler.retry_at(seq, now) if isinstance(self.scheduler, TenantAdmission) else math.inf
        asked = f"{seq.prompt_tokens} prompt + {seq.output_tokens} output tokens"
        if retry == math.inf:
            return RateLimited(f"tenant '{tenant}': {asked} are more than its limit's burst: it can never pass", retry)
        return RateLimited(f"tenant '{tenant}' is over its rate limit ({asked}): try again in {retry - now:.2f} s",
                           retry - now)

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
            if self.store is not None:
                self.store.prune()
            tokens = await loop.run_in_executor(self._pool, self._execute, step)
            now = loop.time()
            if self.store is not None:
                self._name_answers(step, self.store.cache.block_size)
            out = self.scheduler.complete(step, now)
            if self.store is not None:
                self._keep(step)
            self.steps += 1
            self.busy_s += now - began
            if len(self.step_log) < MAX_LOGGED_STEPS:
                self.step_log.append((step.prefill_tokens, step.decode_seqs, step.context_tokens, now - began))
                self.step_idle.append(began - self._last_end)
            self._last_end = now
            for live, token in tokens:
                live.ids.append(token)
                live.out.put_nowait(token)
            for seq in out.finished:
                self._live.pop(seq.id).out.put_nowait(_DONE)
            if tokens:
                # Let the streams write what this step made before the next step takes the decoder's
                # thread: on a CPU decoder that thread holds the GIL for most of a step, so a chunk
                # written during it waits for the step (measured: the way out went from ~1 to ~2 ms
                # per token behind a replica taking most of the day's requests).
                await asyncio.sleep(0)

    def _name_answers(self, step: Step, bs: int) -> None:
        """Name the answer block each decode just filled (its tokens are all in `ids`), before `complete`
        commits it: a next turn that sends this answer back finds it cached."""
        for seq in step.decodes:
            filled = seq.computed + 1
            if filled % bs == 0 and len(seq.block_hashes) < filled // bs:
                seq.block_hashes = names_of(self._live[seq.id].ids[:filled], bs)

    def _keep(self, step: Step) -> None:
        """Copy into the block store the blocks this step filled that the prefix cache now holds."""
        store = self.store
        assert store is not None
        for seq in [s for s, _ in step.prefills] + step.decodes:
            live = self._live[seq.id]
            live.kept = store.keep(seq, live.cache, live.kept)

    def prefix_figures(self) -> dict[str, float | int | None] | None:
        """The prefix cache's figures over first admissions (None: no prefix caching): prompt tokens,
        hit tokens (served from cached blocks: the tokens saved from prefill), hit rate by tokens,
        evictions, blocks whose tensors are kept."""
        if self.store is None:
            return None
        s = self.store.cache.stats
        return {"lookups": s.lookups, "prompt_tokens": s.prompt_tokens, "hit_tokens": s.hit_tokens,
                "tokens_saved": s.hit_tokens, "hit_rate": s.hit_rate, "evictions": s.evictions,
                "blocks_kept": len(self.store.blocks)}

    def _execute(self, step: Step) -> list[tuple[_Live, int]]:
        """Run the step on the model (worker thread); the tokens sampled, in step order."""
        made = []
        for seq, n in step.prefills:
            live = self._live[seq.id]
            if cache_len(live.cache) != seq.computed:
                # First prefill, or recompute after preemption: from nothing, or from the cached prefix
                # the scheduler's prefix cache matched (its blocks' real keys and values).
                live.cache = None if seq.computed == 0 or self.store is None else self.store.sequence_cache(seq)
                live.kept = 0
            logits, live.cache = self.model(live.ids[seq.computed:seq.computed + n], live.cache)
            if n == seq.prefill_left:  # the prompt is complete: this pass samples a token
                made.append((live, self.model.greedy(logits)))
        for seq in step.decodes:
            live = self._live[seq.id]
            logits, live.cache = self.model(live.ids[-1:], live.cache)
            made.append((live, self.model.greedy(logits)))
        return made
