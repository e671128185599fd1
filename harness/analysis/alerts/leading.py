"""The dashboard's first row, chosen by measurement: one ranking for `harness alerts` and `harness review`.

A day is bad for a design when it has a disturbance (spike, fault, burst:
detection is timed from its onset) or when the design's goodput over the run
burns the error budget at least as fast as the slower page is set to catch
(6x: under 94% at a 99% objective; timed from the run's start); else it is
calm and should fire nothing (a day a little under the objective burns slower
than any page is meant to wake someone for). The first row is then: the
goodput SLI first, because it is the SLO (it pages on what users feel); then
the `LEADING` leading signals that, picked greedily, catch the most bad days
the leading signals picked before them missed (ties: more bad days caught,
then the shorter median delay), never one that fired on a calm day.

`harness alerts` ranks its own proven days with it and writes the dashboard
whose first row it chose (harness.ops.dashboard); `harness review` ranks the
ablation's runs with it (harness.analysis.review.alerts); `harness alerts
--review FILE` takes the row a saved review chose, so the files it writes
never contradict the review beside them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.analysis.alerts.days import ProvenDay
from harness.ops.prom import rule_groups
from harness.ops.rules import AlertRule, Signal
from harness.results.alerts import ScenarioAlerts
from harness.results.followups import ChosenMetric, RuleThreshold
from targets.config import TargetConfig

__all__ = ["LEADING", "JudgedDay", "choose_metrics", "judge_day", "leading_from_days", "leading_row", "rank_days",
           "thresholds"]

LEADING = 2  # leading signals beside the goodput SLI on the first row

Delays = dict[tuple[str, str], dict[str, float]]  # (design, scenario) -> {rule: delay after the onset, s}


@dataclass(frozen=True)
class JudgedDay:
    """One run judged: bad or calm, and (bad) each rule's delay from the onset (or the start)."""

    design: str
    scenario: str
    bad: bool
    delays: dict[str, float]
    fired: list[str]


def judge_day(design: str, seen: ScenarioAlerts, goodput: float | None, rules: list[AlertRule]) -> JudgedDay:
    """`seen` (the rules evaluated on one run) judged by the module doc's definition of a bad day."""
    page = min(c.threshold for r in rules for c in r.conditions if c.signal is Signal.ERROR_RATIO)
    bad = seen.onset_s is not None or (goodput is not None and 1.0 - goodput > page)
    t0 = seen.onset_s or 0.0
    delays = {f.rule: min(a for a, _ in f.intervals if a >= t0) - t0
              for f in seen.fired if any(a >= t0 for a, _ in f.intervals)} if bad else {}
    return JudgedDay(design, seen.scenario, bad, delays, [f.rule for f in seen.fired])


def thresholds(rules: list[AlertRule], config: TargetConfig) -> dict[Signal, list[RuleThreshold]]:
    """Each signal's rules with their thresholds, as the rule file writes them."""
    written = {w["alert"]: w["expr"] for w in rule_groups(config, rules)["groups"][0]["rules"]}
    out: dict[Signal, list[RuleThreshold]] = {}
    for r in rules:
        for sig in dict.fromkeys(c.signal for c in r.conditions):
            out.setdefault(sig, []).append(RuleThreshold(
                rule=r.name, severity=r.severity, for_s=r.for_s, expr=written[r.name],
                conditions=[(c.window_s, c.threshold) for c in r.conditions if c.signal is sig]))
    return out


def choose_metrics(rules: list[AlertRule], thresholds: dict[Signal, list[RuleThreshold]],
                   delays: Delays, noisy: set[Signal]) -> list[ChosenMetric]:
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


def rank_days(days: list[JudgedDay], rules: list[AlertRule], config: TargetConfig) -> list[ChosenMetric]:
    """The first row from judged days: their bad days' delays, and no signal that fired on a calm day."""
    delays: Delays = {(d.design, d.scenario): d.delays for d in days if d.bad}
    noisy = {c.signal for d in days if not d.bad for r in rules if r.name in d.fired for c in r.conditions}
    return choose_metrics(rules, thresholds(rules, config), delays, noisy)


def leading_from_days(design: str, days: list[ProvenDay], rules: list[AlertRule],
                      config: TargetConfig) -> list[ChosenMetric]:
    """`harness alerts`'s first row: its proven days (one design) judged and ranked."""
    return rank_days([judge_day(design, d.alerts, d.goodput, rules) for d in days], rules, config)


def leading_row(metrics: list[ChosenMetric]) -> list[Signal]:
    """The first row's signals, in order (the SLI first)."""
    return [Signal(m.signal) for m in metrics]
