"""LLM serving policies: token-generation schedulers as step machines, their cost model and KV cache.

`create_scheduler(spec)` builds one from an `LlmEngineSpec`, by policy name:

- `llm-static`: the doc's design for an LLM, a full batch of B run to completion;
- `llm-dynamic`: a batch of up to B, flushed after `max_wait_s`, run to completion;
- `llm-continuous`: iteration-level batching over a paged KV cache.

Every scheduler has the same contract (vLLM's SchedulerInterface in spirit):
`add(seq, now) -> bool` (False: rejected, it can never fit), `schedule(now) -> Step | None`
(called whenever the engine is idle; None: nothing to run until an arrival or
`wake_at()`), `complete(step, now) -> StepOutcome` (after the step's time has
passed), `pending()` and `running()`. None reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from targets.llm.continuous import Continuous
from targets.llm.cost import DEFAULT, DEFAULT_BLOCK_SIZE, DEFAULT_KV_BLOCKS, StepCost
from targets.llm.run_to_completion import RunToCompletion
from targets.llm.sequence import Sequence, Step, StepOutcome

__all__ = ["LlmEngineSpec", "LlmPolicy", "LlmScheduler", "Sequence", "Step", "StepCost", "StepOutcome",
           "create_scheduler", "policy_names"]


class LlmPolicy(str, Enum):
    STATIC = "llm-static"
    DYNAMIC = "llm-dynamic"
    CONTINUOUS = "llm-continuous"


def policy_names() -> tuple[str, ...]:
    return tuple(p.value for p in LlmPolicy)


class LlmScheduler(Protocol):
    def add(self, seq: Sequence, now: float) -> bool: ...
    def schedule(self, now: float) -> Step | None: ...
    def complete(self, step: Step, now: float) -> StepOutcome: ...
    def wake_at(self) -> float | None: ...
    def pending(self) -> int: ...
    def running(self) -> int: ...


@dataclass(frozen=True)
class LlmEngineSpec:
    """One engine (one GPU or one tensor-parallel group) and its scheduler's knobs.

    Run-to-completion policies read `batch_size` (and `max_wait_s`, dynamic only);
    continuous reads the KV cache (`kv_blocks` x `block_size` tokens), `max_seqs`,
    `max_batched_tokens` and chunked prefill. `cost` prices every step.
    """

    policy: LlmPolicy = LlmPolicy.CONTINUOUS
    batch_size: int = 32
    max_wait_s: float = 0.05
    kv_blocks: int = DEFAULT_KV_BLOCKS
    block_size: int = DEFAULT_BLOCK_SIZE
    max_seqs: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = True
    chunk_tokens: int = 512
    cost: StepCost = DEFAULT


def create_scheduler(spec: LlmEngineSpec) -> LlmScheduler:
    """The scheduler `spec.policy` names; ValueError listing the valid names."""
    try:
        policy = LlmPolicy(spec.policy)
    except ValueError:
        raise ValueError(f"unknown LLM policy '{spec.policy}': valid are {', '.join(policy_names())}") from None
    if policy is LlmPolicy.STATIC:
        return RunToCompletion(spec.batch_size, None)
    if policy is LlmPolicy.DYNAMIC:
        return RunToCompletion(spec.batch_size, spec.max_wait_s)
    return Continuous(spec.kv_blocks, spec.block_size, spec.max_seqs, spec.max_batched_tokens,
                      spec.chunked_prefill, spec.chunk_tokens)
