"""The alerts result round-trips through JSON, and its view says the first alert, the delay and calm-day alarms."""

from __future__ import annotations

from rich.console import Console

from harness.results import from_json
from harness.results.alerts import AlertsResult, RuleFigures, RuleFiring, ScenarioAlerts
from reports.page import doc_sections
from reports.registry import view


def _result() -> AlertsResult:
    rule = RuleFigures(name="SheddingLoad", severity="warning", expr="x > 0.02", for_s=5.0, summary="sheds")
    spike = ScenarioAlerts(scenario="spike", onset_s=10.0, first_rule="SheddingLoad", first_s=16.0, delay_s=6.0,
                           fired=[RuleFiring(rule="SheddingLoad", first_s=16.0, intervals=[(16.0, 21.0)])])
    night = ScenarioAlerts(scenario="night", calm=True, onset_s=None, first_rule=None, first_s=None, delay_s=None)
    steady = ScenarioAlerts(scenario="steady", calm=True, onset_s=None, first_rule="SheddingLoad", first_s=3.0, delay_s=None,
                            fired=[RuleFiring(rule="SheddingLoad", first_s=3.0, intervals=[(3.0, 4.0)])])
    return AlertsResult(target="hardened", hour_s=60.0, objective=0.99, seed=1, rules=[rule],
                        scenarios=[spike, night, steady])


def test_round_trip_and_view() -> None:
    result = _result()
    back = from_json(result.to_json())
    assert back == result
    console = Console(record=True, width=140)
    view("alerts").render(back, console)
    text = console.export_text()
    assert "spike" in text and "6 s" in text
    assert "rules FIRED on steady" in text
    assert [s.title for s in doc_sections(back)] == ["Alert rules", "When each rule fires, per scenario"]
    assert back.summary_json()["scenarios"]["spike"] == {"onset_s": 10.0, "first_rule": "SheddingLoad",
                                                         "delay_s": 6.0, "fired": ["SheddingLoad"]}
