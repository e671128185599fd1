"""The dashboards-and-alerts follow-up, answered on the review's own runs.

The ablation already runs the good design and the design under review on
every scenario; `RunTap` keeps those runs' series as they finish (nothing is
run twice), and `alerts_answer` evaluates the generated rules
(`harness.ops.rules.build_rules`, the same windows and `for:` as the rule
file) on each, as `harness alerts` does on full-length runs.

A day is bad for a design when it has a disturbance (spike, fault, burst:
detection is timed from its onset) or when the design's goodput over the run
burns the error budget at least as fast as the slower page is set to catch
(6x: under 94% at a 99% objective; timed from the run's start); else it is
calm and should fire nothing (a day a little under the objective burns
slower than any page is meant to wake someone for). The dashboard's first row is then chosen by measurement:
the goodput SLI first, because it is the SLO (it pages on what users feel);
then the two leading signals that, picked greedily, catch the most bad days
the leading signals picked before them missed (ties: more bad days caught,
then the shorter median delay), never one that fired on a calm day.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from harness.analysis.alerts import scenario_alerts
from harness.analysis.shorten import shorten
from harness.analysis.variants import OnDone, VariantJob, knobs_of
from harness.engine.jobs import Job, Jobs
from harness.ops.prom import rule_groups
from harness.ops.rules import AlertRule, Signal, build_rules, shape_of
from harness.results.followups import AlertsAnswer, ChosenMetric, DayDetection, RuleThreshold
from harness.results.run import RunResult
from targets.config import TargetConfig
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["DETECT_WITHIN_S", "BaselineRun", "RunTap", "alerts_answer", "baseline_runs", "choose_metrics"]

DETECT_WITHIN_S = 120.0   # a bad day must be caught within 2 minutes of its onset
LEADING = 2               # leading signals beside the goodput SLI on the first row


@dataclass(frozen=True)
class BaselineRun:
    """What evaluating the rules needs of one run: the design, the workload as run, its series."""

    design: str
    knobs: dict[str, Any]
    scenario: str
    workload: WorkloadConfig
    timeseries: dict[str, Any]
    goodput: float | None


def _keep(job: VariantJob, result: RunResult) -> BaselineRun:
    return BaselineRun(job.target, job.knobs, job.workload, shorten(load_workload(job.workload), job.shortening),
                       result.timeseries, result.summary.goodput_ratio)


class RunTap:
    """An ablation's `on_done` that keeps the runs of `designs` (labels) under `seed`, then passes every run on."""

    def __init__(self, designs: set[str], seed: int, on_done: OnDone | None = None) -> None:
        self.designs = designs
        self.seed = seed
        self.on_done = on_done
        self.runs: dict[tuple[str, str], BaselineRun] = {}

    def __call__(self, index: int, job: Job[RunResult], result: RunResult) -> None:
        if isinstance(job, VariantJob) and job.target in self.designs and job.seed == self.seed:
            self.runs.setdefault((job.target, job.workload), _keep(job, result))
        if self.on_done is not None:
            self.on_done(index, job, result)


def baseline_runs(specs: list[str], plan: dict[str, dict[str, Any]], seed: int, jobs: Jobs = Jobs(),
                  on_done: OnDone | None = None) -> list[BaselineRun]:
    """Run each design (spec) on every scenario of `plan` (shortened as it says): for a review
    that reuses a saved rank and so made no runs of its own."""
    runs: list[VariantJob] = []
    for spec in specs:
        label, knobs = knobs_of(spec)
        runs += [VariantJob(label, knobs, w, seed, p["shortening"]) for w, p in plan.items()]
    return [_keep(j, r) for j, r in zip(runs, jobs.run(runs, on_done))]


def _thresholds(rules: list[AlertRule], config: TargetConfig) -> dict[Signal, list[RuleThreshold]]:
    written = {w["alert"]: w["expr"] for w in rule_groups(config, rules)["groups"][0]["rules"]}
    out: dict[Signal, list[RuleThreshold]] = {}
    for r in rules:
        for sig in dict.fromkeys(c.signal for c in r.conditions):
            out.setdefault(sig, []).append(RuleThreshold(
                rule=r.name, severity=r.severity, for_s=r.for_s, expr=written[r.name],
                conditions=[(c.window_s, c.threshold) for c in r.conditions if c.signal is sig]))
    return out


def _day(run: BaselineRun, rules: list[AlertRule], config: TargetConfig, objective: float,
         delays: dict[tuple[str, str], dict[str, float]]) -> DayDetection:
    """One run judged, and (into `delays`, on a bad day) each rule's delay from the onset."""
    seen = scenario_alerts(run.scenario, run.workload, run.timeseries, rules, shape_of(config))
    page = min(c.threshold for r in rules for c in r.conditions if c.signal is Signal.ERROR_RATIO)
    bad = seen.onset_s is not None or (run.goodput is not None and 1.0 - run.goodput > page)
    t0 = seen.onset_s or 0.0
    if bad:
        delays[(run.design, run.scenario)] = {
            f.rule: min(a for a, _ in f.intervals if a >= t0) - t0
            for f in seen.fired if any(a >= t0 for a, _ in f.intervals)}
    return DayDetection(
        design=run.design, scenario=run.scenario, run_s=run.workload.duration_s, bad=bad, onset_s=seen.onset_s,
        goodput=run.goodput, first_rule=seen.first_rule if bad else None,
        delay_s=seen.first_s - t0 if bad and seen.first_s is not None else None,
        fired=[f.rule for f in seen.fired])


def choose_metrics(rules: list[AlertRule], thresholds: dict[Signal, list[RuleThreshold]],
                   delays: dict[tuple[str, str], dict[str, float]], noisy: set[Signal]) -> list[ChosenMetric]:
    """The goodput SLI, then `LEADING` leading signals picked greedily by the bad days they add
    (see the module doc); `delays` is {(design, scenario): {rule: delay}} over the bad days."""
    by_signal: dict[Signal, set[str]] = {}
    for r in rules:
        for c in r.conditions:
            by_signal.setdefault(c.signal, set()).add(r.name)

    def caught(sig: Signal) -> dict[str, float]:
        return {f"{d}/{w}": min(v for k, v in ds.items() if k in by_signal[sig])
                for (d, w), ds in delays.items() if by_signal[sig] & ds.keys()}

    def first_on(sig: Signal) -> list[str]:
        return [f"{d}/{w}" for (d, w), ds in delays.items()
                if ds and min(ds, key=lambda k: (ds[k], k)) in by_signal[sig]]

    def metric(sig: Signal, why: str) -> ChosenMetric:
        hit = caught(sig)
        return ChosenMetric(signal=sig.value, why=why, rules=thresholds[sig], detected=sorted(hit),
                            first_on=first_on(sig),
                            median_delay_s=statistics.median(hit.values()) if hit else None)

    chosen = [metric(Signal.ERROR_RATIO, "the SLO")]
    covered: set[str] = set()
    pool = [s for s in by_signal if s is not Signal.ERROR_RATIO and s not in noisy]
    for _ in range(min(LEADING, len(pool))):
        def key(sig: Signal) -> tuple:
            hit = caught(sig)
            return (-len(hit.keys() - covered), -len(hit), statistics.median(hit.values()) if hit else float("inf"),
                    list(Signal).index(sig))
        best = min(pool, key=key)
        pool.remove(best)
        covered |= caught(best).keys()
        chosen.append(metric(best, "leading signal"))
    return chosen


def alerts_answer(runs: list[BaselineRun], ship: str, source: str, hour_s: float = 60.0,
                  objective: float = 0.99) -> AlertsAnswer:
    """The rules of each design evaluated on its runs, the bad days' detection, and the first row
    with the thresholds of `ship`'s rules (the design one would run; every design has the same rules)."""
    days: list[DayDetection] = []
    delays: dict[tuple[str, str], dict[str, float]] = {}
    noisy: set[Signal] = set()
    thresholds: dict[Signal, list[RuleThreshold]] = {}
    rules: list[AlertRule] = []
    for run in runs:
        config = TargetConfig.model_validate({**run.knobs, "name": run.design})
        rules = build_rules(config, hour_s, objective)
        if run.design == ship and not thresholds:
            thresholds = _thresholds(rules, config)
        day = _day(run, rules, config, objective, delays)
        days.append(day)
        if not day.bad:
            noisy |= {c.signal for r in rules if r.name in day.fired for c in r.conditions}
    missed = [f"{d.design}/{d.scenario}" for d in days
              if d.bad and (d.delay_s is None or d.delay_s > DETECT_WITHIN_S)]
    alarms = [f"{d.design}/{d.scenario}" for d in days if not d.bad and d.fired]
    metrics = choose_metrics(rules, thresholds, delays, noisy) if thresholds else []
    on_row = {r.rule for m in metrics for r in m.rules}
    off_row = [f"{d}/{w}: " + ", ".join(sorted(ds, key=lambda k: (ds[k], k))) for (d, w), ds in delays.items()
               if ds and not on_row & ds.keys()]
    return AlertsAnswer(hour_s=hour_s, objective=objective, within_s=DETECT_WITHIN_S, source=source,
                        metrics=metrics, days=days, missed=missed, false_alarms=alarms, off_row=off_row)
