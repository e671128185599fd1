"""Which frameworks there are: each one's knobs, server module, declared flaws and tuned knobs.

A `Framework` names the distribution that must be installed (`pip install -e
'.[frameworks]'`), the module a live run starts as its server
(`python -m MODULE`, targets.frameworks.server_main), its knob model, the doc's
flaws it has at its defaults (targets.frameworks.knobs.DeclaredFlaw) and the
knobs that fix what its own knobs can (`tuned`), measured on the bad days by
benchmarks/frameworks_bad_day.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from targets.frameworks.knobs import BentoMLKnobs, DeclaredFlaw, FrameworkKnobs, LitServeKnobs, RayServeKnobs

__all__ = ["FRAMEWORKS", "Framework", "get_framework", "installed_version"]


@dataclass(frozen=True)
class Framework:
    name: str
    distribution: str
    module: str
    knobs: type[FrameworkKnobs]
    flaws: tuple[DeclaredFlaw, ...]
    tuned: dict[str, Any]
    summary: str

    def tuned_spec(self) -> str:
        """The spec of this framework with its tuned knobs, e.g. 'litserve:timeout=0.2'."""
        return self.name + ":" + ",".join(f"{k}={_text(v)}" for k, v in self.tuned.items())


def _text(v: Any) -> str:
    return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


_NO_IDS = ("no request IDs or dedupe: a retry is computed again, and a request whose client gave up "
           "stays queued and is computed anyway")

LITSERVE = Framework(
    name="litserve",
    distribution="litserve",
    module="targets.frameworks.litserve_app",
    knobs=LitServeKnobs,
    summary="LitServe: uvicorn API servers put requests on one queue; inference worker processes take "
            "batches of up to max_batch_size, waiting batch_timeout to fill one",
    flaws=(
        DeclaredFlaw("no-admission-control",
                     "no queue bound: every request is queued, and one waits up to `timeout` (30 s) before a "
                     "worker refuses it (504), long past its client's timeout",
                     fix={"timeout": 0.2},
                     fix_note="timeout=S refuses (504) a request that waited S in the queue, once a worker "
                              "reaches it: a late refusal, not a bound on the queue"),
        DeclaredFlaw("blind-retries", _NO_IDS,
                     fix_note="no knob dedupes; timeout=S bounds how long abandoned requests are kept"),
        DeclaredFlaw("no-tenant-limits", "one queue in arrival order, no per-tenant limit or fair share"),
        DeclaredFlaw("no-failure-handling", "a crashed inference worker is not started again (restart_workers "
                     "is off); not exercised live: a framework target takes no GPU-down fault",
                     fix={"restart_workers": True}),
        DeclaredFlaw("fixed-batch-time", "a batch is padded to its longest input (transformer model only)"),
    ),
    tuned={"timeout": 0.2, "batch_timeout": 0.01, "num_api_servers": 1},
)

RAY_SERVE = Framework(
    name="ray-serve",
    distribution="ray",
    module="targets.frameworks.ray_app",
    summary="Ray Serve: one HTTP proxy routes each request to the replica with fewer ongoing requests (of two "
            "picked at random); each replica batches with @serve.batch",
    knobs=RayServeKnobs,
    flaws=(
        DeclaredFlaw("no-admission-control",
                     "max_queued_requests is -1: the proxy queues every request the replicas cannot take yet, "
                     "without bound",
                     fix={"max_queued_requests": 100},
                     fix_note="max_queued_requests=N answers 503 past N queued requests (a bound on the queue, "
                              "by count, not by predicted wait)"),
        DeclaredFlaw("clock-cut-batches",
                     "not in the doc's catalogue: @serve.batch cuts a batch batch_wait_timeout_s (10 ms) after its "
                     "first request whether or not the replica is free, and the batches queue for it; with a "
                     "100 ms batch a replica runs batches of 1-2 requests one after another and saturates at a "
                     "tenth of its capacity",
                     fix={"batch_wait_timeout_s": 0.1},
                     fix_note="batch_wait_timeout_s of about one batch time: a batch fills while the one "
                              "before it runs",
                     exposed_by=("steady", "spike")),
        DeclaredFlaw("blind-retries", "no request IDs or dedupe: a retry is computed again (a client that "
                     "disconnects cancels its request where it has not reached a batch yet)"),
        DeclaredFlaw("no-tenant-limits", "no per-tenant limit or fair share"),
        DeclaredFlaw("fixed-batch-time", "a batch is padded to its longest input (transformer model only)"),
    ),
    tuned={"max_queued_requests": 100, "batch_wait_timeout_s": 0.1},
)

BENTOML = Framework(
    name="bentoml",
    distribution="bentoml",
    module="targets.frameworks.bentoml_app",
    summary="BentoML: an API service takes /predict and calls a model service (bentoml.depends) once per request "
            "(one item a call); each of the model service's worker processes gathers the calls into batches with "
            "BentoML's adaptive batcher (up to max_batch_size, refusing what it predicts past max_latency_ms)",
    knobs=BentoMLKnobs,
    flaws=(
        DeclaredFlaw("no-admission-control",
                     "no queue bound: max_concurrency is unset, and the batcher refuses a request only once it "
                     "predicts an answer later than max_latency_ms (60 s), long past its client's timeout",
                     fix={"max_latency_ms": 250},
                     fix_note="max_latency_ms=MS: the batcher refuses (503) the oldest queued request once its "
                              "wait plus the predicted batch time passes MS (a bound by predicted wait, checked at "
                              "the head of the queue); max_concurrency=N instead answers 429 past N requests in "
                              "flight (a bound by count)"),
        DeclaredFlaw("per-server-queues",
                     "each model worker process runs a batcher over a queue of its own; the API service's "
                     "keep-alive connections reach them as the kernel hands them out, so with several workers "
                     "requests are not shared among them by load",
                     fix_note="no knob shares one queue among workers; workers=1 does, with one worker's capacity"),
        DeclaredFlaw("pool-refresh-fails-calls",
                     "not in the doc's catalogue: the API service's client to the model service closes its "
                     "connection pool every runner_connection.max_requests (100) calls and opens a new one, failing "
                     "(500) every call still in flight on the old pool; under load, some requests every second",
                     fix={"runner_max_requests": 1_000_000_000},
                     fix_note="runner_max_requests=N: the pool is renewed every N calls (a billion: not in a run)",
                     exposed_by=("steady", "spike")),
        DeclaredFlaw("blind-retries", "no request IDs or dedupe: a retry is computed again"),
        DeclaredFlaw("no-tenant-limits", "no per-tenant limit or fair share"),
        DeclaredFlaw("fixed-batch-time", "a batch is padded to its longest input (transformer model only)"),
    ),
    tuned={"max_latency_ms": 250, "runner_max_requests": 1_000_000_000},
)

FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (LITSERVE, RAY_SERVE, BENTOML)}


def get_framework(name: str) -> Framework:
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise ValueError(f"unknown framework '{name}': valid are {', '.join(FRAMEWORKS)}") from None


def installed_version(fw: Framework) -> str | None:
    """The installed version of the framework's distribution (None: not installed)."""
    try:
        return version(fw.distribution)
    except PackageNotFoundError:
        return None
