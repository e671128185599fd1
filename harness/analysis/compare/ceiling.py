"""The ceiling: the goodput the best possible design could reach on a workload and fleet.

A goodput of 77.7% on a spike says little until it is set beside what any design could
have served: when the spike asks for more than the fleet's GPUs can compute, no
balancer, queue or admission policy answers the excess within the SLO. The ceiling is
capacity-bound; it knows the workload and the side's own target config, nothing of the
design's policies.

The formula, per window `w` of the run's time series (`window_s`, offered counts `O_w`),
split at fault boundaries into pieces `p` of length `dt_p` with `alive_p` GPUs up and
batch times multiplied by `f_p` (gpu-down faults remove max(1, round(fraction x gpus))
GPUs, as the simulator does; slowdowns multiply by their factor):

    lengths L    the workload's input lengths, as `QUANTILES` equal-probability quantiles
    feasible_p   share of L whose full batch fits the SLO: cost(B, L) x f_p <= slo_s
    g_p          mean GPU-seconds per feasible request at full batches:
                 E[cost(B, L) / B | feasible] x f_p   (perfect length bucketing)
    capacity_p   alive_p x dt_p / g_p                  requests the fleet can finish
    ceiling_p    min(O_w x dt_p / window_s x feasible_p, capacity_p)
    ceiling      sum of ceiling_p over every piece of every window

    ceiling_ratio = ceiling / unique requests;  share = goodput_ratio / ceiling_ratio

`cost` is the target's cost model (`targets.executors.cost_function`: the doc's
constant 100 ms per batch by default) and B its `batch_size`. Where offered load is under
capacity the ceiling is the offered load itself (ratio 1). It is an estimate to the
window: it ignores carrying a window's excess into the next (the SLO is shorter than a
window), Poisson bunching inside a window, and caches (which could answer repeats
without a GPU; the suite's cache scenarios run under capacity, where it makes no
difference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from harness.results.compare import Ceiling
from harness.results.run import RunResult
from targets.config import TargetConfig
from targets.executors import cost_function
from workloads.model import FaultKind, Sizes, WorkloadConfig

__all__ = ["QUANTILES", "capacity_rps", "ceiling_of_run", "ceiling_requests", "length_quantiles"]

QUANTILES = 200


def length_quantiles(sizes: Sizes, n: int = QUANTILES) -> np.ndarray:
    """Input lengths (tokens) at n equal-probability quantiles of the workload's size
    distribution, rounded and clipped to [1, max_length] as the arrivals are."""
    if sizes.kind == "fixed":
        raw = np.full(1, float(sizes.length))
    else:
        q = (np.arange(n) + 0.5) / n
        if sizes.kind == "lognormal":
            z = np.array([NormalDist().inv_cdf(x) for x in q])
            raw = sizes.length * np.exp(sizes.sigma * z)
        else:  # pareto with minimum `length`
            raw = sizes.length * (1.0 - q) ** (-1.0 / sizes.alpha)
    return np.clip(np.rint(raw), 1, sizes.max_length)


@dataclass(frozen=True)
class _Piece:
    dt_s: float
    alive: int
    factor: float


def _per_request_s(cfg: TargetConfig, lengths: np.ndarray) -> np.ndarray:
    cost = cost_function(cfg)
    return np.array([cost(cfg.batch_size, int(n)) for n in lengths]) / cfg.batch_size


def capacity_rps(cfg: TargetConfig, workload: WorkloadConfig) -> float:
    """Requests/s the whole fleet serves at full batches, every GPU up, no slowdown."""
    per = _per_request_s(cfg, length_quantiles(workload.sizes))
    return cfg.fleet_gpus / float(per.mean()) if per.mean() > 0 else math.inf


def _pieces(workload: WorkloadConfig, gpus: int, start: float, end: float) -> list[_Piece]:
    cuts = {start, end}
    for f in workload.faults:
        cuts |= {t for t in (f.at_s, f.at_s + f.duration_s) if start < t < end}
    edges = sorted(cuts)
    out = []
    for lo, hi in zip(edges, edges[1:]):
        mid = (lo + hi) / 2
        active = [f for f in workload.faults if f.at_s <= mid < f.at_s + f.duration_s]
        down = sum(max(1, round(gpus * f.fraction)) for f in active if f.kind is FaultKind.GPU_DOWN)
        factor = math.prod(f.factor for f in active if f.kind is FaultKind.SLOWDOWN)
        out.append(_Piece(hi - lo, max(0, gpus - down), factor))
    return out


def ceiling_requests(workload: WorkloadConfig, cfg: TargetConfig, offered: list[float],
                     window_s: float) -> float:
    """Requests the best design could answer within the SLO (the module's formula);
    `offered[j]` is the count of unique requests scheduled in window j, [j w, (j+1) w)."""
    per = _per_request_s(cfg, length_quantiles(workload.sizes))
    batch_s = per * cfg.batch_size
    total = 0.0
    for j, count in enumerate(offered):
        start = j * window_s
        end = min(start + window_s, max(workload.duration_s, start))
        if count <= 0:
            continue
        if end <= start:  # requests past the traffic's end: judge them at the last instant
            end = start + window_s
        for p in _pieces(workload, cfg.fleet_gpus, start, end):
            ok = batch_s * p.factor <= cfg.slo_s + 1e-12
            feasible = float(ok.mean())
            arriving = count * p.dt_s / (end - start) * feasible
            if feasible == 0.0:
                continue
            g = float(per[ok].mean()) * p.factor
            capacity = p.alive * p.dt_s / g if g > 0 else math.inf
            total += min(arriving, capacity)
    return total


def ceiling_of_run(run: RunResult) -> Ceiling:
    """The side's ceiling from its own saved configs and offered time series."""
    workload = WorkloadConfig.model_validate(run.workload_config)
    cfg = TargetConfig.model_validate(run.target_config)
    series = run.timeseries
    window = float(series.get("window_s") or workload.window_s)
    offered = [r * window for r in series.get("offered_rps", [])]
    unique = run.summary.requests.unique
    ratio = ceiling_requests(workload, cfg, offered, window) / unique if unique else 1.0
    ratio = min(1.0, ratio)
    goodput = run.summary.goodput_ratio
    share = goodput / ratio if goodput is not None and ratio > 0 else None
    return Ceiling(capacity_rps=capacity_rps(cfg, workload), ceiling_ratio=ratio, share=share)
