"""Shrinking a design for a live run: a 2-core machine cannot carry 10,000 QPS, so `scale_for_live` shrinks
the rates and the fleet together. The scale is snapped so the fleet keeps a
whole number of GPUs at the design's per-GPU rate (naive: 0.02 becomes 1/32,
one GPU at 312.5 req/s as each of the doc's 32 GPUs carries); a target with
another sizing rule (hardened's 80% and N+1) applies its rule at the scaled
peak. API servers round to at least one, so their per-server rate can only
match at larger scales; the result's `live.scale` block reports both. A small
fleet also pools less Poisson variance than the doc's 32 GPUs sharing a
backlog, so near utilisation 1 it queues more than the full design would:
compare a live run with sim at the same scale (benchmarks/sim_vs_live.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from targets.config import TargetConfig
from workloads.model import WorkloadConfig

__all__ = ["DEFAULT_PEAK_RPS", "Scaling", "default_scale", "scale_for_live", "shrink", "snap_scale"]

DEFAULT_PEAK_RPS = 312.5   # a default live run's peak: one naive GPU's worth


@dataclass(frozen=True)
class Scaling:
    """How a design was shrunk for a live run (rates in requests/s)."""

    requested: float
    effective: float
    gpus: int
    api_servers: int
    design_gpus: int
    design_api_servers: int
    per_gpu_rps_design: float
    per_gpu_rps_live: float
    per_server_rps_design: float
    per_server_rps_live: float


def snap_scale(cfg: TargetConfig, scale: float) -> float:
    """The scale nearest `scale` at which the doc's own fleet, ceil(peak x batch
    time / B) GPUs, shrinks to a whole number k >= 1 of GPUs each carrying the
    design's per-GPU rate: k / ceil(formula). It depends only on the peak, the
    batch time and B, so every target at one --scale gets the same traffic."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    doc_fleet = max(1, math.ceil(cfg.formula_gpus - 1e-9))
    return max(1, round(scale * doc_fleet)) / doc_fleet


def scale_for_live(cfg: TargetConfig, scale: float) -> tuple[TargetConfig, Scaling]:
    """`cfg` shrunk by `scale` (already snapped): peak_qps and the fleet together.

    GPUs follow the config's own sizing rule at the scaled peak (so hardened
    keeps its headroom and N+1), or `gpus` x scale when the config fixes them.
    """
    knobs = cfg.model_dump()
    knobs["peak_qps"] = cfg.peak_qps * scale
    knobs["api_servers"] = max(1, round(cfg.api_servers * scale))
    if cfg.gpus is not None:
        knobs["gpus"] = max(1, round(cfg.gpus * scale))
    small = TargetConfig.model_validate(knobs)
    info = Scaling(
        requested=scale, effective=scale, gpus=small.fleet_gpus, api_servers=small.api_servers,
        design_gpus=cfg.fleet_gpus, design_api_servers=cfg.api_servers,
        per_gpu_rps_design=cfg.peak_qps / cfg.fleet_gpus, per_gpu_rps_live=small.peak_qps / small.fleet_gpus,
        per_server_rps_design=cfg.peak_qps / cfg.api_servers,
        per_server_rps_live=small.peak_qps / small.api_servers,
    )
    return small, info


def default_scale(workload: WorkloadConfig) -> float:
    """A scale that keeps the run's peak near DEFAULT_PEAK_RPS (never above 1)."""
    return min(1.0, workload.rate_factor(DEFAULT_PEAK_RPS))


def shrink(design: TargetConfig, scale: float | None = None) -> tuple[TargetConfig, Scaling]:
    """`design` shrunk for a live run at `scale` (snapped), or by default to a peak of DEFAULT_PEAK_RPS."""
    return scale_for_live(design, snap_scale(design, scale or DEFAULT_PEAK_RPS / design.peak_qps))
