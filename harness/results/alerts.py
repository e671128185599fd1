"""The `alerts` result: the generated rules, and when each fires on each scenario (sim, or live).

`onset_s` is when the scenario's first disturbance (spike, fault, tenant burst)
begins, None on a day without one; `delay_s` is from the onset to the first
rule that fired. See `harness.analysis.alerts.days` for how it is measured.

Live (`mode` "live", harness.analysis.alerts.live): each scenario ran on the wall
clock, the project's evaluator read its series, and with `--prometheus` a real
Prometheus scraped the target with the same rules loaded: `prometheus` holds the
alerts it reported firing and `agreement` sets each rule's first firing both ways.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.followups import ChosenMetric

__all__ = ["AlertsResult", "PrometheusAlerts", "RuleAgreement", "RuleFigures", "RuleFiring", "ScenarioAlerts"]


class RuleFigures(Figures):
    """One alert rule as written to the rule file."""

    name: str
    severity: str
    expr: str
    for_s: float
    summary: str


class RuleFiring(Figures):
    """One rule on one scenario: first firing (s since the run began) and every firing interval."""

    rule: str
    first_s: float | None
    intervals: list[tuple[float, float]] = Field(default_factory=list)


class PrometheusAlerts(Figures):
    """What a real Prometheus reported firing during a live run (its ALERTS series), on the run's clock."""

    OMIT_IF_NONE = frozenset({"error"})

    version: str = ""
    interval_s: float                    # its scrape and rule-evaluation interval
    scraped: str = ""                    # the host:port it scraped
    scrapes: int = 0                     # scrapes during the run
    scrapes_ok: int = 0                  # of which the target answered in time (`up` 1)
    fired: list[RuleFiring] = Field(default_factory=list)
    error: str | None = None             # why there are no figures (it did not start, did not answer)


class RuleAgreement(Figures):
    """One rule's first firing in the run (s since its clock started) by the project's evaluator and by
    Prometheus; `within` whether they are within `tolerance_s` (one scrape and one evaluation interval)
    of each other, or neither fired."""

    rule: str
    evaluator_s: float | None
    prometheus_s: float | None
    difference_s: float | None           # Prometheus's time less the evaluator's
    tolerance_s: float
    within: bool


class ScenarioAlerts(Figures):
    """`calm`: a day that should fire nothing (steady, diurnal, night); a day without an
    onset that is not calm (variable sizes, say) is bad for its whole run."""

    scenario: str
    calm: bool = False
    onset_s: float | None
    first_rule: str | None
    first_s: float | None
    delay_s: float | None
    fired: list[RuleFiring] = Field(default_factory=list)  # only the rules that fired
    prometheus: PrometheusAlerts | None = None             # live with --prometheus: what it reported
    agreement: list[RuleAgreement] = Field(default_factory=list)  # live with --prometheus: both, per rule

    OMIT_IF_NONE = frozenset({"prometheus"})


class AlertsResult(Result):
    kind: Literal["alerts"] = "alerts"
    target: str
    hour_s: float
    objective: float
    seed: int
    mode: Literal["sim", "live"] = "sim"
    files: list[str] = Field(default_factory=list)
    rules: list[RuleFigures]
    scenarios: list[ScenarioAlerts] = Field(default_factory=list)
    # The dashboard's first row (harness.analysis.alerts.leading): the SLI, then the leading
    # signals measurement chose, and by what (these days, or a saved review's); [] when not measured.
    leading: list[ChosenMetric] = Field(default_factory=list)
    leading_source: str | None = None

    OMIT_IF_NONE = frozenset({"leading_source"})

    def summary_json(self) -> dict[str, object]:
        """Per scenario: the first rule to fire after the onset, its delay, and every rule that fired."""
        return {"target": self.target, "files": self.files, "first_row": [m.signal for m in self.leading],
                "scenarios": {s.scenario: {"onset_s": s.onset_s, "first_rule": s.first_rule, "delay_s": s.delay_s,
                                           "fired": [f.rule for f in s.fired],
                                           **({"prometheus_fired": [f.rule for f in s.prometheus.fired],
                                               "agree": all(a.within for a in s.agreement)}
                                              if s.prometheus is not None else {})}
                              for s in self.scenarios}}
