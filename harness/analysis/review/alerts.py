"""The dashboards-and-alerts follow-up, answered on the review's own runs.

The ablation already runs the good design and the design under review on
every scenario; `RunTap` keeps those runs' series as they finish (nothing is
run twice), and `alerts_answer` evaluates the generated rules
(`harness.ops.rules.build_rules`, the same windows and `for:` as the rule
file) on each, as `harness alerts` does on full-length runs.

Which days are bad and which signals make the dashboard's first row is
harness.analysis.alerts.leading's ranking, the one `harness alerts` writes its
dashboard from: a review and the files beside it choose alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.alerts import scenario_alerts
from harness.analysis.alerts.leading import JudgedDay, choose_metrics, judge_day, thresholds
from harness.analysis.shorten import shorten
from harness.analysis.variants import OnDone, VariantJob, knobs_of
from harness.engine.jobs import Job, Jobs
from harness.ops.rules import AlertRule, Signal, build_rules, shape_of
from harness.results.followups import AlertsAnswer, DayDetection, RuleThreshold
from harness.results.run import RunResult
from targets.config import TargetConfig
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["DETECT_WITHIN_S", "BaselineRun", "RunTap", "alerts_answer", "baseline_runs", "choose_metrics"]
# choose_metrics: harness.analysis.alerts.leading's, the one ranking `harness alerts` uses too

DETECT_WITHIN_S = 120.0   # a bad day must be caught within 2 minutes of its onset


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


def _day(run: BaselineRun, rules: list[AlertRule], config: TargetConfig) -> tuple[DayDetection, JudgedDay]:
    """One run judged (harness.analysis.alerts.leading.judge_day), and its detection for the answer."""
    seen = scenario_alerts(run.scenario, run.workload, run.timeseries, rules, shape_of(config))
    judged = judge_day(run.design, seen, run.goodput, rules)
    t0 = seen.onset_s or 0.0
    bad = judged.bad
    return DayDetection(
        design=run.design, scenario=run.scenario, run_s=run.workload.duration_s, bad=bad, onset_s=seen.onset_s,
        goodput=run.goodput, first_rule=seen.first_rule if bad else None,
        delay_s=seen.first_s - t0 if bad and seen.first_s is not None else None,
        fired=[f.rule for f in seen.fired]), judged


def alerts_answer(runs: list[BaselineRun], ship: str, source: str, hour_s: float = 60.0,
                  objective: float = 0.99) -> AlertsAnswer:
    """The rules of each design evaluated on its runs, the bad days' detection, and the first row
    with the thresholds of `ship`'s rules (the design one would run; every design has the same rules)."""
    days: list[DayDetection] = []
    delays: dict[tuple[str, str], dict[str, float]] = {}
    noisy: set[Signal] = set()
    by_signal: dict[Signal, list[RuleThreshold]] = {}
    rules: list[AlertRule] = []
    for run in runs:
        config = TargetConfig.model_validate({**run.knobs, "name": run.design})
        rules = build_rules(config, hour_s, objective)
        if run.design == ship and not by_signal:
            by_signal = thresholds(rules, config)
        day, judged = _day(run, rules, config)
        days.append(day)
        if judged.bad:
            delays[(run.design, run.scenario)] = judged.delays
        else:
            noisy |= {c.signal for r in rules if r.name in day.fired for c in r.conditions}
    missed = [f"{d.design}/{d.scenario}" for d in days
              if d.bad and (d.delay_s is None or d.delay_s > DETECT_WITHIN_S)]
    alarms = [f"{d.design}/{d.scenario}" for d in days if not d.bad and d.fired]
    metrics = choose_metrics(rules, by_signal, delays, noisy) if by_signal else []
    on_row = {r.rule for m in metrics for r in m.rules}
    off_row = [f"{d}/{w}: " + ", ".join(sorted(ds, key=lambda k: (ds[k], k))) for (d, w), ds in delays.items()
               if ds and not on_row & ds.keys()]
    return AlertsAnswer(hour_s=hour_s, objective=objective, within_s=DETECT_WITHIN_S, source=source,
                        metrics=metrics, days=days, missed=missed, false_alarms=alarms, off_row=off_row)
