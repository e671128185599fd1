"""The design doc's flaws as they apply to an LLM, with the engine knobs that put each in or fix it.

A separate catalogue from `targets.flaws` (whose knobs are the request-level
target's): here a flaw's `present` and `fixed` are `LlmEngineSpec` settings
(the policy and `targets.llm.knobs` keys), and `exposed_by` names the length
mixes (`workloads.llm.LENGTH_MIXES`) that show it. `rank` and `review` do not
read this catalogue yet; `harness compare` measures each pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LLM_FLAWS", "LlmFlaw"]


@dataclass(frozen=True)
class LlmFlaw:
    id: str
    doc_item: str
    failure: str
    fix: str
    present: dict[str, Any]
    fixed: dict[str, Any]
    exposed_by: tuple[str, ...]
    symptom: str = "slo_attainment"   # the LlmRun figure the fix improves: a share up, or "itl_max_s" down


LLM_FLAWS: tuple[LlmFlaw, ...] = (
    LlmFlaw(
        id="run-to-completion-batching",
        doc_item="2",
        failure="a batch holds every slot until its longest output ends and pads every prompt to its longest:"
                " finished slots idle, new requests wait for the whole batch",
        fix="iteration-level (continuous) batching over a paged KV cache: sequences join and leave every step",
        present={"policy": "llm-dynamic"},
        fixed={"policy": "llm-continuous"},
        exposed_by=("lognormal", "sharegpt-like"),
    ),
    LlmFlaw(
        id="full-batch-only",
        doc_item="2",
        failure="a batch starts only with B requests: at low traffic the first token waits for B-1 strangers",
        fix="flush a partial batch after max_wait_s (or batch continuously)",
        present={"policy": "llm-static"},
        fixed={"policy": "llm-dynamic"},
        exposed_by=("fixed",),
    ),
    LlmFlaw(
        id="fixed-batch-time",
        doc_item="(implicit)",
        failure="a prompt is prefilled whole in a step of its own: one long prompt pauses every running decode",
        fix="chunked prefill: prompts split into chunks that share steps with decodes under a token budget",
        present={"policy": "llm-continuous", "chunked_prefill": False},
        fixed={"policy": "llm-continuous", "chunked_prefill": True},
        exposed_by=("long-prompts",),
        symptom="itl_max_s",
    ),
)
