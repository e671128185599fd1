"""Gate checks on canary rollouts: the [[canary]] tables of a gate file, run and decided.

Each (plan, day, target, seeds) a gate file names runs once
(`harness.analysis.canary.run_rollouts`), or is read from a saved canary
result (`--results`). A check reads the cell's own figure (a share of the
seeds, a median, a count), or, with `bound = "lower"`/`"upper"`, a bound of
its exact 95% interval: Clopper-Pearson for a share (few seeds give wide
bounds, and a gate should say so rather than trust 3 of 3), the
order-statistic interval for a median, which does not exist below 6 runs; the
bound is then unbounded, so the check fails rather than read the median as a
bound. A median over no decided run (`median_decision_s`) is never.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from harness.analysis.canary import run_rollouts
from harness.engine.jobs import Jobs
from harness.gate.file import COMPARE, Bound, CanaryGate, Check, GateFile
from harness.results.canary import CanaryCell, CanaryResult
from harness.results.gate import CheckOutcome
from harness.results.stats import CONFIDENCE, Interval
from workloads.canary_plan import load_plan
from workloads.loader import ConfigError

__all__ = ["canary_interval", "judge_canary", "run_canary_gates"]

_SHARES = {"rollback_share": "rollback", "promote_share": "promote"}


def _median_runs(cell: CanaryCell, key: str) -> list[float]:
    """The per-run values a median figure is the median of (as `run_rollouts` takes them)."""
    if key == "median_decision_s":
        return [r.decided_at_s for r in cell.runs if r.decided_at_s is not None]
    return [float(r.canary_requests) for r in cell.runs]


def canary_interval(cell: CanaryCell, key: str) -> Interval:
    """The cell's figure (in `mean`) and its exact 95% interval over the runs (none for a count,
    or for a median of fewer than 6 runs)."""
    from scipy.stats import binomtest, quantile_test  # here, not with the module: `harness gate` starts 1 s sooner

    figure = getattr(cell, key)
    n = len(cell.runs)
    if key in _SHARES:
        k = sum(r.decision == _SHARES[key] for r in cell.runs)
        share_ci = binomtest(k, n).proportion_ci(CONFIDENCE, method="exact")
        return Interval(mean=figure, lo=float(share_ci.low), hi=float(share_ci.high), n=n)
    if key.startswith("median_"):
        xs = _median_runs(cell, key)
        # Any: scipy-stubs 1.17.1.5 types this interval as a float; it is a ConfidenceInterval (low, high).
        ci: Any = quantile_test(xs, p=0.5).confidence_interval(CONFIDENCE) if xs else None
        if ci is None or math.isnan(ci.low) or math.isnan(ci.high):
            return Interval(mean=figure, n=len(xs))
        return Interval(mean=figure, lo=float(ci.low), hi=float(ci.high), n=len(xs))
    return Interval(mean=figure, n=n)


def _read(ci: Interval, check: Check) -> float | None:
    if check.bound is Bound.MEAN:
        return math.inf if ci.mean is None and check.key.endswith("_s") else ci.mean
    if not ci.has_interval:
        return math.inf if check.bound is Bound.UPPER else -math.inf
    return ci.lo if check.bound is Bound.LOWER else ci.hi


def judge_canary(gate: CanaryGate, cell: CanaryCell, target: str) -> list[CheckOutcome]:
    """Each of the gate's checks against the cell, decided."""
    out = []
    for check in gate.checks:
        ci = canary_interval(cell, check.key)
        measured = _read(ci, check)
        assert check.value is not None  # no baseline checks on a canary (file.py refuses them)
        passed = measured is not None and COMPARE[check.op](measured, check.value)
        n = len(cell.runs)
        if check.key in _SHARES:
            notes = [f"{sum(r.decision == _SHARES[check.key] for r in cell.runs)} of {n} seeds"]
            method = "Clopper-Pearson"
        elif check.key.startswith("median_"):
            notes = [f"median of {ci.n} runs"]
            method = "order statistics"
        else:
            notes = [f"summed over {n} seeds"]
            method = ""
        if check.bound is not Bound.MEAN:
            notes.insert(0, f"{check.bound.value} 95% bound" + (f", {method}" if method else ""))
            if not ci.has_interval:
                notes.append(f"no 95% interval from {ci.n} run(s){' (a median needs 6)' if method else ''}: "
                             "unbounded")
        undecided = sum(r.decided_at_s is None for r in cell.runs)
        if check.key == "median_decision_s" and undecided:
            notes.append(f"{undecided} run(s) never decided")
        out.append(CheckOutcome(
            scenario=f"canary {cell.plan}/{cell.day}", target=target, key=check.key, op=check.op, check=check.text,
            threshold=check.value, measured=measured, passed=passed, note="; ".join(notes), skipped=False,
            bound=check.bound.value, interval=ci if ci.has_interval else None))
    return out


def _given_cell(gate: CanaryGate, target: str, results: list[Any]) -> CanaryCell:
    plan = load_plan(gate.plan).name
    for r in results:
        if isinstance(r, CanaryResult) and r.target == target:
            for c in r.cells:
                if (c.plan, c.day) == (plan, gate.day):
                    return c
    have = sorted({f"{c.plan}/{c.day} on {r.target}" for r in results if isinstance(r, CanaryResult)
                   for c in r.cells}) or ["none"]
    raise ConfigError(f"--results: the gate needs canary rollouts of {plan}/{gate.day} on {target}; "
                      f"the given canary results hold: {', '.join(have)}")


def run_canary_gates(gf: GateFile, seeds: int | None, jobs: Jobs = Jobs(), results: list[Any] | None = None,
                     on_done: Callable[[int, int], None] | None = None
                     ) -> tuple[list[CheckOutcome], list[CanaryResult]]:
    """Every [[canary]] gate decided, and the canary results its checks read (one per target and
    seed count). `seeds` (`--seeds`) replaces each gate's and the file's; `results`, when given,
    are saved results whose canary cells are read instead of running sim."""
    if not gf.canary:
        return [], []
    if results:
        return [o for g in gf.canary for o in judge_canary(g, _given_cell(g, g.target, results), g.target)], []
    groups: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for g in gf.canary:
        pairs = groups.setdefault((g.target, seeds or g.seeds or gf.seeds), [])
        if (g.plan, g.day) not in pairs:
            pairs.append((g.plan, g.day))
    ran = {k: run_rollouts(pairs, k[0], k[1], gf.seed, jobs, on_done) for k, pairs in groups.items()}
    checks = []
    for g in gf.canary:
        result = ran[(g.target, seeds or g.seeds or gf.seeds)]
        cell = result.cells[groups[(g.target, result.seeds)].index((g.plan, g.day))]
        checks += judge_canary(g, cell, g.target)
    return checks, list(ran.values())
