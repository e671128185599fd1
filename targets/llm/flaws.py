"""The design doc's flaws as they apply to an LLM, with the engine knobs that put each in or fix it.

A catalogue of its own beside `targets.flaws` (whose knobs are the request-level
target's), of the same `Flaw` type: here a flaw's `present` and `fixed` are `LlmEngineSpec` settings
(the policy and `targets.llm.knobs` keys), `exposed_by` names the length
mixes (`workloads.llm.LENGTH_MIXES`) that show it, `rate_rps` the offered rate
to show it at (None: the caller's default), and `symptom` the `LlmRun` figure
its fix moves. `harness rank` measures every flaw present and fixed on each
mix that exposes it and ranks them by that figure (its LLM section,
`harness.analysis.llm.rank`); `harness review` cites those costs in its LLM
answer.

A fleet flaw (`fleet=True`) is a design of a fleet of replicas behind a router: its
`present` and `fixed` are `llm-fleet` knobs (`targets.llm.fleet`: router, load_factor,
and any engine knob such as prefix_caching), `exposed_by` names fleet days
(`workloads.llm_days.FLEET_DAYS`), measured on a small fleet (`harness.analysis.llm.fleet_flaws`).
"""

from __future__ import annotations

from dataclasses import dataclass

from targets.flaws import Flaw

__all__ = ["LLM_FLAWS", "LOWER_IS_BETTER", "LlmFlaw"]

# Symptoms a fix lowers (seconds); every other symptom is a share a fix raises.
LOWER_IS_BETTER = frozenset({"itl_max_s", "small_tenants_ttft_p99_s", "ttft_p50_s"})


@dataclass(frozen=True)
class LlmFlaw(Flaw):
    """A `Flaw` of an LLM engine, with the figure its fix moves and the rate that shows it."""

    symptom: str = "slo_attainment"   # the LlmRun figure the fix improves: a share up, or one of LOWER_IS_BETTER down
    rate_rps: float | None = None     # where the flaw shows (None: the caller's default rate)
    fleet: bool = False               # present/fixed are llm-fleet knobs, exposed_by fleet days

    @property
    def lower_is_better(self) -> bool:
        return self.symptom in LOWER_IS_BETTER


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
    LlmFlaw(
        id="request-count-limits",
        doc_item="5",
        failure="per-client limits counted in requests (or none): a tenant sending a few requests of thousands"
                " of tokens passes them, fills the KV cache and the step budget, and the other tenants' first"
                " tokens wait behind it",
        fix="a token bucket per tenant on prompt + max output tokens, shedding (or delaying) what is over it",
        present={"policy": "llm-continuous", "tenant_rps": 2.0},
        fixed={"policy": "llm-continuous", "tenant_tok_s": 1500.0, "tenant_burst_tokens": 10_000.0},
        exposed_by=("dominant-tenant",),
        symptom="small_tenants_ttft_p99_s",
        rate_rps=7.0,   # at 4 req/s the engine copes either way; at 7 bulk's tokens fill the KV cache
    ),
    LlmFlaw(
        id="l4-round-robin",
        doc_item="1",
        failure="a layer-4 round robin cannot read the prompt: each turn of a conversation lands on a replica"
                " that holds none of its earlier turns, which it prefills again",
        fix="prefix-aware routing with bounded load: a turn goes where its prefix is cached unless that replica"
            " is over load_factor x the mean",
        present={"router": "round-robin"},
        fixed={"router": "prefix", "load_factor": 1.25},
        exposed_by=("chat",),
        symptom="ttft_p50_s",
        fleet=True,
    ),
    LlmFlaw(
        id="no-prefix-cache",
        doc_item="3",
        failure="no prefix cache in the engines: every turn prefills its system prompt and whole history again,"
                " and the doc's exact-payload cache never sees a chat prompt twice",
        fix="prefix caching (prefix_caching=true): blocks named by a chained hash, shared and kept LRU",
        present={"router": "prefix", "load_factor": 1.25, "prefix_caching": False},
        fixed={"router": "prefix", "load_factor": 1.25, "prefix_caching": True},
        exposed_by=("chat",),
        symptom="ttft_p50_s",
        fleet=True,
    ),
)
