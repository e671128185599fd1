"""`harness alerts`: the generated alert rules proven on bad days (`days`) by the project's own
evaluator (`eval`), and promtool unit tests built from the same days (`promtest`)."""

from harness.analysis.alerts.days import ProvenDay, prove_days, rule_figures, scenario_alerts
from harness.analysis.alerts.promtest import write_promtool_tests

__all__ = ["ProvenDay", "prove_days", "rule_figures", "scenario_alerts", "write_promtool_tests"]
