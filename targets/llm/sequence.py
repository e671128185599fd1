"""One generation request as a scheduler sees it, and the step a scheduler hands the engine.

A `Sequence` generates exactly `output_tokens` tokens after a `prompt_tokens`
prompt: no end-of-sequence token ends it early, so a run is a function of the
lengths alone. The first output token comes out of the prefill forward pass
(as in vLLM and Hugging Face `generate`); every later token out of one decode
step. So a request alone on an engine has TTFT = prefill time and
E2E = prefill + (output_tokens - 1) x decode step.

A `Step` is what `schedule(now)` returns: plain data, the work of one forward
pass (which sequences prefill how many tokens, which decode one token) and the
three numbers the cost model prices (`targets.llm.cost.StepCost`). The engine
(the caller) prices it, advances its clock and calls `complete(step, now)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Sequence", "Step", "StepOutcome"]

_NEVER = math.nan


@dataclass(slots=True, eq=False)
class Sequence:
    """A request and its progress. Times are the caller's clock (s); NaN: not yet."""

    id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    tenant: int = 0
    priority: int = 0        # its tenant's class: lower is admitted first and preempted last (continuous)
    computed: int = 0        # tokens whose keys and values are in the KV cache
    generated: int = 0       # output tokens emitted so far
    prefill_left: int = 0    # tokens to prefill before the next token can be sampled
    blocks: int = 0          # KV blocks held (paged schedulers only)
    scheduled_s: float = _NEVER    # first time any of its work ran
    first_token_s: float = _NEVER
    last_token_s: float = _NEVER
    finish_s: float = _NEVER
    preemptions: int = 0
    rejected: bool = False   # refused at admission: it can never fit this engine
    shed: bool = False       # refused at admission: its tenant was over its rate limit
    block_hashes: tuple[int, ...] = ()  # chained names of its context's full blocks (targets.llm.prefix_cache)
    shared: int = 0          # its first `shared` blocks are shared cached blocks (prefix caching only)
    cached_tokens: int = 0   # prompt tokens its first admission found cached
    looked_up: bool = False  # its first admission's lookup is counted
    replica: int = -1        # the fleet replica a router sent it to (-1: a single engine)

    @property
    def done(self) -> bool:
        return self.generated >= self.output_tokens

    def emit(self, now: float, gaps: dict[float, int]) -> None:
        """One output token at `now`; the gap since the previous one goes to `gaps` (s -> count)."""
        if self.generated == 0:
            self.first_token_s = now
        else:
            gap = now - self.last_token_s
            gaps[gap] = gaps.get(gap, 0) + 1
        self.last_token_s = now
        self.generated += 1
        if self.generated >= self.output_tokens:
            self.finish_s = now


@dataclass(slots=True)
class Step:
    """One forward pass. Token counts include padding and idle slots: they are what the GPU computes.

    `prefills`: (sequence, tokens of its prompt computed now); `decodes`: sequences
    sampling one token. `padding_tokens` and `idle_slots` are the wasted part of
    `prefill_tokens` and `decode_seqs` (run-to-completion batching only).
    """

    prefills: list[tuple[Sequence, int]] = field(default_factory=list)
    decodes: list[Sequence] = field(default_factory=list)
    prefill_tokens: int = 0
    decode_seqs: int = 0
    context_tokens: int = 0
    padding_tokens: int = 0
    idle_slots: int = 0

    def __bool__(self) -> bool:
        return bool(self.prefills or self.decodes)


@dataclass(slots=True)
class StepOutcome:
    """What one completed step produced: sequences that finished, and inter-token gaps (s -> count)."""

    finished: list[Sequence] = field(default_factory=list)
    gaps: dict[float, int] = field(default_factory=dict)
    tokens: int = 0
