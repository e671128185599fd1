"""Part 3's experiment: one GPU pool shared by a large (gang) and a small model, per policy.

``run_pool(config, policy)`` drives a ``targets.gang_schedulers`` step machine on the
engine's virtual-time loop (``harness.engine.clock``), through ``GangPoolShell``,
with arrivals from ``workloads.arrivals`` (one constant-rate Poisson workload per
model, each with its own seed) and latency figures from the engine's recorder
(``harness.engine.recorder``). ``duration_s`` seconds of arrivals, then queued work
drains for ``drain_s`` seconds. Deterministic under ``seed``; no wall clock; every
run bounded (``event_cap``). The result is a typed ``harness.results.pool.PolicyRun``
whose ``verdict`` is decided here, beside the figures it reads.

Latency is arrival to batch end. A request still unanswered when the simulation
stops counts as infinitely slow, so a percentile that lands on one is ``None``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.analysis.pool.shell import BatchRecord, GangPoolShell, PoolScheduleError
from harness.results.pool import CapacityCondition, ModelFigures, PolicyRun, PolicyVerdict, VerdictReason
from targets.gang_schedulers import ModelKind, ModelSpec, PoolPolicy, PoolSpec, create_policy
from workloads.arrivals import build_schedule
from workloads.model import ArrivalProcess, ConstantPhase, Tenant, WorkloadConfig

__all__ = [
    "ModelSpec", "PoolConfig", "BatchRecord", "PoolScheduleError", "capacity_check", "generate_arrivals",
    "run_pool", "policy_verdict", "STARVING_WAIT_SLOS",
]

_KINDS = (ModelKind.LARGE, ModelKind.SMALL)
STARVING_WAIT_SLOS = 5.0  # a model whose longest wait passes 5 SLOs is starving, not merely late


@dataclass(frozen=True)
class PoolConfig:
    """One pool experiment. Defaults: 10 rps of the large model (B=8, 0.2 s on all 8
    GPUs: 2.0 GPU-s/s) and 2000 rps of the small one (B=32, 0.05 s on 1 GPU:
    3.125 GPU-s/s), 5.125 of 8 GPUs = 64% utilization, under a 1 s target."""

    large: ModelSpec = ModelSpec(rate_rps=10.0, batch_size=8, batch_time_s=0.2)
    small: ModelSpec = ModelSpec(rate_rps=2000.0, batch_size=32, batch_time_s=0.05)
    slo_s: float = 1.0
    gpus: int = 8
    duration_s: float = 30.0
    seed: int = 0
    target_utilization: float = 0.8
    wait_fraction: float = 0.5
    drain_s: float | None = None  # None: 5 * slo_s after arrivals stop
    gantt_window_s: tuple[float, float] | None = None  # None: 3 s in mid-run
    max_gantt_bars: int = 4000
    max_events: int | None = None  # None: derived from the expected arrivals

    def __post_init__(self) -> None:
        _ = self.spec  # builds a PoolSpec, which validates gpus, slo_s, wait_fraction
        if not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise ValueError(f"duration_s must be finite and > 0, got {self.duration_s}")
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        if self.drain_s is not None and self.drain_s < 0:
            raise ValueError(f"drain_s must be >= 0, got {self.drain_s}")
        if self.gantt_window_s is not None and not 0 <= self.gantt_window_s[0] < self.gantt_window_s[1]:
            raise ValueError(f"gantt_window_s must be (a, b) with 0 <= a < b, got {self.gantt_window_s}")
        if self.max_gantt_bars < 0:
            raise ValueError("max_gantt_bars must be >= 0")

    @property
    def spec(self) -> PoolSpec:
        return PoolSpec(self.large, self.small, self.slo_s, self.gpus, self.wait_fraction)

    @property
    def horizon_s(self) -> float:
        """Virtual time at which the simulation stops looking (s)."""
        return self.duration_s + (5 * self.slo_s if self.drain_s is None else self.drain_s)

    @property
    def window_s(self) -> tuple[float, float]:
        if self.gantt_window_s is not None:
            return self.gantt_window_s
        mid = self.duration_s / 2
        return (max(0.0, mid - 1.5), min(self.duration_s, mid + 1.5))

    @property
    def event_cap(self) -> int:
        if self.max_events is not None:
            return self.max_events
        expected = (self.large.rate_rps + self.small.rate_rps) * self.duration_s
        # Each arrival, completion and wake-up is one event; 4x plus slack for the tails.
        return int(4 * expected + 1000 * self.horizon_s) + 10_000

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gantt_window_s"] = list(self.window_s)
        return d


def capacity_check(config: PoolConfig) -> CapacityCondition:
    """The capacity condition with full batches (the best case for every policy)."""
    spec = config.spec
    large = config.large.rate_rps * spec.gpu_s_per_request(ModelKind.LARGE)
    small = config.small.rate_rps * spec.gpu_s_per_request(ModelKind.SMALL)
    lhs, rhs = large + small, config.gpus * config.target_utilization
    demand = f"demand {lhs:.2f} GPU-s/s (large {large:.2f} + small {small:.2f})"
    reason = None
    if lhs > config.gpus:
        reason = (f"{demand} exceeds the whole pool ({config.gpus} GPU-s/s): no order of batches "
                  "creates GPU time, so queues grow without bound under every policy; "
                  "add GPUs, raise B or shed load")
    elif lhs > rhs:
        reason = (f"{demand} exceeds the {config.target_utilization:.0%} target ({rhs:.2f} GPU-s/s): "
                  f"at {lhs / config.gpus:.0%} busy there is no headroom for bursts, partial "
                  "gang batches, drains or a lost GPU")
    return CapacityCondition(large_gpu_s_per_s=large, small_gpu_s_per_s=small, lhs_gpu_s_per_s=lhs,
                             rhs_gpu_s_per_s=rhs, utilization_needed=lhs / config.gpus, ok=lhs <= rhs,
                             reason=reason)


def model_workload(config: PoolConfig, kind: ModelKind) -> WorkloadConfig:
    """One model's traffic as a workload: constant-rate Poisson for ``duration_s``."""
    return WorkloadConfig(
        name=f"pool-{kind.value}", process=ArrivalProcess.POISSON,
        tenants=(Tenant(name=kind.value, share=1.0, connections=1),),
        phases=(ConstantPhase(duration_s=config.duration_s, rate_rps=config.spec.model(kind).rate_rps),))


def generate_arrivals(config: PoolConfig) -> dict[ModelKind, np.ndarray]:
    """Sorted Poisson arrival times (s) in [0, duration_s) per model, from the workload
    schedule builder. Each model has its own seed spawned from ``seed``, so changing
    one model's rate leaves the other's arrivals alone."""
    seeds = np.random.SeedSequence(config.seed).spawn(len(_KINDS))
    return {kind: build_schedule(model_workload(config, kind), int(seq.generate_state(1)[0])).sched_s
            for kind, seq in zip(_KINDS, seeds)}


def policy_verdict(config: PoolConfig, capacity: CapacityCondition, large: ModelFigures,
                   small: ModelFigures, meets_slo: bool, idle_share: float) -> PolicyVerdict:
    """Why the policy met the target or not: over capacity, a model starving (unanswered
    at p99, or a longest wait past STARVING_WAIT_SLOS x the SLO), or a p99 above it."""
    slo = config.slo_s
    figures = {"large": large, "small": small}
    late = [m for m, f in figures.items() if f.requests and (f.p99_s is None or f.p99_s > slo)]
    if meets_slo:
        return PolicyVerdict(reason=VerdictReason.MEETS_SLO, longest_wait_s=large.longest_wait_s,
                             idle_share=idle_share)
    if not capacity.ok:
        return PolicyVerdict(reason=VerdictReason.OVER_CAPACITY, longest_wait_s=large.longest_wait_s,
                             idle_share=idle_share, late=late)
    for name, f in figures.items():
        if f.requests and (f.p99_s is None or (f.longest_wait_s or 0.0) > STARVING_WAIT_SLOS * slo):
            return PolicyVerdict(reason=VerdictReason.STARVES, longest_wait_s=f.longest_wait_s,
                                 idle_share=idle_share, starving=name, late=late)
    return PolicyVerdict(reason=VerdictReason.P99_ABOVE_SLO, longest_wait_s=large.longest_wait_s,
                         idle_share=idle_share, late=late)


def run_pool(config: PoolConfig, policy: str | PoolPolicy, *, trace: list[BatchRecord] | None = None,
             arrivals: dict[ModelKind, np.ndarray] | None = None) -> PolicyRun:
    """Simulate ``policy`` (a registered name, or a fresh instance) on ``config``.

    ``arrivals`` (sorted times in s per model) defaults to ``generate_arrivals``;
    a ``trace`` list receives every started batch (for tests). Raises
    ``PoolScheduleError`` if the policy breaks a pool invariant.
    """
    pol = create_policy(policy, config.spec) if isinstance(policy, str) else policy
    shell = GangPoolShell(config.spec, pol, generate_arrivals(config) if arrivals is None else arrivals,
                          duration_s=config.duration_s, horizon_s=config.horizon_s, window_s=config.window_s,
                          max_gantt_bars=config.max_gantt_bars, event_cap=config.event_cap, trace=trace)
    events = shell.run()
    large, small = (ModelFigures(**shell.model_figures(k)) for k in _KINDS)
    meets = all(s.p99_s is not None and s.p99_s <= config.slo_s for s in (large, small) if s.requests)
    pool_s = config.gpus * config.duration_s
    capacity = capacity_check(config)
    frag = shell.frag_gpu_s / pool_s
    return PolicyRun(
        policy=pol.name, config=config.to_dict(), capacity=capacity, large=large, small=small,
        utilization=shell.busy_gpu_s / pool_s, fragmentation_gpu_s=shell.frag_gpu_s, fragmentation_frac=frag,
        meets_slo=meets, events=events, gantt_window_s=config.window_s,
        gantt=[{"gpu": g, "model": m, "start_s": a, "end_s": b} for g, m, a, b in shell.gantt],
        gantt_truncated=shell.truncated,
        verdict=policy_verdict(config, capacity, large, small, meets, frag))
