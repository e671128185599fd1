"""The knobs of each framework target, and the design doc's flaws each has by default.

A framework target is a real serving framework serving the project's model:
its own HTTP server, queue and batcher, configured by its own documented knobs
(`LitServeKnobs`, `RayServeKnobs`, `BentoMLKnobs`; the field names are the framework's own).
Defaults are the framework's own, except the batch size, which is the design's
B (32) as a user sizing the batcher for the model would set it, and Ray Serve's
`max_ongoing_requests`, raised to the batch size as Ray's own batching warning
asks (at its default of 5 no batch could pass 5).

What is not the framework's is the design's (a TargetConfig, `framework_config`):
the fleet (GPU workers sized as hardened's: 80% utilisation and N+1, so both
sides of `compare hardened litserve` run the same number of workers at a scale)
and the clients (hardened's: backoff with jitter, a retry budget, Retry-After,
request IDs and deadlines sent), so a compare against hardened differs only in
the server. Both are TargetConfig knobs and can be set in the same spec.

Each framework declares the flaws of the doc's catalogue (targets.flaws) it has
at its defaults, why, and which of its knobs fixes each (none: none does); a flaw
of the framework's own that the catalogue lacks is declared too, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from targets.flaws import FLAWS

__all__ = ["BentoMLKnobs", "DeclaredFlaw", "FrameworkKnobs", "LitServeKnobs", "RayServeKnobs", "framework_config"]


class FrameworkKnobs(BaseModel):
    """Knobs every framework target has (the harness's, not the framework's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pad_to_s: float | None = Field(None, ge=0, description="hold each batch to this many seconds (None: the "
                                   "design's batch time under the constant cost model, as hardened's GPUs; 0: off)")
    torch_threads: int = Field(1, ge=1, le=64, description="torch intra-op threads per worker process")


class LitServeKnobs(FrameworkKnobs):
    """LitServe 0.2 (`LitAPI(max_batch_size, batch_timeout)`, `LitServer(...)`, `run(num_api_servers)`)."""

    max_batch_size: int | None = Field(None, ge=1, le=4096, description="LitAPI: largest batch (None: the "
                                       "design's B; LitServe's own default is 1, no batching)")
    batch_timeout: float = Field(0.0, ge=0, description="LitAPI: seconds a worker waits to fill a batch "
                                 "(LitServe's default 0: it takes what is queued)")
    workers_per_device: int | None = Field(None, ge=1, le=64, description="LitServer: inference worker "
                                           "processes (CPU: one device; None: the design's GPUs at the run's scale)")
    timeout: float = Field(30.0, description="LitServer: a request that waited this long in the queue is answered "
                           "504 when a worker reaches it (-1: never; LitServe's default 30 s)")
    num_api_servers: int | None = Field(None, ge=1, le=64, description="run(): uvicorn API server processes "
                                        "(None: LitServe's default, one per inference worker)")
    fast_queue: bool = Field(False, description="LitServer: ZeroMQ instead of multiprocessing queues")
    restart_workers: bool = Field(False, description="LitServer: start a worker again after it crashes")


class RayServeKnobs(FrameworkKnobs):
    """Ray Serve 2.x (`@serve.batch(...)`, `@serve.deployment(...)`, `http_options`)."""

    max_batch_size: int | None = Field(None, ge=1, le=4096, description="@serve.batch: largest batch (None: the "
                                       "design's B; Ray's own default is 10)")
    batch_wait_timeout_s: float = Field(0.01, ge=0, description="@serve.batch: seconds to wait to fill a batch "
                                        "(Ray's default)")
    max_concurrent_batches: int = Field(1, ge=1, le=64, description="@serve.batch: batches a replica runs at once")
    max_ongoing_requests: int | None = Field(None, ge=1, le=100_000, description="deployment: requests a replica "
                                             "takes at once (None: the batch size, as Ray's batching warning asks; "
                                             "Ray's own default is 5)")
    max_queued_requests: int = Field(-1, ge=-1, description="deployment: requests a caller queues for the replicas "
                                     "before it answers 503 (-1: unbounded, Ray's default)")
    num_replicas: int | None = Field(None, ge=1, le=64, description="deployment: replicas (None: the design's GPUs "
                                     "at the run's scale)")
    request_timeout_s: float | None = Field(None, gt=0, description="http_options: the proxy answers a request not "
                                            "done after this long (None: never, Ray's default)")


class BentoMLKnobs(FrameworkKnobs):
    """BentoML 1.4 (`@bentoml.api(batchable=True, ...)`, `@bentoml.service(workers, traffic={...})`)."""

    max_batch_size: int | None = Field(None, ge=1, le=4096, description="@bentoml.api: largest batch (None: the "
                                       "design's B; BentoML's own default is 100)")
    max_latency_ms: int = Field(60_000, ge=1, le=3_600_000, description="@bentoml.api: the adaptive batcher refuses "
                                "(503) the oldest queued request once it predicts an answer later than this after "
                                "it arrived (BentoML's default 60 s)")
    workers: int | None = Field(None, ge=1, le=64, description="model service: worker processes, a batcher each "
                                "(None: the design's GPUs at the run's scale)")
    api_workers: int = Field(1, ge=1, le=64, description="API service: worker processes taking /predict "
                             "(BentoML's default 1)")
    max_concurrency: int | None = Field(None, ge=1, le=1_000_000, description="API service, traffic: requests in "
                                        "flight past which it answers 429 at once, split over api_workers "
                                        "(None: unbounded, BentoML's default)")
    timeout: float = Field(60.0, gt=0, le=86_400, description="API service, traffic: seconds after which it "
                           "answers 504 (BentoML's default 60 s)")
    runner_max_requests: int = Field(100, ge=1, le=2**31 - 1, description="model service, runner_connection."
                                     "max_requests: calls after which the API service's client to it is closed "
                                     "and opened again, calls in flight on it included (BentoML's default 100)")


@dataclass(frozen=True)
class DeclaredFlaw:
    """A flaw of the doc's catalogue (`id`) a framework has at its defaults: `why`, in its terms,
    and `fix`, the knob change that fixes it (empty: no knob of the framework does)."""

    id: str
    why: str
    fix: dict[str, Any] = field(default_factory=dict)
    fix_note: str = ""
    exposed_by: tuple[str, ...] = ()  # a flaw of the framework's own: the bad days that show it

    def scenarios(self) -> tuple[str, ...]:
        """The bad days that expose it: the catalogue's, or the framework's own flaw's."""
        return next((f.exposed_by for f in FLAWS if f.id == self.id), self.exposed_by)


# The design's part of a framework target: hardened's fleet sizing and clients (its
# server-side dedupe aside: a framework has none), the doc's numbers otherwise.
_CLIENT_AND_FLEET = ("blind-retries", "no-headroom")


def framework_config() -> dict[str, Any]:
    """TargetConfig knobs of every framework target (before its spec's own)."""
    knobs: dict[str, Any] = {}
    for flaw in FLAWS:
        if flaw.id in _CLIENT_AND_FLEET:
            knobs.update(flaw.fixed)
    knobs["dedupe"] = False  # the server's half of the fix: the framework's to have, and none does
    return knobs
