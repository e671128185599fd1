"""The `capacity` result: Part 2, the doc's formula beside the simulated realtime and offline fleets.

Field names are the JSON keys `harness capacity --json` prints; see
`harness.analysis.capacity.plan` for how each figure is measured.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["ByBRow", "CapacityInputs", "CapacityResult", "CurvePoint", "FillPoint", "Loss", "OfflineFigures",
           "SizingStep"]


class CapacityInputs(Figures):
    """What the plan is for; `batch_time_s` is t(B) (read from the cost table when there is one)."""

    qps: float
    batch_size: int
    batch_time_s: float
    slo_p99_s: float
    cost_model: str
    cost_table: str | None = None
    seed: int
    quick: bool
    headroom_factor: float


class OfflineFigures(Figures):
    """A backlog in full batches on the formula's fleet: its throughput over the formula's."""

    requests: int
    answered: int
    gpus: int
    makespan_s: float
    throughput_rps: float
    formula_rps: float
    efficiency: float
    batch_fill: float
    utilization: float


class ByBRow(Figures):
    """The formula at one batch size; per_gpu_rps = b / t(b), a full-batch GPU's throughput."""

    b: int
    batch_time_s: float
    theoretical_gpus: float
    formula_gpus: int
    per_gpu_rps: float


class SizingStep(Figures):
    """One step from the formula to the fleet to buy; gpus None when the search found none."""

    step: str
    gpus: int | float | None = None
    why: str
    delta: int | float | None = None


class CurvePoint(Figures):
    """One fleet at peak: latency (s) and utilization against offered utilization."""

    gpus: int
    offered_utilization: float
    utilization: float
    p50_s: float | None = None
    p99_s: float | None = None
    batch_fill: float
    goodput_ratio: float | None = None
    meets_slo: bool
    stable: bool
    idle_forming_frac: float


class FillPoint(Figures):
    """Batch fill and latency at one load (fraction of peak) on the realtime fleet."""

    load_fraction: float
    rate_rps: float
    batch_fill: float
    p50_s: float | None = None
    p99_s: float | None = None
    utilization: float
    gpu_s_per_request: float | None = None


class Loss(Figures):
    """One source of lost realtime throughput; `measured` in `unit`, None when unmeasurable."""

    source: str
    measured: float | None = None
    unit: str
    explanation: str
    detail: dict[str, float | None] = Field(default_factory=dict)


class CapacityResult(Result):
    kind: Literal["capacity"] = "capacity"
    inputs: CapacityInputs
    theoretical_gpus: float
    formula_gpus: int
    rounding: str
    realtime_gpus: int | None = None
    headroom_gpus: int | None = None
    realtime_with_headroom_gpus: int | None = None
    offline_efficiency: float
    offline: OfflineFigures
    table_by_b: list[ByBRow]
    max_wait_s: float
    batching: str
    breakdown: list[SizingStep] = Field(default_factory=list)
    curve: list[CurvePoint] = Field(default_factory=list)
    fill_vs_load: list[FillPoint] = Field(default_factory=list)
    losses: list[Loss] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    runs: int
    point_duration_s: float
    wall_s: float

    def summary_json(self) -> dict[str, Any]:
        """What `capacity --json` prints: the document without versions."""
        return {k: v for k, v in self.to_json().items() if k != "versions"}
