"""Discrete-event simulation of one GPU pool shared by a large (gang) and a small model.

``run_pool(config, policy)`` drives a ``targets.gang_schedulers`` step machine with seeded
Poisson arrivals for ``duration_s`` seconds of virtual time, then lets queued work
drain for ``drain_s`` seconds with no new arrivals. It is a plain heapq event loop:
deterministic under ``seed``, no wall clock, every loop bounded (``max_events``).
``compare_policies`` runs every policy on the same arrivals. Results are plain
frozen dataclasses whose ``to_dict()`` is JSON-serialisable (no inf or NaN).

Latency is arrival to batch end. A request still unanswered when the simulation
stops counts as infinitely slow, so a percentile that lands on one is ``None``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from targets.gang_schedulers import (
    EPS_S, Decision, GpuSlot, ModelKind, ModelSpec, PoolPolicy, PoolSpec, PoolState, QueueView,
    create_policy, policy_names,
)

__all__ = [
    "ModelSpec", "PoolConfig", "CapacityCheck", "ModelStats", "BatchRecord", "PoolResult",
    "PoolScheduleError", "capacity_check", "generate_arrivals", "run_pool", "compare_policies",
]

_KINDS = (ModelKind.LARGE, ModelKind.SMALL)


class PoolScheduleError(RuntimeError):
    """A policy broke a pool invariant, or the event cap was hit (a livelock)."""


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


@dataclass(frozen=True)
class CapacityCheck:
    """lambda_L * gpus * t_L / B_L + lambda_S * t_S / B_S <= gpus * target (GPU-s per s)."""

    large_gpu_s_per_s: float
    small_gpu_s_per_s: float
    lhs_gpu_s_per_s: float
    rhs_gpu_s_per_s: float
    utilization_needed: float
    ok: bool
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def capacity_check(config: PoolConfig) -> CapacityCheck:
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
    return CapacityCheck(large, small, lhs, rhs, lhs / config.gpus, lhs <= rhs, reason)


@dataclass(frozen=True)
class ModelStats:
    """Per-model outcome. Latencies in s; None where unanswered requests decide."""

    requests: int
    served: int
    unanswered: int
    p50_s: float | None
    p99_s: float | None
    slo_attainment: float | None
    longest_wait_s: float | None
    mean_batch_size: float | None
    gpu_s_per_request_full_batch: float
    gpu_s_per_request_measured: float | None


@dataclass(frozen=True)
class BatchRecord:
    """One started batch (only kept with ``trace=True``)."""

    model: ModelKind
    gpus: tuple[int, ...]
    size: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class PoolResult:
    policy: str
    config: dict[str, Any]
    capacity: CapacityCheck
    large: ModelStats
    small: ModelStats
    utilization: float
    fragmentation_gpu_s: float
    fragmentation_frac: float
    meets_slo: bool
    events: int
    gantt_window_s: tuple[float, float]
    gantt: tuple[tuple[int, str, float, float], ...]
    gantt_truncated: bool
    trace: tuple[BatchRecord, ...] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable; the Gantt bars as {gpu, model, start_s, end_s}."""
        return {
            "policy": self.policy, "config": self.config, "capacity": self.capacity.to_dict(),
            "large": asdict(self.large), "small": asdict(self.small),
            "utilization": self.utilization, "fragmentation_gpu_s": self.fragmentation_gpu_s,
            "fragmentation_frac": self.fragmentation_frac, "meets_slo": self.meets_slo,
            "events": self.events, "gantt_window_s": list(self.gantt_window_s),
            "gantt": [{"gpu": g, "model": m, "start_s": a, "end_s": b} for g, m, a, b in self.gantt],
            "gantt_truncated": self.gantt_truncated,
        }


def generate_arrivals(config: PoolConfig) -> dict[ModelKind, np.ndarray]:
    """Sorted Poisson arrival times (s) in [0, duration_s) per model; each model has
    its own seeded stream, so changing one model's rate leaves the other's alone."""
    streams = np.random.SeedSequence(config.seed).spawn(len(_KINDS))
    out = {}
    for kind, seq in zip(_KINDS, streams):
        rng = np.random.default_rng(seq)
        n = rng.poisson(config.spec.model(kind).rate_rps * config.duration_s)
        out[kind] = np.sort(rng.uniform(0.0, config.duration_s, n))
    return out


def _percentile(sorted_lat: np.ndarray, q: float) -> float | None:
    """Nearest-rank percentile; None when it falls on an unanswered (inf) request."""
    if sorted_lat.size == 0:
        return None
    v = float(sorted_lat[max(0, math.ceil(q * sorted_lat.size) - 1)])
    return v if math.isfinite(v) else None


class _Sim:
    """Mutable bookkeeping of one run; ``run`` is the event loop."""

    def __init__(self, config: PoolConfig, policy: PoolPolicy,
                 arrivals: dict[ModelKind, np.ndarray], trace: bool) -> None:
        self.cfg, self.spec, self.policy = config, config.spec, policy
        self.arr = {k: arrivals[k].tolist() for k in _KINDS}  # lists: fast scalar reads
        self.start = {k: np.full(len(self.arr[k]), np.nan) for k in _KINDS}
        self.arrived = {k: 0 for k in _KINDS}
        self.head = {k: 0 for k in _KINDS}  # FIFO: requests [head, arrived) are queued
        self.slots: list[GpuSlot | None] = [None] * config.gpus
        self.heap: list[tuple[float, int, tuple[int, ...]]] = []  # () marks a wake-up
        self.wakes: set[float] = set()
        self.seq = 0
        self.busy_gpu_s = 0.0
        self.frag_gpu_s = 0.0
        self.spent = {k: 0.0 for k in _KINDS}
        self.batches = {k: 0 for k in _KINDS}
        self.reservation: float | None = None
        self.window = config.window_s
        self.gantt: list[tuple[int, str, float, float]] = []
        self.truncated = False
        self.trace: list[BatchRecord] | None = [] if trace else None

    def _push(self, t: float, gpus: tuple[int, ...]) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, gpus))

    def _state(self) -> PoolState:
        views = []
        for k in _KINDS:
            n = self.arrived[k] - self.head[k]
            views.append(QueueView(n, self.arr[k][self.head[k]] if n else math.inf))
        return PoolState(tuple(self.slots), views[0], views[1])

    def _integrate(self, t0: float, t1: float) -> None:
        """Idle GPU-seconds in [t0, t1] while a large batch was due (fragmentation)."""
        idle = self.slots.count(None)
        k = ModelKind.LARGE
        n = self.arrived[k] - self.head[k]
        if idle == 0 or n == 0:
            return
        due_from = t0 if n >= self.cfg.large.batch_size else \
            self.arr[k][self.head[k]] + self.spec.max_wait_s(k)
        lo, hi = max(t0, due_from), min(t1, self.cfg.duration_s)
        if hi > lo:
            self.frag_gpu_s += idle * (hi - lo)

    def _apply(self, d: Decision, now: float) -> None:
        used: set[int] = set()
        for s in d.starts:
            m = self.spec.model(s.model)
            queued = self.arrived[s.model] - self.head[s.model]
            if abs(s.start_s - now) > EPS_S or abs(s.end_s - (now + m.batch_time_s)) > 1e-6:
                raise PoolScheduleError(f"{s} does not run [now, now + t] at now={now}")
            if len(s.gpus) != self.spec.gang(s.model) or len(set(s.gpus)) != len(s.gpus):
                raise PoolScheduleError(f"{s} needs {self.spec.gang(s.model)} distinct GPUs")
            if any(g in used or not 0 <= g < self.cfg.gpus or self.slots[g] is not None for g in s.gpus):
                raise PoolScheduleError(f"{s} uses a GPU that is busy at {now}")
            if not 1 <= s.size <= min(m.batch_size, queued):
                raise PoolScheduleError(f"{s} size outside 1..min(B={m.batch_size}, queued={queued})")
            if s.model is ModelKind.LARGE:
                if self.reservation is not None and now > self.reservation + EPS_S:
                    raise PoolScheduleError(f"large batch at {now} after its reservation {self.reservation}")
                self.reservation = None
            used.update(s.gpus)
            end = now + m.batch_time_s
            h = self.head[s.model]
            self.start[s.model][h:h + s.size] = now
            self.head[s.model] = h + s.size
            for g in s.gpus:
                self.slots[g] = GpuSlot(s.model, end)
            self._push(end, s.gpus)
            self.busy_gpu_s += len(s.gpus) * max(0.0, min(end, self.cfg.duration_s) - now)
            self.spent[s.model] += len(s.gpus) * m.batch_time_s
            self.batches[s.model] += 1
            if self.trace is not None:
                self.trace.append(BatchRecord(s.model, s.gpus, s.size, now, end))
            if now < self.window[1] and end > self.window[0]:
                if len(self.gantt) + len(s.gpus) > self.cfg.max_gantt_bars:
                    self.truncated = True
                else:
                    self.gantt.extend((g, s.model.value, now, end) for g in s.gpus)

    def _step(self, now: float) -> None:
        """Call the policy until a call starts nothing (at most gpus + 1 starts)."""
        for _ in range(self.cfg.gpus + 2):
            d = self.policy.schedule(self._state(), now)
            if d.reservation_s is not None and self.reservation is None:
                self.reservation = d.reservation_s
            self._apply(d, now)
            w = d.wake_at_s
            if w is not None and w > now + EPS_S and w not in self.wakes:
                self.wakes.add(w)
                self._push(w, ())
            if not d.starts:
                return
        raise PoolScheduleError(f"{self.policy.name} kept starting batches at {now} with no GPU left")

    def run(self) -> int:
        horizon, cap, now, events = self.cfg.horizon_s, self.cfg.event_cap, 0.0, 0
        while True:
            nxt = self.heap[0][0] if self.heap else math.inf
            for k in _KINDS:
                if self.arrived[k] < len(self.arr[k]):
                    nxt = min(nxt, self.arr[k][self.arrived[k]])
            if nxt > horizon:
                return events
            events += 1
            if events > cap:
                raise PoolScheduleError(f"event cap {cap} hit at t={now:.3f}: livelocked policy?")
            self._integrate(now, nxt)
            now = nxt
            for k in _KINDS:
                arr, i = self.arr[k], self.arrived[k]
                while i < len(arr) and arr[i] <= now:
                    i += 1
                self.arrived[k] = i
            while self.heap and self.heap[0][0] <= now:
                t, _, gpus = heapq.heappop(self.heap)
                self.wakes.discard(t)
                for g in gpus:
                    self.slots[g] = None
            self._step(now)

    def stats(self, kind: ModelKind) -> ModelStats:
        m = self.spec.model(kind)
        arr = np.asarray(self.arr[kind])
        start = self.start[kind]
        served = int(self.head[kind])
        lat = np.where(np.isnan(start), np.inf, start + m.batch_time_s - arr)
        wait = np.where(np.isnan(start), self.cfg.horizon_s, start) - arr
        lat.sort()
        n = arr.size
        return ModelStats(
            requests=n, served=served, unanswered=n - served,
            p50_s=_percentile(lat, 0.50), p99_s=_percentile(lat, 0.99),
            slo_attainment=float(np.mean(lat <= self.cfg.slo_s)) if n else None,
            longest_wait_s=float(wait.max()) if n else None,
            mean_batch_size=served / self.batches[kind] if self.batches[kind] else None,
            gpu_s_per_request_full_batch=self.spec.gpu_s_per_request(kind),
            gpu_s_per_request_measured=self.spent[kind] / served if served else None)


def run_pool(config: PoolConfig, policy: str | PoolPolicy, *, trace: bool = False,
             arrivals: dict[ModelKind, np.ndarray] | None = None) -> PoolResult:
    """Simulate ``policy`` (a registered name, or a fresh instance) on ``config``.

    ``arrivals`` (sorted times in s per model) defaults to ``generate_arrivals``;
    ``trace=True`` keeps every batch in ``PoolResult.trace`` (for tests). Raises
    ``PoolScheduleError`` if the policy breaks a pool invariant.
    """
    pol = create_policy(policy, config.spec) if isinstance(policy, str) else policy
    sim = _Sim(config, pol, generate_arrivals(config) if arrivals is None else arrivals, trace)
    events = sim.run()
    large, small = sim.stats(ModelKind.LARGE), sim.stats(ModelKind.SMALL)
    meets = all(s.p99_s is not None and s.p99_s <= config.slo_s for s in (large, small) if s.requests)
    pool_s = config.gpus * config.duration_s
    return PoolResult(
        policy=pol.name, config=config.to_dict(), capacity=capacity_check(config),
        large=large, small=small, utilization=sim.busy_gpu_s / pool_s,
        fragmentation_gpu_s=sim.frag_gpu_s, fragmentation_frac=sim.frag_gpu_s / pool_s,
        meets_slo=meets, events=events, gantt_window_s=sim.window, gantt=tuple(sim.gantt),
        gantt_truncated=sim.truncated, trace=None if sim.trace is None else tuple(sim.trace))


def compare_policies(config: PoolConfig, policies: Sequence[str] | None = None) -> dict[str, Any]:
    """Run each named policy (default: all registered) on the same arrivals.

    Returns ``{"config": ..., "capacity": ..., "results": {name: PoolResult.to_dict()}}``.
    """
    arrivals = generate_arrivals(config)
    names = policy_names() if policies is None else tuple(policies)
    return {
        "config": config.to_dict(),
        "capacity": capacity_check(config).to_dict(),
        "results": {n: run_pool(config, n, arrivals=arrivals).to_dict() for n in names},
    }
