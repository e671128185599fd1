"""The flaw catalogue: each flaw of the design doc, the knobs that put it in or
fix it, and the scenarios that expose it.

`naive` is TargetConfig's defaults (every flaw present); `hardened` is naive
with every flaw's `fixed` knobs applied. Because each flaw owns disjoint knobs,
any target is a base with flaws put back or fixed, one at a time.

`Flaw` is also the type of the LLM catalogue's entries (`targets.llm.flaws.LlmFlaw`
adds what an LLM flaw needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flaw:
    """One flaw: `doc_item` the design doc's item(s), `failure` what goes wrong and `fix`
    what mends it (one line each), `present` and `fixed` the knobs that put it in and fix
    it (TargetConfig's here, LlmEngineSpec's in the LLM catalogue), `exposed_by` the
    scenarios (LLM: the length mixes) that show it."""

    id: str
    doc_item: str
    failure: str
    fix: str
    present: dict[str, Any]
    fixed: dict[str, Any]
    exposed_by: tuple[str, ...]


FLAWS: tuple[Flaw, ...] = (
    Flaw(
        id="full-batch-only",
        doc_item="2",
        failure="a request waits for B-1 strangers: mean fill wait (B-1)/(2*lambda) per queue, forever at night",
        fix="rate-aware batching: a partial batch goes once the fleet can afford batches that small at the measured "
            "arrival rate (at once when quiet, full batches on a tight fleet), else at B or after max_wait_s (from the SLO)",
        present={"batching": "full"},
        fixed={"batching": "rate"},
        exposed_by=("low-traffic", "night", "diurnal"),
    ),
    Flaw(
        id="per-server-queues",
        doc_item="1, 2",
        failure="N private queues fill N times slower; L4 round robin pins keep-alive connections, not requests",
        fix="one shared queue per model that GPU workers pull from, behind L7 least-loaded routing",
        present={"topology": "per-server", "routing": "l4-round-robin"},
        fixed={"topology": "shared", "routing": "least-loaded"},
        exposed_by=("steady", "dominant-tenant", "low-traffic"),
    ),
    Flaw(
        id="exact-payload-cache",
        doc_item="3",
        failure="hit rate near zero for real payloads; an extra hop on every request; stale after a model change",
        fix="cache off unless its measured hit rate pays; key = normalised payload + model version",
        present={"cache": "exact"},
        fixed={"cache": "auto"},
        exposed_by=("unique", "cacheable"),
    ),
    Flaw(
        id="blind-retries",
        doc_item="4",
        failure="timeouts trigger immediate retries that amplify load (a metastable retry storm); no ID, so duplicates run twice",
        fix="request IDs + server dedupe, capped exponential backoff with full jitter, a 10% retry budget, deadlines, "
            "adaptive client throttling past the servers' capacity (k = 2)",
        present={
            "client_backoff": "none", "request_ids": False, "dedupe": False,
            "retry_budget": None, "honour_retry_after": False, "propagate_deadline": False,
            "client_throttle_k": None,
        },
        fixed={
            "client_backoff": "exponential", "request_ids": True, "dedupe": True,
            "retry_budget": 0.1, "honour_retry_after": True, "propagate_deadline": True,
            "client_throttle_k": 2.0,
        },
        exposed_by=("slowdown", "spike", "gpu-outage"),
    ),
    Flaw(
        id="no-admission-control",
        doc_item="5",
        failure="unbounded queues: in a spike every request waits and times out; goodput collapses",
        fix="bound the queue by predicted wait against the deadline; shed early with 503 + Retry-After; "
            "the L4 proxy answers 503 itself while its requests in flight wait in the front end over a twentieth of the SLO",
        present={"admission": False, "frontend_proxy_share": None},
        fixed={"admission": True, "frontend_proxy_share": 0.05},
        exposed_by=("spike", "slowdown", "gpu-outage"),
    ),
    Flaw(
        id="no-tenant-limits",
        doc_item="5",
        failure="one tenant with 60% of traffic, bursting, starves everyone else",
        fix="per-tenant token buckets and deficit-round-robin fair queueing",
        present={"tenant_limits": False},
        fixed={"tenant_limits": True},
        exposed_by=("dominant-tenant",),
    ),
    Flaw(
        id="no-headroom",
        doc_item="6",
        failure="fleet at utilisation 1.0: Poisson variance and any lost GPU grow queues without bound",
        fix="size for 80% utilisation at peak, plus one spare GPU (N+1)",
        present={"target_utilization": 1.0, "spare_gpus": 0},
        fixed={"target_utilization": 0.8, "spare_gpus": 1},
        exposed_by=("steady", "gpu-outage", "spike"),
    ),
    Flaw(
        id="no-failure-handling",
        doc_item="implicit",
        failure="a GPU worker dies with a batch in flight: its requests are lost until clients time out",
        fix="worker health, batch timeouts, re-dispatch the batch once",
        present={"failure_handling": False},
        fixed={"failure_handling": True},
        exposed_by=("gpu-outage",),
    ),
    Flaw(
        id="fixed-batch-time",
        doc_item="implicit",
        failure="100 ms assumes equal sizes; a batch is as slow as its longest input (padding)",
        fix="length bucketing: batch requests of similar length together",
        present={"length_bucketing": False},
        fixed={"length_bucketing": True},
        exposed_by=("variable-sizes",),
    ),
)

FLAW_IDS: tuple[str, ...] = tuple(f.id for f in FLAWS)
_BY_ID = {f.id: f for f in FLAWS}


def get_flaw(flaw_id: str) -> Flaw:
    try:
        return _BY_ID[flaw_id]
    except KeyError:
        raise ValueError(f"unknown flaw '{flaw_id}': valid ids are {', '.join(FLAW_IDS)}") from None


def hardened_knobs() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flaw in FLAWS:
        out.update(flaw.fixed)
    return out
