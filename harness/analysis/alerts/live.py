"""The alert rules on a live bad day: the project's evaluator and, beside it, a real Prometheus.

`live_alerts` runs each scenario live (harness.live.plan: a target host, the
driver, real HTTP on loopback) with the rules built for the live fleet it runs
(`build_rules` of the scaled config: its SLO bucket, service rate and GPUs).
The project's evaluator reads the run's per-window series, as in sim
(`scenario_alerts`). With `prometheus`, a real Prometheus
(harness.ops.prometheus) scrapes the host's `/metrics` every `interval_s`
with the same rule file loaded and evaluated as often; the alerts it reported
firing (its ALERTS series) go beside the evaluator's, and `agreement` sets each
rule's first firing in the run both ways: within one scrape and one evaluation
interval of each other is the bar.

They need not agree exactly: the evaluator reads the driver's view (every
request the client sent, timeouts included, in whole windows), Prometheus the
host's counters through `rate()` over the scrapes in its window: for the
goodput SLI and the shed ratio the front door's latency histogram (each
request timed at the proxy from its first byte to its answer, refusals and
requests their client gave up on included; the time before the proxy's loop
reads a request is the client's alone), for retries the API servers'
counters; `for:` is held from the first evaluation that found the condition
true, on a clock a scrape apart. Both start at the run's clock: the sidecar
has Prometheus delete what it scraped during the warm-up
(harness.ops.prometheus).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from harness.analysis.alerts.days import rule_figures, scenario_alerts
from harness.live.plan import LivePlan, plan_live
from harness.ops.prom import rules_yaml
from harness.ops.prometheus import PrometheusSidecar
from harness.ops.rules import AlertRule, build_rules, shape_of
from harness.results.alerts import AlertsResult, PrometheusAlerts, RuleAgreement, RuleFiring, ScenarioAlerts
from harness.results.run import RunResult
from targets.config import TargetConfig

__all__ = ["LiveAlerts", "agreement", "live_alerts"]

RunPlan = Callable[[LivePlan], RunResult]


@dataclass(frozen=True)
class LiveAlerts:
    """The result, and the live config and rules the runs used (the files to write are theirs)."""

    result: AlertsResult
    config: TargetConfig
    rules: list[AlertRule]
    runs: dict[str, RunResult]


def _first(f: RuleFiring | None) -> float | None:
    return None if f is None or not f.intervals else min(a for a, _ in f.intervals)


def agreement(rules: list[AlertRule], evaluator: list[RuleFiring], prometheus: list[RuleFiring],
              tolerance_s: float) -> list[RuleAgreement]:
    """Each rule's first firing in the run (s since its clock started), both ways. (From the run's
    start, not the onset: a rule already firing when the disturbance began fired, and when.)"""
    ours = {f.rule: f for f in evaluator}
    theirs = {f.rule: f for f in prometheus}
    out = []
    for r in rules:
        a, b = _first(ours.get(r.name)), _first(theirs.get(r.name))
        diff = None if a is None or b is None else round(b - a, 3)
        out.append(RuleAgreement(rule=r.name, evaluator_s=a, prometheus_s=b, difference_s=diff,
                                 tolerance_s=tolerance_s,
                                 within=(a is None and b is None) or (diff is not None and abs(diff) <= tolerance_s)))
    return out


def _prometheus(block: dict[str, Any] | None, interval_s: float) -> PrometheusAlerts:
    if not block or "fired" not in block:
        return PrometheusAlerts(interval_s=interval_s, error=(block or {}).get("error", "no figures came back"))
    fired = [RuleFiring(rule=name, first_s=iv[0][0] if iv else None, intervals=[tuple(x) for x in iv])
             for name, iv in block["fired"].items()]
    return PrometheusAlerts(version=block.get("version", ""), interval_s=interval_s, scraped=block.get("scraped", ""),
                            scrapes=block.get("scrapes", 0), scrapes_ok=block.get("scrapes_ok", 0), fired=fired)


def live_alerts(target: str, scenarios: list[str], seed: int = 1, *, hour_s: float = 60.0, objective: float = 0.99,
                prometheus: bool = False, interval_s: float = 1.0, scale: float | None = None,
                duration_s: float | None = None, device: str = "auto", balancer: str = "python",
                warmup_s: float | None = None, calm: tuple[str, ...] = (),
                run_plan: RunPlan | None = None) -> LiveAlerts:
    """Each scenario live, its alerts by the project's evaluator and (with `prometheus`) by a real
    Prometheus scraping the host. `run_plan(plan)` runs a plan (default `plan.run()`), so a caller
    can show it. Raises ValueError / ConfigError naming a bad input, RuntimeError when a host or
    Prometheus does not start."""
    run_plan = run_plan or (lambda plan: plan.run())
    out: list[ScenarioAlerts] = []
    runs: dict[str, RunResult] = {}
    config: TargetConfig | None = None
    rules: list[AlertRule] = []
    for name in scenarios:
        plan = plan_live(target, name, seed, duration_s=duration_s, scale=scale, device=device, balancer=balancer,
                         warmup_s=warmup_s)
        config = plan.config
        rules = build_rules(config, hour_s, objective)
        if prometheus:
            plan = replace(plan, sidecar=PrometheusSidecar(rules_yaml(config, rules), interval_s))
        res = run_plan(plan)
        runs[name] = res
        seen = scenario_alerts(name, plan.workload, res.timeseries, rules, shape_of(config), calm=name in calm)
        if prometheus:
            prom = _prometheus((res.summary.live or {}).get("prometheus"), interval_s)
            seen = seen.model_copy(update={"prometheus": prom, "agreement": agreement(
                rules, seen.fired, prom.fired, 2 * interval_s) if prom.error is None else []})
        out.append(seen)
    if config is None:
        raise ValueError("live alerts need at least one scenario")
    result = AlertsResult(target=target, hour_s=hour_s, objective=objective, seed=seed, mode="live",
                          rules=rule_figures(config, rules), scenarios=out)
    return LiveAlerts(result, config, rules, runs)
