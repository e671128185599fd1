"""Part 2: capacity planning, the doc's formula beside what simulation says is achievable.

``plan_capacity`` returns a typed ``harness.results.capacity.CapacityResult``:

- the arithmetic: ``theoretical_gpus = qps * t(B) / B`` (unrounded; 31.25 at 10,000
  QPS, 100 ms, B = 32), ``formula_gpus = ceil(theoretical)`` (32: a fraction of a
  GPU cannot be bought, and rounding down would run above 100%), and
  ``table_by_b`` over B = 1, 2, 4, ... 128 (and the chosen B);
- realtime: the smallest fleet whose p99 (requests never answered count as
  infinitely slow) meets the SLO at peak, found by a fleet search of seeded sim
  runs of the hardened target (``realtime_gpus``); the smallest meeting it at
  ``headroom_factor`` x peak (``headroom_gpus``), plus one GPU for a failure
  (``realtime_with_headroom_gpus``, N+1);
- ``losses``: each source of lost throughput measured by targeted runs
  (``harness.analysis.capacity.losses``);
- offline: a backlog processed in full batches on the formula's fleet, its
  throughput over the formula's (``offline_efficiency``);
- ``curve`` (p99 and utilization against fleet size at peak) and
  ``fill_vs_load`` (batch fill and p99 against load on the realtime fleet).

Fleets whose capacity does not exceed the load (utilization >= 1 with full
batches) are failures by arithmetic and are never searched: a short run can look
fine while its queue grows without bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

from harness.analysis.capacity.losses import LOW_LOAD, MID_LOAD, loss_points, measure_losses
from harness.analysis.capacity.sim import FleetSearch, Point, backlog, lowest_stable_fleet
from harness.analysis.traffic import QUICK_PROBE, ProbeLength, traffic
from harness.engine.jobs import Jobs
from harness.results.capacity import CapacityResult
from harness.results.io import SCHEMA, versions
from harness.results.sweep import CapacityAgreement
from targets.config import TargetConfig
from targets.spec import resolve_target
from workloads.model import ArrivalProcess

__all__ = ["CapacityInputs", "Budget", "QUICK", "FULL", "B_TABLE", "batch_time_fn", "capacity_agreement",
           "theoretical_gpus", "formula_gpus", "table_by_b", "plan_capacity"]

B_TABLE: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
AFFINE_FIXED_SHARE = 0.2  # affine t(b) = t0 + k b with t0 = 20% of t(B): the config's 20 ms of 100 ms
COST_MODELS = ("constant", "affine", "table")
Progress = Callable[[int, int, str], None]  # (runs done, runs scheduled so far, last key)


@dataclass(frozen=True)
class CapacityInputs:
    """What the plan is for. ``batch_time_s`` is t(B); with a cost table it is read from it."""

    qps: float = 10_000.0
    batch_size: int = 32
    batch_time_s: float = 0.1
    slo_p99_s: float = 0.3
    cost_model: str = "constant"
    cost_table: str | None = None

    def __post_init__(self) -> None:
        if not (self.qps > 0 and math.isfinite(self.qps)):
            raise ValueError(f"qps must be finite and > 0, got {self.qps}")
        if not isinstance(self.batch_size, int) or not 1 <= self.batch_size <= 4096:
            raise ValueError(f"batch_size must be an int in 1..4096, got {self.batch_size}")
        if not (self.batch_time_s > 0 and math.isfinite(self.batch_time_s)):
            raise ValueError(f"batch_time_s must be finite and > 0, got {self.batch_time_s}")
        if not (self.slo_p99_s > 0 and math.isfinite(self.slo_p99_s)):
            raise ValueError(f"slo_p99_s must be finite and > 0, got {self.slo_p99_s}")
        if self.cost_model not in COST_MODELS:
            raise ValueError(f"unknown cost model {self.cost_model!r}; valid: {', '.join(COST_MODELS)}")
        if self.cost_model == "table" and not self.cost_table:
            raise ValueError("cost model 'table' needs a cost table file (from `harness profile`)")


@dataclass(frozen=True)
class Budget(ProbeLength):
    """How much simulation a plan spends. A point at ``rate`` runs
    clamp(requests / rate, min_s, max_s) virtual seconds (``ProbeLength``)."""

    curve_utilizations: tuple[float, ...]  # extra fleets at peak: ceil(theoretical / u)
    loads: tuple[float, ...]               # fill vs load, fractions of peak (1.0 is added)
    offline_rounds: int                    # backlog = formula fleet x B x rounds
    extras: bool                           # contrast runs (bursty arrivals, hardened twins)
    slow_min_s: float = 4.0                # the retry-storm run: at least this long (s)
    search_width: int | None = None        # fleets per search round; None: one per worker


# Quick: `harness review` calls it and must get an answer within 30 s on 2 busy cores.
# One fleet per search round: the lowest stable fleet usually passes, so a second
# speculative point per round costs more than the rare extra round.
QUICK = Budget(QUICK_PROBE.requests, QUICK_PROBE.min_s, QUICK_PROBE.max_s, (0.8,), (LOW_LOAD, MID_LOAD), 10,
               False, search_width=1)
FULL = Budget(60_000, 6.0, 20.0, (0.6, 0.8, 0.9),
              (LOW_LOAD, 0.02, 0.05, MID_LOAD, 0.25, 0.5, 0.75), 50, True)


def batch_time_fn(inp: CapacityInputs) -> tuple[Callable[[int], float], dict[str, Any]]:
    """t(b) in seconds under the chosen cost model, and the target knobs that build it.

    constant: t(b) = batch_time_s (the doc). affine: t0 + k b with t0 =
    AFFINE_FIXED_SHARE x t(B) and t(B) = batch_time_s. table: the profiled table at
    the reference input length.
    """
    t, b_max = inp.batch_time_s, inp.batch_size
    if inp.cost_model == "constant":
        return (lambda b: t), {"cost_model": "constant", "batch_time_s": t}
    if inp.cost_model == "affine":
        t0, k = AFFINE_FIXED_SHARE * t, (1 - AFFINE_FIXED_SHARE) * t / b_max
        return (lambda b: t0 + k * b), {"cost_model": "affine", "batch_time_s": t,
                                        "cost_t0_s": t0, "cost_per_item_s": k}
    from harness.live.profile import CostTable  # imports torch: only for table plans

    table = CostTable.from_json(str(inp.cost_table))
    ref = TargetConfig().reference_length
    fn = (lambda b: table.seconds(b, ref if table.lengths else None))
    return fn, {"cost_model": "table", "cost_table": str(inp.cost_table), "batch_time_s": fn(b_max)}


def theoretical_gpus(qps: float, batch_size: int, batch_time_s: float) -> float:
    """GPUs if every batch is full and no GPU ever idles: qps * t / B (unrounded)."""
    return qps * batch_time_s / batch_size


def formula_gpus(theoretical: float) -> int:
    """The formula rounded up (a tolerance keeps 32.0000001 from becoming 33)."""
    return math.ceil(theoretical - 1e-9)


def table_by_b(qps: float, t_of_b: Callable[[int], float], sizes: tuple[int, ...] = B_TABLE) -> list[dict[str, Any]]:
    """The formula over batch sizes: rows {b, batch_time_s, theoretical_gpus, formula_gpus,
    per_gpu_rps} (per_gpu_rps = b / t(b), a full-batch GPU's throughput)."""
    rows = []
    for b in sorted(set(sizes)):
        t = t_of_b(b)
        th = theoretical_gpus(qps, b, t)
        rows.append({"b": b, "batch_time_s": t, "theoretical_gpus": th, "formula_gpus": formula_gpus(th),
                     "per_gpu_rps": b / t})
    return rows


class _Planner:
    """Runs points in rounds, caching results by key, so searches and fixed runs share
    worker processes and no fleet is simulated twice."""

    def __init__(self, inp: CapacityInputs, knobs: dict[str, Any], budget: Budget, seed: int,
                 jobs: Jobs, progress: Progress | None) -> None:
        self.inp, self.knobs, self.budget, self.seed = inp, knobs, budget, seed
        self.jobs, self.progress = jobs, progress
        self.results: dict[str, dict[str, Any]] = {}
        self.scheduled = 0

    def point(self, key: str, gpus: int, rate_rps: float, target: str = "hardened",
              extra: dict[str, Any] | None = None, duration_s: float | None = None,
              **traffic_kw: Any) -> Point:
        knobs = {**self.knobs, "gpus": gpus, **(extra or {})}
        wl = traffic(rate_rps, duration_s or self.budget.duration_s(rate_rps), **traffic_kw)
        return Point(key, target, tuple(sorted(knobs.items())), wl, self.seed)

    def peak(self, gpus: int, factor: float = 1.0) -> Point:
        return self.point(f"x{factor:g}:{gpus}", gpus, self.inp.qps * factor)

    def run(self, points: list[Point]) -> None:
        todo = {p.key: p for p in points if p.key not in self.results}
        if not todo:
            return
        order = sorted(todo.values(), key=lambda p: -p.expected_requests)
        self.scheduled += len(order)

        def done(i: int, _job: object, res: dict[str, Any]) -> None:
            self.results[res["key"]] = res
            if self.progress is not None:
                self.progress(len(self.results), self.scheduled, res["key"])

        self.jobs.run(order, on_done=done)  # longest first, as ordered here

    def verdict(self, key: str) -> bool:
        p99 = self.results[key]["p99_s"]
        return p99 is not None and p99 <= self.inp.slo_p99_s


def plan_capacity(qps: float = 10_000, batch_size: int = 32, batch_time_s: float = 0.1,
                  slo_p99_s: float = 0.3, cost_model: str = "constant", seed: int = 1,
                  quick: bool = False, jobs: Jobs = Jobs(), cost_table: str | None = None,
                  headroom_factor: float = 1.25, progress: Progress | None = None,
                  budget: Budget | None = None) -> CapacityResult:
    """The capacity result (see the module docstring). ``quick`` spends about a quarter
    of the simulation (shorter points, fewer curve and load points, no contrast runs);
    ``budget`` replaces both presets (tests use tiny ones). ``jobs``: where the points
    run; its width (workers, default one per core up to 8) is also the fleets a search
    round proposes unless the budget fixes it. Raises ValueError on bad inputs."""
    started = time.perf_counter()
    inp = CapacityInputs(float(qps), int(batch_size), float(batch_time_s), float(slo_p99_s),
                         cost_model, cost_table)
    if not headroom_factor >= 1:
        raise ValueError(f"headroom_factor must be >= 1, got {headroom_factor}")
    t_of_b, knobs = batch_time_fn(inp)
    t_b = t_of_b(inp.batch_size)
    knobs.update(batch_size=inp.batch_size, slo_s=inp.slo_p99_s, peak_qps=inp.qps)
    theo = theoretical_gpus(inp.qps, inp.batch_size, t_b)
    g_formula = formula_gpus(theo)
    budget = budget or (QUICK if quick else FULL)
    width = budget.search_width or jobs.width
    # Points run in rounds of about `jobs.width`: the executor sized to it (a local Ray instance too).
    pl = _Planner(inp, knobs, budget, seed, replace(jobs, workers=jobs.width), progress)
    max_gpus = max(lowest_stable_fleet(theo * headroom_factor) + 1, math.ceil(4 * theo * headroom_factor) + 8)
    feasible = t_of_b(1) < inp.slo_p99_s  # no fleet helps when one batch outlasts the SLO
    peak = FleetSearch(lowest_stable_fleet(theo) - 1, max_gpus, width)
    head = FleetSearch(lowest_stable_fleet(theo * headroom_factor) - 1, max_gpus, width)
    searches = [(peak, 1.0), (head, headroom_factor)] if feasible else []
    g_stable = lowest_stable_fleet(theo)
    # Round one: both searches' first proposals and everything that does not need the answer.
    fixed = [pl.peak(g_stable - 1)] if g_stable > 1 else []  # the knee: at or over 100% busy
    fixed += [pl.peak(max(1, math.ceil(theo / u))) for u in budget.curve_utilizations]
    fixed += [pl.point("uniform", g_stable, inp.qps, process=ArrivalProcess.UNIFORM),
              pl.point("bursty", g_stable, inp.qps, process=ArrivalProcess.GAMMA, burstiness=4.0)]
    fixed.append(_offline_point(inp, knobs, g_formula, t_b, budget, seed))
    later_added = False
    for _ in range(64):
        batch, fixed = fixed, []
        for s, factor in searches:
            batch += [pl.peak(g, factor) for g in s.proposals()]
        if feasible and peak.result is not None and not later_added:
            batch += loss_points(pl, peak.result, budget.loads)
            later_added = True
        pl.run(batch)  # cached keys are skipped: a search may re-ask a curve point
        for s, factor in searches:
            s.update({g: pl.verdict(f"x{factor:g}:{g}") for g in s.proposals()})
        if all(s.done for s, _ in searches) and (later_added or peak.result is None):
            break
    else:
        raise RuntimeError("capacity search did not converge in 64 rounds")
    g_rt = peak.result
    g_head = None if head.result is None or g_rt is None else max(head.result, g_rt)
    offline = _offline(pl.results["offline"], inp, t_b)
    doc: dict[str, Any] = {
        "schema": SCHEMA, "kind": "capacity",
        "inputs": {**asdict(inp), "batch_time_s": t_b, "seed": seed, "quick": quick,
                   "headroom_factor": headroom_factor},
        "theoretical_gpus": theo, "formula_gpus": g_formula,
        "rounding": "formula_gpus = ceil(theoretical_gpus): a fraction of a GPU cannot be "
                    "bought, and rounding down would run the fleet above 100%",
        "realtime_gpus": g_rt, "headroom_gpus": g_head,
        "realtime_with_headroom_gpus": None if g_head is None else g_head + 1,
        "offline_efficiency": offline["efficiency"], "offline": offline,
        "table_by_b": table_by_b(inp.qps, t_of_b, B_TABLE + (inp.batch_size,)),
        "max_wait_s": _max_wait(inp, t_b),
        "batching": resolve_target("hardened").batching.value,
    }
    doc["breakdown"] = _breakdown(doc, inp, headroom_factor)
    doc["curve"] = _curve(pl, theo)
    doc["fill_vs_load"] = _fill_vs_load(pl, g_rt, budget.loads) if g_rt else []
    doc["losses"] = measure_losses(pl.results, doc, budget.extras) if g_rt else []
    doc["notes"] = _notes(inp, feasible, g_rt)
    doc["runs"] = len(pl.results)
    doc["point_duration_s"] = budget.duration_s(inp.qps)
    doc["wall_s"] = time.perf_counter() - started
    doc["versions"] = versions()
    return CapacityResult.from_json(doc)


def _max_wait(inp: CapacityInputs, t_b: float) -> float:
    return TargetConfig(slo_s=inp.slo_p99_s, batch_time_s=t_b).effective_max_wait_s


def _offline_point(inp: CapacityInputs, knobs: dict[str, Any], gpus: int, t_b: float, budget: Budget,
                   seed: int) -> Point:
    """A backlog of gpus x B x rounds requests at t=0 in full batches, no deadlines.

    Dynamic batching with a max wait of t(B) only matters for the tail: with the whole
    backlog queued, every batch but a last partial one is full (full-batch-only
    dispatch would strand that tail forever)."""
    n = gpus * inp.batch_size * budget.offline_rounds
    offline_knobs = {**knobs, "gpus": gpus, "batching": "dynamic", "max_wait_s": t_b,
                     "admission": False, "tenant_limits": False, "cache": "off",
                     "client_timeout_s": 10 * (budget.offline_rounds + 1) * t_b + 10,
                     "client_retries": 0, "propagate_deadline": False}
    return Point("offline", "hardened", tuple(sorted(offline_knobs.items())), backlog(n), seed,
                 probe_s=0, backlog=n)


def _offline(res: dict[str, Any], inp: CapacityInputs, t_b: float) -> dict[str, Any]:
    """Offline throughput (answered / makespan) over the formula's gpus x B / t(B)."""
    gpus = res["gpus"]
    formula_rps = gpus * inp.batch_size / t_b
    rps = res["succeeded"] / res["end_s"] if res["end_s"] else 0.0
    return {"requests": res["unique"], "answered": res["succeeded"], "gpus": gpus,
            "makespan_s": res["end_s"], "throughput_rps": rps, "formula_rps": formula_rps,
            "efficiency": rps / formula_rps,
            "batch_fill": res["batch_fill"], "utilization": res["utilization"]}


def _breakdown(doc: dict[str, Any], inp: CapacityInputs, factor: float) -> list[dict[str, Any]]:
    """From the formula to the fleet to buy, one step at a time (GPUs)."""
    steps = [("theoretical", doc["theoretical_gpus"], "qps x t(B) / B: every batch full, no GPU ever idle"),
             ("formula", doc["formula_gpus"], "rounded up: whole GPUs"),
             ("realtime at peak", doc["realtime_gpus"],
              f"smallest fleet with p99 <= {inp.slo_p99_s:g} s at {inp.qps:,.0f} QPS (simulated)"),
             (f"headroom {factor:g}x peak", doc["headroom_gpus"],
              f"smallest fleet meeting the SLO at {factor * inp.qps:,.0f} QPS: bursts, growth"),
             ("N+1", doc["realtime_with_headroom_gpus"], "one GPU may fail at peak")]
    out, prev = [], None
    for step, gpus, why in steps:
        out.append({"step": step, "gpus": gpus, "why": why,
                    "delta": None if gpus is None or prev is None else gpus - prev})
        prev = gpus
    return out


def _curve(pl: _Planner, theo: float) -> list[dict[str, Any]]:
    rows = [r for k, r in pl.results.items() if k.startswith("x1:")]
    return [{"gpus": r["gpus"], "offered_utilization": theo / r["gpus"], "utilization": r["utilization"],
             "p50_s": r["p50_s"], "p99_s": r["p99_s"], "batch_fill": r["batch_fill"],
             "goodput_ratio": r["goodput_ratio"], "meets_slo": pl.verdict(f"x1:{r['gpus']}"),
             "stable": r["gpus"] > theo + 1e-9, "idle_forming_frac": r["idle_forming_frac"]}
            for r in sorted(rows, key=lambda r: r["gpus"])]


def _fill_vs_load(pl: _Planner, g_rt: int, loads: tuple[float, ...]) -> list[dict[str, Any]]:
    out = []
    for f in sorted(set(loads) | {1.0}):
        r = pl.results[f"x1:{g_rt}" if f == 1.0 else f"load{f:g}"]
        out.append({"load_fraction": f, "rate_rps": r["rate_rps"], "batch_fill": r["batch_fill"],
                    "p50_s": r["p50_s"], "p99_s": r["p99_s"], "utilization": r["utilization"],
                    "gpu_s_per_request": r["gpu_s_per_request"]})
    return out


def _notes(inp: CapacityInputs, feasible: bool, g_rt: int | None) -> list[str]:
    batching = resolve_target("hardened").batching.value
    notes = ["fleets at or above 100% utilization with full batches are failures by arithmetic "
             "and are not searched (a short run hides a queue that grows without bound)",
             f"each point is one seeded run of the hardened target (shared queue, {batching} "
             "batching, admission control); p99 counts requests never answered in time as infinite"]
    if not feasible:
        notes.append(f"no fleet can meet p99 <= {inp.slo_p99_s:g} s: one batch alone takes longer")
    elif g_rt is None:
        notes.append("no fleet up to the search bound met the SLO")
    return notes


def capacity_agreement(cfg: TargetConfig, qps: float, seed: int) -> CapacityAgreement:
    """`harness capacity --quick`'s realtime fleet at ``qps`` with ``cfg``'s batch, cost and SLO
    (`harness sweep --check-capacity`: the sweep's ``capacity_check``).

    Agreement: capacity buys within 10% of ``cfg``'s own fleet for the rate the sweep
    found that fleet sustains (per-GPU throughput is near linear in the fleet, so 10% of
    the fleet is 10% of the rate)."""
    cap = plan_capacity(qps, cfg.batch_size, cfg.batch_time_s, cfg.slo_s, "constant", seed=seed, quick=True,
                        jobs=Jobs(workers=1))
    g, got = cfg.fleet_gpus, cap.realtime_gpus
    return CapacityAgreement(qps=qps, target_gpus=g, capacity_gpus=got,
                             agrees=got is not None and abs(got - g) <= 0.1 * g)
