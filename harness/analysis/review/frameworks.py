"""`harness review FRAMEWORK`: what a framework's defaults cost on the bad days, and which of its knobs
fixes each flaw it declares, measured live.

For each flaw the framework declares (targets.frameworks.registry), the bad days that
expose it (the catalogue's, less those with a GPU-down fault a framework cannot take)
run live on the framework as given and on it with that flaw's fix knobs, each script
shortened as a live compare shortens it (harness.analysis.compare.live.live_plan); the
given target runs once per scenario and is shared by every flaw that scenario exposes.
Each flaw's pair of sides is judged as a compare is (`add_verdicts`), so its result is
a `CompareResult` (A: the target as given, B: with the fix). A flaw no knob fixes, or
one no runnable scenario exposes, is reported with why it was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.analysis.compare.live import live_plan, workload_of
from harness.analysis.compare.verdicts import add_verdicts
from harness.live.plan import LivePlan, plan_live
from harness.results.compare import CompareResult
from harness.results.run import RunResult
from targets.frameworks.knobs import DeclaredFlaw
from targets.frameworks.spec import framework_target
from workloads.loader import load_workload
from workloads.model import FaultKind

__all__ = ["FlawTrial", "chosen", "plan_trials", "review_framework"]


@dataclass(frozen=True)
class FlawTrial:
    """One declared flaw: its fix (`fixed`: the target with the fix knobs; None: no knob fixes
    it), the bad days it is measured on, and the measured compare (None: `skipped` says why)."""

    flaw: DeclaredFlaw
    fixed: str | None
    scenarios: tuple[str, ...]
    result: CompareResult | None = None
    skipped: str | None = None


def _with(spec: str, knobs: dict[str, object]) -> str:
    text = ",".join(f"{k}={'true' if v is True else 'false' if v is False else v}" for k, v in knobs.items())
    return spec + (("," if ":" in spec else ":") + text if text else "")


def _runnable(name: str) -> bool:
    """A framework takes the slowdown fault, not a GPU going down."""
    return not any(f.kind is FaultKind.GPU_DOWN for f in load_workload(name).faults)


def plan_trials(spec: str) -> list[FlawTrial]:
    """Every flaw `spec` still has, with its fix and the runnable bad days that expose it."""
    target = framework_target(spec)
    if target is None:
        raise ValueError(f"'{spec}' is not a framework target")
    out = []
    for flaw in target.framework.flaws:
        if flaw.id not in target.flaws():
            continue  # its knobs already fix it
        days = tuple(w for w in flaw.scenarios() if _runnable(w))
        if not flaw.fix:
            out.append(FlawTrial(flaw, None, days, skipped="no knob of the framework fixes it"))
        elif not days:
            out.append(FlawTrial(flaw, _with(spec, flaw.fix), days,
                                 skipped="no bad day a framework target can run exposes it (GPU-down faults only)"))
        else:
            out.append(FlawTrial(flaw, _with(spec, flaw.fix), days))
    return out


def chosen(trials: list[FlawTrial], flaws: list[str] | None, spec: str) -> list[FlawTrial]:
    """The trials of `flaws` (all when None), in declared order; ValueError for a flaw `spec` does not have."""
    if flaws is None:
        return trials
    have = [t.flaw.id for t in trials]
    unknown = [f for f in flaws if f not in have]
    if unknown:
        raise ValueError(f"--flaw {unknown[0]}: {spec} has no such flaw at these knobs (it has: {', '.join(have)})")
    return [t for t in trials if t.flaw.id in flaws]


def review_framework(spec: str, seed: int = 1, scale: float | None = None, warmup_s: float | None = None,
                     run_one: Callable[[LivePlan], RunResult] | None = None,
                     duration_s: float | None = None, flaws: list[str] | None = None) -> list[FlawTrial]:
    """Run the trials of `plan_trials(spec)` live; `run_one(plan)` runs one plan (default
    `plan.run()`, e.g. shown with a progress bar). `duration_s` cuts every bad day to its first
    `duration_s` seconds, as a live compare's `--duration` does, in place of the live shortening
    (a quick look: a disturbance past the cut is not seen). `flaws`: only these declared flaws
    (ValueError naming the ones `spec` has for an id it has not). A KeyboardInterrupt stops it with
    the trials measured so far (the rest `skipped`: interrupted)."""
    run_one = run_one or (lambda plan: plan.run())
    trials = chosen(plan_trials(spec), flaws, spec)
    days = sorted({w for t in trials if t.skipped is None for w in t.scenarios})
    shortened = (workload_of({w: p["shortening"] for w, p in live_plan(days).items()})
                 if days and duration_s is None else None)
    base = framework_target(spec).config  # type: ignore[union-attr]
    given: dict[str, RunResult] = {}
    out: list[FlawTrial] = []
    interrupted = False

    def run(target: str, day: str) -> RunResult:
        plan = plan_live(target, day, seed, {}, duration_s, None, scale, scale_from=base, warmup_s=warmup_s,
                         workload_config=shortened(day) if shortened else None)
        res = run_one(plan)
        if res.summary.partial:
            raise KeyboardInterrupt
        return res

    for trial in trials:
        if trial.skipped is not None or interrupted:
            out.append(trial if not interrupted else FlawTrial(trial.flaw, trial.fixed, trial.scenarios,
                                                                skipped=trial.skipped or "interrupted"))
            continue
        fixed = trial.fixed
        assert fixed is not None  # plan_trials skips a flaw no knob fixes
        try:
            pairs: dict[str, dict[str, RunResult]] = {}
            for day in trial.scenarios:
                if day not in given:
                    given[day] = run(spec, day)
                pairs[day] = {spec: given[day], fixed: run(fixed, day)}
        except KeyboardInterrupt:
            interrupted = True
            out.append(FlawTrial(trial.flaw, trial.fixed, trial.scenarios, skipped="interrupted"))
            continue
        result = CompareResult(a=spec, b=fixed, seed=seed, mode="live",
                               scenarios={d: {k: r.summary for k, r in p.items()} for d, p in pairs.items()},
                               runs=pairs, live={"shortened": None, "sim_skipped": f"{spec} is a real framework"})
        out.append(FlawTrial(trial.flaw, fixed, trial.scenarios, add_verdicts(result)))
    return out
