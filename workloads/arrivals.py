"""Turn a workload config into a concrete, seeded schedule of requests.

Arrivals use time rescaling: events of a unit-rate renewal process (exponential
gaps for Poisson, constant for uniform, gamma for bursty) are mapped through
the inverse of the cumulative rate Lambda(t), which gives a non-homogeneous
process with the phases' rate at every instant. Each tenant is generated
separately (its share, times its bursts) and the streams are merged.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from workloads.model import ArrivalProcess, Sizes, WorkloadConfig

_GRID_POINTS_PER_S = 1000
_MAX_REQUESTS = 20_000_000  # a bound on any one schedule: memory, not policy


@dataclass(frozen=True)
class Schedule:
    """Requests in scheduled-start order, one row per unique request.

    `sched_s` start times (s); `tenant` index into `tenants`; `content` payload
    identity; `variant` its serialisation; `size` input length (tokens).
    """

    config: WorkloadConfig
    tenants: tuple[str, ...]
    connections: tuple[int, ...]
    sched_s: np.ndarray
    tenant: np.ndarray
    content: np.ndarray
    variant: np.ndarray
    size: np.ndarray

    def __len__(self) -> int:
        return len(self.sched_s)


def _unit_events(rng: np.random.Generator, process: ArrivalProcess, burstiness: float, total: float) -> np.ndarray:
    """Event times of a unit-rate renewal process on [0, total)."""
    if total <= 0:
        return np.empty(0)
    if process is ArrivalProcess.UNIFORM:
        return np.arange(rng.random(), total, 1.0)
    chunks, t, n = [], 0.0, int(total * 1.05) + 16
    while t < total:
        if process is ArrivalProcess.POISSON:
            gaps = rng.exponential(1.0, n)
        else:  # gamma with mean 1 and squared coefficient of variation = burstiness
            gaps = rng.gamma(1.0 / burstiness, burstiness, n)
        times = t + np.cumsum(gaps)
        chunks.append(times)
        t = float(times[-1])
        n = max(16, int((total - t) * 1.1) + 16)
        if sum(len(c) for c in chunks) > _MAX_REQUESTS:
            raise ValueError(f"workload would schedule over {_MAX_REQUESTS:,} requests; lower the rate or duration")
    times = np.concatenate(chunks)
    return times[times < total]


def _sizes(rng: np.random.Generator, sizes: Sizes, n: int) -> np.ndarray:
    if sizes.kind == "fixed":
        out = np.full(n, sizes.length, dtype=float)
    elif sizes.kind == "lognormal":
        out = sizes.length * rng.lognormal(0.0, sizes.sigma, n)
    else:  # pareto with minimum `length`
        out = sizes.length * (1.0 + rng.pareto(sizes.alpha, n))
    return np.clip(np.rint(out), 1, sizes.max_length).astype(np.int32)


def build_schedule(config: WorkloadConfig, seed: int) -> Schedule:
    """Every request the workload sends, deterministic for (config, seed)."""
    rng = np.random.default_rng(seed)
    duration = config.duration_s
    grid = np.linspace(0.0, duration, max(2, int(duration * _GRID_POINTS_PER_S) + 1))
    base = config.rate(grid)
    times, owners = [], []
    for idx, spec in enumerate(config.tenants):
        rate = base * spec.share
        for burst in spec.bursts:
            rate = np.where((grid >= burst.start_s) & (grid < burst.end_s), rate * burst.factor, rate)
        cum = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) * 0.5 * np.diff(grid))])
        events = _unit_events(rng, config.process, config.burstiness, float(cum[-1]))
        t = np.interp(events, cum, grid)
        times.append(t)
        owners.append(np.full(len(t), idx, dtype=np.int16))
    sched = np.concatenate(times) if times else np.empty(0)
    tenant = np.concatenate(owners) if owners else np.empty(0, dtype=np.int16)
    order = np.argsort(sched, kind="stable")
    sched, tenant = sched[order], tenant[order]
    n = len(sched)
    payloads = config.payloads
    if payloads.kind == "unique":
        content = np.arange(n, dtype=np.int64)
    else:
        ranks = np.arange(1, payloads.catalog_size + 1, dtype=float)
        weights = ranks ** -payloads.zipf_s
        content = rng.choice(payloads.catalog_size, size=n, p=weights / weights.sum()).astype(np.int64)
    variant = rng.integers(0, payloads.variants, n, dtype=np.int16)
    size = _sizes(rng, config.sizes, n)
    return Schedule(
        config=config,
        tenants=tuple(t.name for t in config.tenants),
        connections=tuple(t.connections for t in config.tenants),
        sched_s=sched,
        tenant=tenant,
        content=content,
        variant=variant,
        size=size,
    )


_KEPT_REQUESTS = 2_000_000  # schedules a process keeps, in requests (~48 MB: 24 bytes a request)
_kept: OrderedDict[tuple[WorkloadConfig, int], Schedule] = OrderedDict()
_kept_lock = threading.Lock()  # threads of one process (the review builds its parts on one)


def _fresh_lock() -> None:
    """A forked child's own lock: one held by another thread at the fork would never be let go."""
    global _kept_lock
    _kept_lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_lock)


def schedule_of(config: WorkloadConfig, seed: int) -> Schedule:
    """`build_schedule(config, seed)`, kept for the process's next runs of the same workload and
    seed (a rank's or review's variants of one scenario, the canary's plans on one day; a config
    is frozen, hashed and compared by its fields): the same requests, built once. A worker is
    handed its runs longest first, so one scenario's variants come mixed with the others': the
    process keeps the schedules it used last up to _KEPT_REQUESTS requests in all (the review's
    11 scenarios and 30 canary days fit; the one just built is kept whatever its size), dropping
    the least recently used. Its arrays are read-only, so no run can change the schedule another
    reads."""
    key = (config, seed)
    with _kept_lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
            return kept
    schedule = build_schedule(config, seed)
    for array in (schedule.sched_s, schedule.tenant, schedule.content, schedule.variant, schedule.size):
        array.flags.writeable = False
    with _kept_lock:
        _kept[key] = schedule
        held = sum(len(s) for s in _kept.values())
        while held > _KEPT_REQUESTS and len(_kept) > 1:
            held -= len(_kept.popitem(last=False)[1])
    return schedule
