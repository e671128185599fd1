"""The `pool` result: Part 3, two models on one GPU pool, every policy on the same arrivals.

`PoolResult.results[policy]` is one policy's run (`PolicyRun`): per-model figures,
utilization, idle fragmentation, the Gantt bars of a window, and its verdict as
data (`PolicyVerdict`: a reason code, the longest wait, the idle share, which model
starves or runs late). `verdict` keeps the plain-text digest of those verdicts that
scripts and the review read; `reports/pool.py` words the typed verdicts itself.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["CapacityCondition", "GanttBar", "ModelFigures", "ModelSettings", "PolicyRun", "PolicyVerdict",
           "PoolResult", "PoolSettings", "VerdictReason"]


class ModelSettings(Figures):
    """One model's traffic and cost: Poisson requests/s; a batch of up to B runs batch_time_s."""

    rate_rps: float
    batch_size: int
    batch_time_s: float


class PoolSettings(Figures):
    """The experiment's configuration (`harness.analysis.pool.gang.PoolConfig`)."""

    large: ModelSettings
    small: ModelSettings
    slo_s: float
    gpus: int
    duration_s: float
    seed: int
    target_utilization: float
    wait_fraction: float
    drain_s: float | None = None
    gantt_window_s: tuple[float, float]
    max_gantt_bars: int
    max_events: int | None = None

    def model(self, name: str) -> ModelSettings:
        return self.large if name == "large" else self.small


class CapacityCondition(Figures):
    """lambda_L * gpus * t_L / B_L + lambda_S * t_S / B_S <= gpus * target (GPU-s per s)."""

    large_gpu_s_per_s: float
    small_gpu_s_per_s: float
    lhs_gpu_s_per_s: float
    rhs_gpu_s_per_s: float
    utilization_needed: float
    ok: bool
    reason: str | None = None


class ModelFigures(Figures):
    """One model's outcome. Latencies in s; None where unanswered requests decide."""

    requests: int
    served: int
    unanswered: int
    p50_s: float | None = None
    p99_s: float | None = None
    slo_attainment: float | None = None
    longest_wait_s: float | None = None
    mean_batch_size: float | None = None
    gpu_s_per_request_full_batch: float
    gpu_s_per_request_measured: float | None = None


class VerdictReason(str, enum.Enum):
    """Why a policy met the target or not, in the order a reader checks them."""

    MEETS_SLO = "meets-slo"
    STARVES = "starves"            # a model waits without bound while capacity suffices
    P99_ABOVE_SLO = "p99-above-slo"  # every model is served, some p99 above the target
    OVER_CAPACITY = "over-capacity"  # the capacity condition fails: no order of batches helps


class PolicyVerdict(Figures):
    """One policy's verdict as data, decided where it is measured (harness.analysis.pool.gang)."""

    reason: VerdictReason
    longest_wait_s: float | None = None  # the starving (else the large) model's longest wait
    idle_share: float                    # GPU time idle while a large batch waited for every GPU
    starving: str | None = None          # the model that starves, if one does
    late: list[str] = Field(default_factory=list)  # models whose p99 misses the target


class GanttBar(Figures):
    gpu: int
    model: Literal["large", "small"]
    start_s: float
    end_s: float


class PolicyRun(Figures):
    """One policy on the pool. `gantt` holds the bars of `gantt_window_s` only."""

    OMIT_IF_NONE = frozenset({"verdict"})  # files written before verdicts were data lack it

    policy: str
    config: PoolSettings
    capacity: CapacityCondition
    large: ModelFigures
    small: ModelFigures
    utilization: float
    fragmentation_gpu_s: float
    fragmentation_frac: float
    meets_slo: bool
    events: int
    gantt_window_s: tuple[float, float]
    gantt: list[GanttBar] = Field(default_factory=list)
    gantt_truncated: bool = False
    verdict: PolicyVerdict | None = None

    def model(self, name: str) -> ModelFigures:
        return self.large if name == "large" else self.small


class PoolResult(Result):
    """Every policy (in `policies`, run order) on the same seeded arrivals.

    `skipped` maps a policy that cannot run under this config to why; `meets_slo`
    lists the policies meeting the target for both models; `verdict` is the
    plain-text digest of the typed verdicts (for scripts and the review).
    """

    kind: Literal["pool"] = "pool"
    config: PoolSettings
    capacity: CapacityCondition
    results: dict[str, PolicyRun] = Field(default_factory=dict)
    policies: list[str] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)
    meets_slo: list[str] = Field(default_factory=list)
    verdict: list[str] = Field(default_factory=list)

    def summary_json(self) -> dict[str, Any]:
        """What `pool --json` prints: the document without Gantt bars or versions."""
        doc = self.to_json()
        keep = {k: doc[k] for k in ("schema", "kind", "config", "capacity", "policies", "skipped",
                                    "meets_slo", "verdict")}
        keep["results"] = {n: {k: v for k, v in r.items() if k != "gantt"} for n, r in doc["results"].items()}
        return keep
