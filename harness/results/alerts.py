"""The `alerts` result: the generated rules, and when each fires on each scenario in sim.

`onset_s` is when the scenario's first disturbance (spike, fault, tenant burst)
begins, None on a day without one; `delay_s` is from the onset to the first
rule that fired. See `harness.analysis.alerts.days` for how it is measured.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["AlertsResult", "RuleFigures", "RuleFiring", "ScenarioAlerts"]


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


class AlertsResult(Result):
    kind: Literal["alerts"] = "alerts"
    target: str
    hour_s: float
    objective: float
    seed: int
    files: list[str] = Field(default_factory=list)
    rules: list[RuleFigures]
    scenarios: list[ScenarioAlerts] = Field(default_factory=list)

    def summary_json(self) -> dict[str, object]:
        """Per scenario: the first rule to fire after the onset, its delay, and every rule that fired."""
        return {"target": self.target, "files": self.files,
                "scenarios": {s.scenario: {"onset_s": s.onset_s, "first_rule": s.first_rule, "delay_s": s.delay_s,
                                           "fired": [f.rule for f in s.fired]} for s in self.scenarios}}
