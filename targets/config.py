"""Every knob of a reference target, with the design doc's values as defaults.

A `TargetConfig` is the design as data: the naive target is this class's
defaults (the doc's numbers, and its flaws), and `hardened` turns each flaw's
knobs to their fixed values (see `targets.flaws`). Units are in the names.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


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


class TargetConfig(BaseModel):
    """Knobs of a reference target. Defaults are the design doc's (naive)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "naive"
    # -- the doc's numbers ---------------------------------------------------
    peak_qps: float = Field(10_000, gt=0, description="design peak, requests/s (doc goal)")
    batch_size: int = Field(32, ge=1, le=4096, description="B, the model's maximum batch")
    batch_time_s: float = Field(0.1, gt=0, description="one batched forward pass (doc item 2)")
    api_servers: int = Field(10, ge=1, le=1000, description="doc is silent; 1,000 QPS per server")
    gpus: int | None = Field(None, ge=1, le=100_000, description="None: from the sizing rule")
    slo_s: float = Field(0.3, gt=0, description="doc is silent: 3x the batch time, a common realtime target")
    # -- cost model ----------------------------------------------------------
    cost_model: CostModel = CostModel.CONSTANT
    cost_t0_s: float = Field(0.02, ge=0, description="affine: fixed part of a batch")
    cost_per_item_s: float = Field(0.0025, ge=0, description="affine: per request in the batch")
    cost_table: str | None = Field(None, description="table: path of a cost table JSON")
    reference_length: int = Field(64, ge=1, description="input length the batch time is quoted at")
    # -- item 1-2: balancing, queues and batching --------------------------------
    routing: Routing = Routing.L4_ROUND_ROBIN
    topology: Topology = Topology.PER_SERVER
    batching: Batching = Batching.FULL
    max_wait_s: float | None = Field(None, gt=0, description="dynamic: None derives it from the SLO")
    reserve_fraction: float = Field(0.25, ge=0, le=1, description="adaptive: free GPUs kept before going greedy")
    batch_utilization: float = Field(0.7, gt=0, le=1, description="rate: a partial batch goes once batches that size keep the fleet under this utilisation at the measured rate")
    length_bucketing: bool = Field(False, description="batch similar input lengths together")
    # -- item 3: cache ---------------------------------------------------------
    cache: CacheMode = CacheMode.EXACT
    cache_hop_s: float = Field(0.0005, ge=0, description="doc is silent: one network hop")
    cache_entries: int = Field(100_000, ge=1)
    model_version: str = "v1"
    # -- item 4: clients -------------------------------------------------------
    client_timeout_s: float = Field(1.0, gt=0, description="doc is silent: a typical SDK default")
    client_retries: int = Field(3, ge=0, le=20, description="doc is silent: a typical SDK default")
    client_backoff: Backoff = Backoff.NONE
    backoff_base_s: float = Field(0.05, gt=0)
    backoff_cap_s: float = Field(1.0, gt=0)
    request_ids: bool = False
    dedupe: bool = False
    retry_budget: float | None = Field(None, ge=0, le=10, description="max retries / first attempts")
    honour_retry_after: bool = False
    propagate_deadline: bool = False
    # -- item 5: admission and tenants -------------------------------------------
    admission: bool = False
    admission_target: float = Field(0.9, gt=0, le=1, description="admit if predicted latency <= this x budget")
    frontend_lag_limit_s: float | None = Field(None, gt=0, description="live API servers shed (503) while their "
                                               "event loop lags more than this; None: never")
    frontend_age_share: float | None = Field(None, gt=0, le=1, description="API servers shed (503) a request "
                                             "older than this share of slo_s when its handler starts (live: since "
                                             "its first byte reached the proxy; sim: its wait for the modeled CPU); "
                                             "None: never")
    frontend_proxy_share: float | None = Field(None, ge=0, le=1, description="the live L4 proxy answers a new "
                                               "request 503 itself, before any API server sees it, while three "
                                               "requests it relayed have waited this share of slo_s in the front end "
                                               "(their time at the GPUs aside) "
                                               "(0: refuses every request, to profile a refusal; sim: a request whose "
                                               "wait for the modeled CPU is over it is refused at "
                                               "frontend_proxy_shed_cost_s); None: never")
    frontend_cost_s: float = Field(0.0, ge=0, description="sim: seconds of an API server's CPU a request takes "
                                   "(as `harness profile frontend` measures a live loop: CPU plus the wait for a "
                                   "core; 0: free); live servers pay their real CPU")
    frontend_shed_cost_s: float = Field(0.0, ge=0, description="sim: CPU seconds an API server spends refusing one")
    frontend_proxy_shed_cost_s: float = Field(0.0, ge=0, description="sim: seconds of the front end's CPU the L4 "
                                              "proxy spends refusing one (frontend_proxy_share)")
    frontend_cores: int | None = Field(None, ge=1, le=1000, description="sim: CPUs the API servers share (a live "
                                       "host runs them all on one event loop: 1); None: one CPU each")
    tenant_limits: bool = False
    tenant_limit_share: float = Field(0.7, gt=0, le=1, description="a tenant's cap, share of peak_qps")
    tenant_burst_s: float = Field(0.2, gt=0, description="token bucket depth, seconds of the cap")
    # -- item 6: capacity ----------------------------------------------------------
    target_utilization: float = Field(1.0, gt=0, le=1, description="1.0 = the doc's zero headroom")
    spare_gpus: int = Field(0, ge=0, le=1000, description="N+k: GPUs on top for failures")
    # -- implicit: failures -----------------------------------------------------------
    failure_handling: bool = False
    batch_timeout_factor: float = Field(2.0, gt=1, description="batch timeout = factor x expected time")

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
    def _consistent(self) -> "TargetConfig":
        if self.dedupe and not self.request_ids:
            raise ValueError("dedupe needs request_ids = true (nothing to dedupe on)")
        if self.cost_model is CostModel.TABLE and not self.cost_table:
            raise ValueError("cost_model = 'table' needs cost_table = PATH (from `harness profile`)")
        if self.cost_table and self.cost_model is not CostModel.TABLE:
            raise ValueError(f"cost_table is set but cost_model is '{self.cost_model.value}', which ignores it "
                             "(set cost_model = 'table')")
        if self.backoff_cap_s < self.backoff_base_s:
            raise ValueError("backoff_cap_s must be >= backoff_base_s")
        return self

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
