"""The `run` result: one target under one workload, sim or live.

`RunSummary` is the contract scripts and CI gates rely on (README, "Summary
keys"); `RunResult` adds what reports need to draw the run again: the full
configs, phases, faults, events, time series and the latency CDF.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["Latency", "RequestCounts", "RunResult", "RunSummary", "TenantFigures"]


class RequestCounts(Figures):
    unique: int
    attempts: int
    succeeded: int
    within_slo: int
    failed: int
    shed: int
    timed_out: int
    unfinished: int = 0
    lost: int = 0


class Latency(Figures):
    """Seconds. None where the percentile lands on a request never answered."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None


class TenantFigures(Figures):
    unique: int
    within_slo: int
    goodput_ratio: float
    p50_s: float | None = None
    p99_s: float | None = None


class WastedBreakdown(Figures):
    duplicate: float = 0.0
    abandoned: float = 0.0
    padding: float = 0.0


class GpuFigures(Figures):
    count: int
    utilization: float
    batch_fill: float
    batches: int
    wasted_gpu_s: float
    wasted_breakdown_s: WastedBreakdown
    redispatched: int = 0


class CacheFigures(Figures):
    mode: str
    lookups: int = 0
    hits: int = 0
    hit_rate: float | None = None
    bypassed: int = 0


class ServerFigures(Figures):
    shed_tenant: int = 0
    shed_overload: int = 0
    expired_dropped: int = 0
    dedupe_coalesced: int = 0
    dedupe_replayed: int = 0


class Recovery(Figures):
    disturbance_end_s: float | None = None
    recovered_after_s: float | None = None
    threshold: float | None = None


class RunSummary(Figures):
    """The figures of one run; `live` holds the driver's and host's figures in live mode."""

    OMIT_IF_NONE = frozenset({"live"})

    target: str
    workload: str
    mode: Literal["sim", "live"]
    seed: int
    slo_s: float
    duration_s: float
    offered_rps: float
    goodput_rps: float
    throughput_rps: float
    goodput_ratio: float | None = None
    amplification: float | None = None
    requests: RequestCounts
    attempt_status: dict[str, int] = Field(default_factory=dict)
    latency_s: Latency
    latency_ok_s: Latency
    attempt_latency_ok_s: Latency
    tenants: dict[str, TenantFigures] = Field(default_factory=dict)
    fairness_jain: float | None = None
    gpu: GpuFigures
    cache: CacheFigures
    server: ServerFigures = Field(default_factory=ServerFigures)
    recovery: Recovery = Field(default_factory=Recovery)
    flaws: list[str] = Field(default_factory=list)
    end_s: float
    wall_s: float
    partial: bool = False
    live: dict[str, Any] | None = None


class RunResult(Result):
    KIND = "run"

    kind: Literal["run"] = "run"
    summary: RunSummary
    target_config: dict[str, Any]
    workload_config: dict[str, Any]
    seed: int
    mode: Literal["sim", "live"]
    phases: list[dict[str, Any]] = Field(default_factory=list)
    faults: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    timeseries: dict[str, Any] = Field(default_factory=dict)
    latency_cdf: dict[str, Any] = Field(default_factory=dict)
