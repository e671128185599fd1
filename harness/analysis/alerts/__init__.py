"""`harness alerts`: the generated alert rules proven on bad days (`days`) by the project's own
evaluator (`eval`), and promtool unit tests built from the same days (`promtest`)."""

from harness.analysis.alerts.days import ProvenDay, prove_days, rule_figures, scenario_alerts
from harness.analysis.alerts.leading import choose_metrics, judge_day, leading_from_days, leading_row, thresholds
from harness.analysis.alerts.promtest import write_promtool_tests

__all__ = ["ProvenDay", "choose_metrics", "judge_day", "leading_from_days", "leading_row", "prove_days",
           "rule_figures", "scenario_alerts", "thresholds", "write_promtool_tests"]
