"""The simulation half of capacity planning: probed sim points and the fleet search.

``Point`` is one seeded sim run of a target spec under a constant-rate workload,
picklable so a ``harness.engine.jobs.Jobs`` can run points in worker processes. Its
``run()`` returns a compact metrics dict (keys listed on ``Point``) rather than
the whole run document, and adds one measurement the run document lacks: GPU
time left idle while requests sat queued (a batch forming), sampled every
``probe_s`` of virtual time.

``FleetSearch`` finds the smallest fleet that meets a latency target, assuming
that more GPUs never hurt (monotone): an exponential search upward from a fleet
known to fail, then bisection, proposing ``width`` points per round so rounds run
in parallel.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.engine.recorder import Recorder
from harness.engine.sim import SimRun
from targets.config import TargetConfig
from targets.spec import resolve_target
from targets.target import ServingTarget
from workloads.arrivals import Schedule
from workloads.model import ArrivalProcess, ConstantPhase, Tenant, WorkloadConfig

__all__ = ["Point", "FleetSearch", "backlog", "backlog_schedule", "lowest_stable_fleet"]

_BACKLOG_WINDOW_S = 0.001  # a backlog "arrives at t=0": all requests within 1 ms


def backlog(requests: int) -> WorkloadConfig:
    """The workload of an offline backlog: one tenant, ``requests`` requests in the first
    millisecond. ``Point(..., backlog=requests)`` places them exactly (``backlog_schedule``)
    instead of drawing them from the rate."""
    return WorkloadConfig(
        name="backlog", process=ArrivalProcess.UNIFORM,
        tenants=(Tenant(name="offline", share=1.0, connections=100),),
        phases=(ConstantPhase(duration_s=_BACKLOG_WINDOW_S, rate_rps=requests / _BACKLOG_WINDOW_S),))


def backlog_schedule(workload: WorkloadConfig, requests: int, size: int) -> Schedule:
    """Exactly ``requests`` unique requests of input length ``size``, evenly spaced
    over the backlog's first millisecond (an exact count, unlike a drawn one)."""
    return Schedule(
        config=workload, tenants=tuple(t.name for t in workload.tenants),
        connections=tuple(t.connections for t in workload.tenants),
        sched_s=np.linspace(0.0, _BACKLOG_WINDOW_S, requests, endpoint=False),
        tenant=np.zeros(requests, dtype=np.int16), content=np.arange(requests, dtype=np.int64),
        variant=np.zeros(requests, dtype=np.int16), size=np.full(requests, size, dtype=np.int32))


class _ProbedRun(SimRun):
    """A SimRun that also integrates free GPUs while requests are queued (GPU-s)."""

    def __init__(self, config: TargetConfig, workload: WorkloadConfig, seed: int, probe_s: float,
                 schedule: Schedule | None = None) -> None:
        super().__init__(config, workload, seed)
        if schedule is not None:  # as SimRun builds them, from this schedule instead
            self.schedule = schedule
            self.recorder = Recorder(schedule.sched_s, schedule.tenant, schedule.tenants,
                                     config.slo_s, workload.duration_s, workload.window_s)
        self.probe_s = probe_s
        self.idle_forming_gpu_s = 0.0

    def _sample(self, loop: asyncio.AbstractEventLoop, target: ServingTarget) -> None:
        super()._sample(loop, target)
        dt, end = self.probe_s, self.workload.duration_s
        if dt <= 0:
            return

        def probe() -> None:
            # A free GPU next to a non-empty queue is waiting for a batch to form
            # (for B requests or the max-wait timer): the loss the formula ignores.
            if any(len(b.queue) for b in target.batchers):
                self.idle_forming_gpu_s += target.pool.free_gpus() * dt
            nxt = loop.time() + dt
            if nxt <= end:
                loop.call_at(nxt, probe)

        loop.call_at(dt / 2, probe)  # mid-interval sampling


@dataclass(frozen=True)
class Point:
    """One seeded sim run: ``target`` spec with ``knobs`` under ``workload``.

    ``run()`` returns: key, gpus, rate_rps, duration_s, p50_s, p99_s (None: more than
    1% never answered in time, i.e. unbounded), goodput_ratio, utilization (busy
    GPU-s / available, drain included), batch_fill (mean batch / B), amplification,
    unique, succeeded, end_s (virtual s when the last request finished), busy_gpu_s,
    computed (requests run on a GPU, duplicates included), gpu_s_per_request,
    wasted_s {duplicate, abandoned, padding}, idle_forming_frac (GPU-s idle while
    requests were queued / GPU-s available during the arrivals), wall_s.
    """

    key: str
    target: str
    knobs: tuple[tuple[str, Any], ...]
    workload: WorkloadConfig
    seed: int = 1
    probe_s: float = 0.001
    backlog: int = 0  # > 0: exactly this many requests at t=0 (backlog_schedule), not drawn

    @property
    def expected_requests(self) -> float:
        """Scheduled requests: a cost estimate for ordering longest first."""
        return self.backlog or self.workload.duration_s * self.workload.peak_rps

    def config(self) -> TargetConfig:
        return resolve_target(self.target, dict(self.knobs))

    def cache_inputs(self) -> dict[str, Any]:
        """Everything that decides `run()` (harness.engine.run_cache): the resolved config, not
        the spec alone, so a TOML design edited in place is another point."""
        return {"key": self.key, "target": self.target, "config": self.config(), "workload": self.workload,
                "seed": self.seed, "probe_s": self.probe_s, "backlog": self.backlog}

    def cache_label(self) -> str:
        return f"capacity point {self.key}"

    def run(self) -> dict[str, Any]:
        cfg = self.config()
        schedule = backlog_schedule(self.workload, self.backlog, cfg.reference_length) if self.backlog else None
        sim = _ProbedRun(cfg, self.workload, self.seed, self.probe_s, schedule)
        s = sim.run().summary
        pool = sim.target.pool if sim.target else None
        busy = pool.stats.busy_s if pool else 0.0
        items = pool.stats.items if pool else 0
        gpus = cfg.fleet_gpus
        return {
            "key": self.key, "target": self.target, "gpus": gpus,
            "rate_rps": self.workload.peak_rps, "duration_s": self.workload.duration_s,
            "p50_s": s.latency_s.p50, "p99_s": s.latency_s.p99,
            "goodput_ratio": s.goodput_ratio, "utilization": s.gpu.utilization,
            "batch_fill": s.gpu.batch_fill, "amplification": s.amplification,
            "unique": s.requests.unique, "succeeded": s.requests.succeeded,
            "shed": s.requests.shed,
            "end_s": s.end_s, "busy_gpu_s": busy, "computed": items,
            "gpu_s_per_request": busy / items if items else None,
            "wasted_s": s.gpu.wasted_breakdown_s.model_dump(),
            "idle_forming_frac": sim.idle_forming_gpu_s / (gpus * self.workload.duration_s),
            "wall_s": s.wall_s,
        }


class FleetSearch:
    """Smallest fleet in (lo_fail, max_gpus] that passes, if passing is monotone in fleet size.

    ``lo_fail`` must be known to fail (e.g. by arithmetic: capacity below the load).
    Each round, ``proposals()`` gives up to ``width`` fleet sizes; ``update`` takes
    their verdicts. Until a pass is seen the search gallops (offsets 1, 2, 4, ...
    above the highest failure), then it splits the bracket (lo, hi) ``width + 1``
    ways. ``result`` is the answer once ``done``; None if even ``max_gpus`` failed.
    """

    def __init__(self, lo_fail: int, max_gpus: int, width: int = 1) -> None:
        if width < 1:
            raise ValueError("width must be >= 1")
        if max_gpus <= lo_fail:
            raise ValueError(f"max_gpus {max_gpus} must exceed lo_fail {lo_fail}")
        self.lo, self.max_gpus, self.width = lo_fail, max_gpus, width
        self.hi: int | None = None  # the fewest GPUs seen to pass
        self.reach = 1
        self.exhausted = False
        self.evaluated: dict[int, bool] = {}

    @property
    def done(self) -> bool:
        return self.exhausted or (self.hi is not None and self.hi - self.lo <= 1)

    @property
    def result(self) -> int | None:
        return self.hi if self.done else None

    def proposals(self) -> list[int]:
        if self.done:
            return []
        if self.hi is None:
            pts = [min(self.lo + self.reach * 2 ** i, self.max_gpus) for i in range(self.width)]
        else:
            span = self.hi - self.lo
            pts = [self.lo + max(1, round(span * (i + 1) / (self.width + 1))) for i in range(self.width)]
            pts = [p for p in pts if self.lo < p < self.hi]
        return sorted(set(pts))

    def update(self, verdicts: dict[int, bool]) -> None:
        self.evaluated.update(verdicts)
        passing = [g for g, ok in verdicts.items() if ok]
        if passing:
            self.hi = min([self.hi, *passing] if self.hi is not None else passing)
        below = [g for g, ok in verdicts.items() if not ok and (self.hi is None or g < self.hi)]
        if below:
            self.lo = max(self.lo, *below)
        if self.hi is None:
            if self.lo >= self.max_gpus:
                self.exhausted = True
            self.reach *= 2 ** self.width


def lowest_stable_fleet(theoretical_gpus: float) -> int:
    """The smallest fleet whose capacity strictly exceeds the load: at utilization
    1.0 or above a queue grows without bound, however a short run looks."""
    return math.floor(theoretical_gpus + 1e-9) + 1
