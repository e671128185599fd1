"""Prove the alert rules on the bad days: run each scenario in sim and evaluate the rules on it.

For each scenario: when its disturbance begins, which rule fires first and how
long after. A day without a disturbance (steady, diurnal, night) should fire
nothing; the result lists whatever did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.analysis.alerts.eval import Series, evaluate
from harness.engine.jobs import Jobs, SimJob
from harness.ops.prom import rule_groups
from harness.ops.rules import AlertRule, FleetShape, shape_of
from harness.results.alerts import AlertsResult, RuleFigures, RuleFiring, ScenarioAlerts
from targets.config import TargetConfig
from workloads.model import SpikePhase, WorkloadConfig

__all__ = ["ProvenDay", "onset_s", "prove_days", "prove_rules", "rule_figures", "scenario_alerts"]

OnDone = Callable[[str], None]


def onset_s(workload: WorkloadConfig) -> float | None:
    """When the workload's first disturbance begins: a spike, a fault, a tenant's burst."""
    starts, t = [], 0.0
    for p in workload.phases:
        if isinstance(p, SpikePhase):
            starts.append(t + p.at_s)
        t += p.duration_s
    starts += [f.at_s for f in workload.faults]
    starts += [b.start_s for tenant in workload.tenants for b in tenant.bursts]
    return min(starts) if starts else None


@dataclass(frozen=True)
class ProvenDay:
    """One scenario's series (what the rules were evaluated on) and what they did on it."""

    alerts: ScenarioAlerts
    series: Series
    goodput: float | None = None  # the run's goodput ratio (a day is bad when it burns the budget)


def scenario_alerts(name: str, workload: WorkloadConfig, timeseries: dict[str, Any], rules: list[AlertRule],
                    shape: FleetShape, calm: bool = False) -> ScenarioAlerts:
    """The rules evaluated on one run of `workload` (its series): what fired, and the detection."""
    return _series_alerts(name, workload, Series.from_timeseries(timeseries), rules, shape, calm)


def _series_alerts(name: str, workload: WorkloadConfig, series: Series, rules: list[AlertRule],
                   shape: FleetShape, calm: bool) -> ScenarioAlerts:
    onset = onset_s(workload)
    fired = [f for f in evaluate(rules, series, shape) if f.first_s is not None]
    # Detection: the first firing that starts at or after the onset (one before it is a false alarm).
    starts = [(start, f.rule) for f in fired for start, _ in f.intervals if onset is None or start >= onset]
    first_s, first_rule = min(starts, default=(None, None))
    return ScenarioAlerts(
        scenario=name, calm=calm, onset_s=onset, first_rule=first_rule, first_s=first_s,
        delay_s=first_s - onset if first_s is not None and onset is not None else None,
        fired=[RuleFiring(rule=f.rule, first_s=f.first_s, intervals=list(f.intervals)) for f in fired])


def rule_figures(config: TargetConfig, rules: list[AlertRule]) -> list[RuleFigures]:
    written = rule_groups(config, rules)["groups"][0]["rules"]
    return [RuleFigures(name=r.name, severity=r.severity, expr=w["expr"], for_s=r.for_s, summary=r.summary)
            for r, w in zip(rules, written)]


def prove_rules(target: str, config: TargetConfig, rules: list[AlertRule], scenarios: list[str],
                durations: dict[str, float], seed: int, hour_s: float, objective: float, calm: tuple[str, ...] = (),
                jobs: Jobs = Jobs(), on_done: OnDone | None = None) -> AlertsResult:
    """Run every scenario once (seeded) on `target`, each a job of `jobs`, and evaluate `rules`
    on its series; `calm` names the days that should fire nothing."""
    return prove_days(target, config, rules, scenarios, durations, seed, hour_s, objective, calm, jobs,
                      on_done)[0]


def prove_days(target: str, config: TargetConfig, rules: list[AlertRule], scenarios: list[str],
               durations: dict[str, float], seed: int, hour_s: float, objective: float, calm: tuple[str, ...] = (),
               jobs: Jobs = Jobs(), on_done: OnDone | None = None) -> tuple[AlertsResult, list[ProvenDay]]:
    """`prove_rules`, and each scenario's series beside what fired on it (for promtool's unit tests)."""
    sims = [SimJob(target, name, seed, duration_s=durations.get(name)) for name in scenarios]
    runs = jobs.run(sims, on_done=(lambda i, _job, _run: on_done(sims[i].workload)) if on_done else None)
    shape = shape_of(config)
    days = []
    for job, run in zip(sims, runs):
        series = Series.from_timeseries(run.timeseries)
        alerts = _series_alerts(job.workload, job.workload_config(), series, rules, shape, job.workload in calm)
        days.append(ProvenDay(alerts, series, run.summary.goodput_ratio))
    result = AlertsResult(target=target, hour_s=hour_s, objective=objective, seed=seed,
                          rules=rule_figures(config, rules), scenarios=[d.alerts for d in days])
    return result, days
