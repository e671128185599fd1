"""Every knob of a reference target, with the design doc's values as defaults.

A `TargetConfig` is the design as data: the naive target is this class's
defaults (the doc's numbers, and its flaws), and `hardened` turns each flaw's
knobs to their fixed values (see `targets.flaws`). Units are in the names.

The knobs come in groups, one per component that reads them (`KNOB_GROUPS`:
design, model, fleet, routing, batching, cache, clients, admission, tenants,
front end). A group is a small validated model of its own, and a `TargetConfig`
is all of them at once (it inherits every group), so:

- a knob keeps its one flat name everywhere: `--set gpus=40`, a spec's
  `hardened:slo_s=0.2`, a design file's `[knobs]` table, and a result file's
  `target_config` (`model_dump` is flat) read and write the same keys;
- a component that reads one group takes that group's type
  (`ClientPolicy.from_target(c: ClientKnobs)`) and is handed the whole config,
  with no copy: reading a knob is the plain attribute read it always was;
- each knob's annotation says where it applies (`Annotated[float, SIM]`): `SIM`
  knobs change only simulated runs (live servers pay the real thing), `LIVE`
  knobs only live ones, `BOTH` knobs both. A group refuses a knob with no tag.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo


class Batching(str, Enum):
    FULL = "full"          # doc item 2: dispatch only when B requests are queued
    DYNAMIC = "dynamic"    # at B, or when the oldest has waited max_wait_s
    GREEDY = "greedy"      # work-conserving: an idle GPU takes whatever is queued
    ADAPTIVE = "adaptive"  # greedy while spare GPUs exceed a reserve, else dynamic
    RATE = "rate"          # partial batch once the fleet at the measured rate can afford it, else dynamic


class Topology(str, Enum):
    PER_SERVER = "per-server"  # doc items 1-2: each API server its own queue
    SHARED = "shared"          # one queue per model; GPU workers pull from it


class Routing(str, Enum):
    L4_ROUND_ROBIN = "l4-round-robin"  # connections, round robin (doc item 1)
    LEAST_LOADED = "least-loaded"      # L7: per request, shortest queue
    POWER_OF_TWO = "p2c"               # L7: per request, better of two random


class CacheMode(str, Enum):
    OFF = "off"
    EXACT = "exact"            # doc item 3: key = exact payload bytes
    NORMALIZED = "normalized"  # key = normalised payload + model version
    AUTO = "auto"              # normalised, and bypassed while its hit rate does not pay


class Backoff(str, Enum):
    NONE = "none"
    EXPONENTIAL = "exponential"  # capped, with full jitter


class CostModel(str, Enum):
    CONSTANT = "constant"  # batch_time_s whatever the batch size (the doc)
    AFFINE = "affine"      # cost_t0_s + cost_per_item_s * b
    TABLE = "table"        # profiled: a cost table file from `harness profile`


class Where(str, Enum):
    """The runs a knob changes."""

    SIM = "sim"    # simulated runs only: it models what a live run pays for real
    LIVE = "live"  # live runs only: the real front end, host or drivers read it
    BOTH = "both"  # sim and live runs: the policy code that both run (targets.target and its parts) reads it


SIM, LIVE, BOTH = Where.SIM, Where.LIVE, Where.BOTH


def where_of(info: FieldInfo) -> Where | None:
    """The `Where` tag in a knob's annotation (None: untagged)."""
    return next((m for m in info.metadata if isinstance(m, Where)), None)


class KnobGroup(BaseModel):
    """The knobs one component reads. `title` names the group in `harness targets --knobs`
    and docs/targets.md; `read_by` says which code reads them. Every knob is tagged with
    where it applies, or the group does not define."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    title: ClassVar[str] = ""
    read_by: ClassVar[str] = ""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        untagged = [n for n, info in cls.model_fields.items() if where_of(info) is None]
        if untagged:
            raise TypeError(f"{cls.__name__}: knob(s) {', '.join(untagged)} say not where they apply "
                            "(annotate as Annotated[TYPE, SIM | LIVE | BOTH])")


class DesignKnobs(KnobGroup):
    """The design's goals: its name, its peak and its latency objective."""

    title: ClassVar[str] = "design"
    read_by: ClassVar[str] = ("the sizing rule (fleet_gpus), tenant caps, admission, the front end's guards, "
                              "the recorder's goodput and every report")
    name: Annotated[str, BOTH] = Field("naive", description="the target's name in results and reports")
    peak_qps: Annotated[float, BOTH] = Field(10_000, gt=0, description="design peak, requests/s (doc goal)")
    slo_s: Annotated[float, BOTH] = Field(0.3, gt=0, description="doc is silent: 3x the batch time, a common "
                                          "realtime target")


class ModelKnobs(KnobGroup):
    """What a batch of the served model costs on one GPU."""

    title: ClassVar[str] = "model"
    read_by: ClassVar[str] = ("targets.executors.cost_function: the modeled GPUs (sim); admission's and the "
                              "batcher's predictions and the live host's padding to the cost (live)")
    batch_size: Annotated[int, BOTH] = Field(32, ge=1, le=4096, description="B, the model's maximum batch")
    batch_time_s: Annotated[float, BOTH] = Field(0.1, gt=0, description="one batched forward pass (doc item 2)")
    cost_model: Annotated[CostModel, BOTH] = Field(CostModel.CONSTANT, description="how a batch's time is modeled")
    cost_t0_s: Annotated[float, BOTH] = Field(0.02, ge=0, description="affine: fixed part of a batch")
    cost_per_item_s: Annotated[float, BOTH] = Field(0.0025, ge=0, description="affine: per request in the batch")
    cost_table: Annotated[str | None, BOTH] = Field(None, description="table: path of a cost table JSON")
    reference_length: Annotated[int, BOTH] = Field(64, ge=1, description="input length the batch time is quoted at")

    @field_validator("cost_table")
    @classmethod
    def _table_file(cls, path: str | None) -> str | None:
        """A cost table must be a readable table file now, not a traceback mid-run."""
        if path is None:
            return None
        from targets.cost_table import CostTable  # no torch: tables are plain JSON

        if not Path(path).is_file():
            raise ValueError(f"no such file '{path}' (write one with `harness profile MODEL`)")
        try:
            CostTable.from_json(path)
        except (OSError, ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            kind = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ValueError(f"'{path}' is not a cost table: {kind}") from None
        return path

    @model_validator(mode="after")
    def _table_if_table(self) -> "ModelKnobs":
        if self.cost_model is CostModel.TABLE and not self.cost_table:
            raise ValueError("cost_model = 'table' needs cost_table = PATH (from `harness profile`)")
        if self.cost_table and self.cost_model is not CostModel.TABLE:
            raise ValueError(f"cost_table is set but cost_model is '{self.cost_model.value}', which ignores it "
                             "(set cost_model = 'table')")
        return self


class FleetKnobs(KnobGroup):
    """How many API servers and GPUs (doc item 6), and what the GPU pool does when one fails."""

    title: ClassVar[str] = "fleet"
    read_by: ClassVar[str] = ("the sizing rule (TargetConfig.fleet_gpus), targets.gpu_pool.GpuPool, and the "
                              "live host (one aiohttp server per API server)")
    api_servers: Annotated[int, BOTH] = Field(10, ge=1, le=1000, description="doc is silent; 1,000 QPS per server")
    gpus: Annotated[int | None, BOTH] = Field(None, ge=1, le=100_000, description="None: from the sizing rule")
    target_utilization: Annotated[float, BOTH] = Field(1.0, gt=0, le=1, description="1.0 = the doc's zero headroom")
    spare_gpus: Annotated[int, BOTH] = Field(0, ge=0, le=1000, description="N+k: GPUs on top for failures")
    failure_handling: Annotated[bool, BOTH] = Field(False, description="worker health, batch timeouts, and a lost "
                                                    "batch re-dispatched once")
    batch_timeout_factor: Annotated[float, BOTH] = Field(2.0, gt=1, description="batch timeout = factor x "
                                                         "expected time")


class RoutingKnobs(KnobGroup):
    """Which API server a request goes to, and whose queue it waits in (doc items 1-2)."""

    title: ClassVar[str] = "routing"
    read_by: ClassVar[str] = ("targets.balancer.create_balancer and the target's queues; live, l4-round-robin "
                              "is the real L4 proxy's choice")
    routing: Annotated[Routing, BOTH] = Field(Routing.L4_ROUND_ROBIN, description="how a request finds an "
                                              "API server")
    topology: Annotated[Topology, BOTH] = Field(Topology.PER_SERVER, description="where requests queue for "
                                                "the GPUs")


class BatchingKnobs(KnobGroup):
    """When a queue hands a batch to a GPU (doc item 2)."""

    title: ClassVar[str] = "batching"
    read_by: ClassVar[str] = "targets.batcher.BatchPolicy and the queues (targets.bucketed_queue.BucketedQueue)"
    batching: Annotated[Batching, BOTH] = Field(Batching.FULL, description="when a batch is dispatched")
    max_wait_s: Annotated[float | None, BOTH] = Field(None, gt=0, description="dynamic: None derives it from "
                                                      "the SLO")
    reserve_fraction: Annotated[float, BOTH] = Field(0.25, ge=0, le=1, description="adaptive: free GPUs kept "
                                                     "before going greedy")
    batch_utilization: Annotated[float, BOTH] = Field(0.7, gt=0, le=1, description="rate: a partial batch goes "
                                                      "once batches that size keep the fleet under this "
                                                      "utilisation at the measured rate")
    length_bucketing: Annotated[bool, BOTH] = Field(False, description="batch similar input lengths together")


class CacheKnobs(KnobGroup):
    """The response cache in front of the API servers (doc item 3)."""

    title: ClassVar[str] = "cache"
    read_by: ClassVar[str] = "targets.cache.ResponseCache and its network hop (targets.delayline.DelayLine)"
    cache: Annotated[CacheMode, BOTH] = Field(CacheMode.EXACT, description="what the cache keys on, or off")
    cache_hop_s: Annotated[float, BOTH] = Field(0.0005, ge=0, description="doc is silent: one network hop")
    cache_entries: Annotated[int, BOTH] = Field(100_000, ge=1, description="responses the cache holds (LRU)")
    model_version: Annotated[str, BOTH] = Field("v1", description="the served model's version, part of a "
                                                "normalised cache key")


class ClientKnobs(KnobGroup):
    """What the API's callers do on a timeout or an error (doc item 4), and the servers'
    deduplication that their request IDs make possible."""

    title: ClassVar[str] = "clients"
    read_by: ClassVar[str] = ("targets.client.ClientPolicy (the sim and live drivers) and the servers' "
                              "targets.dedupe.Deduper")
    client_timeout_s: Annotated[float, BOTH] = Field(1.0, gt=0, description="doc is silent: a typical SDK default")
    client_retries: Annotated[int, BOTH] = Field(3, ge=0, le=20, description="doc is silent: a typical SDK default")
    client_backoff: Annotated[Backoff, BOTH] = Field(Backoff.NONE, description="the pause before a retry")
    backoff_base_s: Annotated[float, BOTH] = Field(0.05, gt=0, description="exponential: the first retry's "
                                                   "longest pause, doubled each retry")
    backoff_cap_s: Annotated[float, BOTH] = Field(1.0, gt=0, description="exponential: the longest pause")
    request_ids: Annotated[bool, BOTH] = Field(False, description="clients send one ID for every attempt of "
                                               "a request")
    dedupe: Annotated[bool, BOTH] = Field(False, description="API servers run a request ID once and answer its "
                                          "retries from that run")
    retry_budget: Annotated[float | None, BOTH] = Field(None, ge=0, le=10, description="max retries / first "
                                                        "attempts")
    honour_retry_after: Annotated[bool, BOTH] = Field(False, description="clients wait out a refusal's "
                                                      "Retry-After before retrying")
    propagate_deadline: Annotated[bool, BOTH] = Field(False, description="clients send their deadline; a "
                                                      "request past it is dropped before a GPU runs it")
    client_throttle_k: Annotated[float | None, BOTH] = Field(None, ge=1, le=100, description="adaptive client "
                                                             "throttling (SRE book): refuse locally while sending "
                                                             "over k x what the servers accept; None: off")
    client_throttle_window_s: Annotated[float, BOTH] = Field(2.0, gt=0, le=600, description="throttling: the "
                                                             "window its counts cover")

    @model_validator(mode="after")
    def _consistent(self) -> "ClientKnobs":
        if self.dedupe and not self.request_ids:
            raise ValueError("dedupe needs request_ids = true (nothing to dedupe on)")
        if self.backoff_cap_s < self.backoff_base_s:
            raise ValueError("backoff_cap_s must be >= backoff_base_s")
        return self


class AdmissionKnobs(KnobGroup):
    """Whether an API server refuses a request it predicts would miss its deadline (doc item 5)."""

    title: ClassVar[str] = "admission"
    read_by: ClassVar[str] = "the API servers' admission (targets.admission, ServingTarget.submit_to)"
    admission: Annotated[bool, BOTH] = Field(False, description="shed (503 + Retry-After) a request whose "
                                             "predicted latency is over its budget")
    admission_target: Annotated[float, BOTH] = Field(0.9, gt=0, le=1, description="admit if predicted latency "
                                                     "<= this x budget")
    admission_fill: Annotated[Literal["max-wait", "rate"], BOTH] = Field(
        "rate", description="the batch-forming wait admission predicts for a request that finds no full "
        "batch queued: max-wait (the batcher's whole max_wait_s) or rate (rate batching: until the queue, "
        "filling at the offered rate, reaches the size the batcher lets go; at most max_wait_s)")


class TenantKnobs(KnobGroup):
    """Per-tenant limits (doc item 5)."""

    title: ClassVar[str] = "tenants"
    read_by: ClassVar[str] = "targets.admission.TenantBuckets and targets.queues.FairQueue"
    tenant_limits: Annotated[bool, BOTH] = Field(False, description="a token bucket per tenant (429 over it) "
                                                 "and fair queueing")
    tenant_limit_share: Annotated[float, BOTH] = Field(0.7, gt=0, le=1, description="a tenant's cap, share of "
                                                       "peak_qps")
    tenant_burst_s: Annotated[float, BOTH] = Field(0.2, gt=0, description="token bucket depth, seconds of the cap")


class FrontEndKnobs(KnobGroup):
    """The API servers' and L4 proxy's CPU: the guards that shed when it falls behind (live
    and sim), and the modeled CPU a sim run charges for it (sim only: live pays its real CPU).
    In sim the guards act only while frontend_cost_s > 0 (a free front end never falls behind)."""

    title: ClassVar[str] = "front end"
    read_by: ClassVar[str] = ("live: the overload guards (targets.http.overload, set by "
                              "targets.http.api_servers); sim: targets.frontend_cpu.FrontendCpu")
    frontend_lag_limit_s: Annotated[float | None, BOTH] = Field(
        None, gt=0, description="API servers shed (503) while their event loop lags more than this (sim: while "
        "a request's wait for the modeled CPU is over it); None: never")
    frontend_age_share: Annotated[float | None, BOTH] = Field(
        None, gt=0, le=1, description="API servers shed (503) a request older than this share of slo_s when its "
        "handler starts (live: since its first byte reached the proxy; sim: its wait for the modeled CPU); "
        "None: never")
    frontend_proxy_share: Annotated[float | None, BOTH] = Field(
        None, ge=0, le=1, description="the live L4 proxy answers a new request 503 itself, before any API server "
        "sees it, while three requests it relayed have waited this share of slo_s in the front end (their time "
        "at the GPUs aside) (0: refuses every request, to profile a refusal; sim: a request whose wait for the "
        "modeled CPU is over it is refused at frontend_proxy_shed_cost_s); None: never")
    frontend_cost_s: Annotated[float, SIM] = Field(
        0.0, ge=0, description="seconds of an API server's CPU a request takes (as `harness profile frontend` "
        "measures a live loop: CPU plus the wait for a core; 0: free); live servers pay their real CPU")
    frontend_shed_cost_s: Annotated[float, SIM] = Field(0.0, ge=0, description="CPU seconds an API server spends "
                                                        "refusing one")
    frontend_proxy_shed_cost_s: Annotated[float, SIM] = Field(0.0, ge=0, description="seconds of the front end's "
                                                              "CPU the L4 proxy spends refusing one "
                                                              "(frontend_proxy_share)")
    frontend_cores: Annotated[int | None, SIM] = Field(None, ge=1, le=1000, description="CPUs the API servers "
                                                       "share (a live host runs them all on one event loop: 1); "
                                                       "None: one CPU each")


# A dump lists the groups' knobs in this order (pydantic takes the last base's fields first,
# hence TargetConfig's bases in reverse).
KNOB_GROUPS: tuple[type[KnobGroup], ...] = (DesignKnobs, ModelKnobs, FleetKnobs, RoutingKnobs, BatchingKnobs,
                                            CacheKnobs, ClientKnobs, AdmissionKnobs, TenantKnobs, FrontEndKnobs)


class TargetConfig(FrontEndKnobs, TenantKnobs, AdmissionKnobs, ClientKnobs, CacheKnobs, BatchingKnobs,
                   RoutingKnobs, FleetKnobs, ModelKnobs, DesignKnobs):
    """Knobs of a reference target, every group's at once, by their flat names.
    Defaults are the design doc's (naive)."""

    title: ClassVar[str] = "target"
    read_by: ClassVar[str] = "targets.target.ServingTarget, which composes the components"

    # -- derived ------------------------------------------------------------------
    @property
    def formula_gpus(self) -> float:
        """The doc's item 6, unrounded: peak_qps * batch_time_s / batch_size."""
        return self.peak_qps * self.batch_time_s / self.batch_size

    @property
    def fleet_gpus(self) -> int:
        """GPUs in the fleet: `gpus` if set, else the sizing rule.

        ceil(formula / target_utilization) + spare_gpus; at the doc's settings
        (utilization 1.0, no spare) that is ceil(10000 * 0.1 / 32) = 32.
        """
        if self.gpus is not None:
            return self.gpus
        return math.ceil(self.formula_gpus / self.target_utilization - 1e-9) + self.spare_gpus

    @property
    def effective_max_wait_s(self) -> float:
        """Longest a partial batch may wait: what the SLO leaves after one
        batch time, halved to leave room for waiting on a GPU, and never more
        than the batch time (waiting longer than a batch gains nothing)."""
        if self.max_wait_s is not None:
            return self.max_wait_s
        slack = max(self.slo_s - self.batch_time_s, 0.0) / 2
        return max(min(slack, self.batch_time_s), 0.001)


@dataclass(frozen=True)
class Knob:
    """One knob: its flat name, the group (component) that reads it, and where it applies."""

    name: str
    group: type[KnobGroup]
    where: Where


def _knobs() -> dict[str, Knob]:
    out: dict[str, Knob] = {}
    for group in KNOB_GROUPS:
        for name, info in group.model_fields.items():
            where = where_of(info)
            assert where is not None, name  # KnobGroup refuses an untagged knob
            out[name] = Knob(name, group, where)
    return out


KNOBS: dict[str, Knob] = _knobs()  # every knob by its flat name, in dump order
