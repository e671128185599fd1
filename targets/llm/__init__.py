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

Per-tenant rate limits (`targets.llm.tenants`) wrap any of them when the spec
turns one on; priority classes per tenant order the continuous scheduler
(run-to-completion batches ignore them). Both name tenants, so
`create_scheduler(spec, tenants)` takes the workload's tenant names; a name the
workload does not have is ignored (one spec serves many workloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from targets.llm.continuous import Continuous
from targets.llm.cost import DEFAULT, DEFAULT_BLOCK_SIZE, DEFAULT_KV_BLOCKS, StepCost
from targets.llm.run_to_completion import RunToCompletion
from targets.llm.scheduler import LlmScheduler
from targets.llm.sequence import Sequence, Step, StepOutcome
from targets.llm.tenants import OverLimit, TenantAdmission, TenantLimits

__all__ = ["LlmEngineSpec", "LlmPolicy", "LlmScheduler", "Sequence", "Step", "StepCost", "StepOutcome",
           "create_scheduler", "policy_names"]


class LlmPolicy(str, Enum):
    STATIC = "llm-static"
    DYNAMIC = "llm-dynamic"
    CONTINUOUS = "llm-continuous"


def policy_names() -> tuple[str, ...]:
    return tuple(p.value for p in LlmPolicy)


@dataclass(frozen=True)
class LlmEngineSpec:
    """One engine (one GPU or one tensor-parallel group) and its scheduler's knobs.

    Run-to-completion policies read `batch_size` (and `max_wait_s`, dynamic only);
    continuous reads the KV cache (`kv_blocks` x `block_size` tokens), `max_seqs`,
    `max_batched_tokens` and chunked prefill. `cost` prices every step.

    Tenants (`targets.llm.tenants`), every policy: each tenant may send `tenant_rps`
    requests/s (burst `tenant_burst_requests`) and `tenant_tok_s` tokens/s of
    prompt + max output (burst `tenant_burst_tokens`), 0 = no limit; over it a
    request is shed, or with `over_limit="delay"` held until its tenant's bucket
    refills (shed if that would take over `max_delay_s`). `tenant_priority`:
    (tenant name, class) pairs, lower first, unnamed tenants 0 (continuous only).
    `prefix_caching` (continuous only): the KV budget is a prefix cache
    (`targets.llm.prefix_cache`), so a prompt's cached leading blocks are not prefilled again.
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
    tenant_rps: float = 0.0
    tenant_burst_requests: float = 10.0
    tenant_tok_s: float = 0.0
    tenant_burst_tokens: float = 20_000.0
    over_limit: str = OverLimit.SHED.value
    max_delay_s: float = 10.0
    tenant_priority: tuple[tuple[str, int], ...] = ()
    prefix_caching: bool = False
    cost: StepCost = DEFAULT

    def limits(self) -> TenantLimits:
        """The per-tenant limits these knobs set (ValueError on a bad value)."""
        return TenantLimits(self.tenant_rps, self.tenant_burst_requests, self.tenant_tok_s, self.tenant_burst_tokens,
                            self.over_limit, self.max_delay_s)  # type: ignore[arg-type]  # a str: TenantLimits converts and checks it


def create_scheduler(spec: LlmEngineSpec, tenants: tuple[str, ...] = ()) -> LlmScheduler:
    """The scheduler `spec.policy` names, behind its tenant limits if any; `tenants` are the workload's
    tenant names in index order (`Sequence.tenant`). ValueError listing the valid names."""
    try:
        policy = LlmPolicy(spec.policy)
    except ValueError:
        raise ValueError(f"unknown LLM policy '{spec.policy}': valid are {', '.join(policy_names())}") from None
    limits = spec.limits()
    inner: LlmScheduler
    if policy is LlmPolicy.STATIC:
        inner = RunToCompletion(spec.batch_size, None)
    elif policy is LlmPolicy.DYNAMIC:
        inner = RunToCompletion(spec.batch_size, spec.max_wait_s)
    else:
        classes = dict(spec.tenant_priority)
        inner = Continuous(spec.kv_blocks, spec.block_size, spec.max_seqs, spec.max_batched_tokens,
                           spec.chunked_prefill, spec.chunk_tokens,
                           {i: classes[name] for i, name in enumerate(tenants) if name in classes},
                           spec.prefix_caching)
    return TenantAdmission(inner, limits) if limits.active else inner
