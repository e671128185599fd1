"""Generated alert rules and dashboard: every expression parses (promql-parser), the rule
file is valid YAML of Prometheus's shape, and the dashboard loads into the Grafana SDK's model."""

from __future__ import annotations

import json

import promql_parser
import pytest
import yaml
from grafana_foundation_sdk.models.dashboard import Dashboard

from harness.ops.dashboard import dashboard, panel_queries
from harness.ops.files import write_ops_files
from harness.ops.prom import rules_yaml, selectors
from harness.ops.rules import build_rules, duration, slo_bucket_s
from targets.spec import resolve_target


@pytest.mark.parametrize("spec", ["naive", "hardened", "hardened:slo_s=0.25"])
def test_rule_file_is_prometheus_shaped_and_every_expression_parses(spec: str) -> None:
    config = resolve_target(spec)
    doc = yaml.safe_load(rules_yaml(config, build_rules(config)))
    (group,) = doc["groups"]
    assert len(group["rules"]) == 7
    for rule in group["rules"]:
        assert {"alert", "expr", "labels", "annotations"} <= set(rule) <= {"alert", "expr", "for", "labels",
                                                                        "annotations"}
        assert isinstance(promql_parser.parse(rule["expr"]), promql_parser.BinaryExpr)
        if "for" in rule:
            assert promql_parser.parse_duration(rule["for"]).total_seconds() > 0
        assert rule["labels"]["severity"] in {"page", "warning"}


def test_burn_rate_windows_keep_the_workbooks_ratios() -> None:
    # hour_s = 3600 writes the workbook's own: 14.4x over 1h and 5m, 6x over 6h and 30m.
    rules = {r.name: r for r in build_rules(resolve_target("hardened"), hour_s=3600, objective=0.999)}
    fast = rules["GoodputBudgetFastBurn"].conditions
    assert [duration(c.window_s) for c in fast] == ["1h", "5m"]
    assert fast[0].threshold == pytest.approx(14.4 * 0.001)
    assert [duration(c.window_s) for c in rules["GoodputBudgetSlowBurn"].conditions] == ["6h", "30m"]


def test_slo_bucket_is_the_largest_latency_bucket_not_over_the_slo() -> None:
    assert slo_bucket_s(0.3) == 0.3
    assert slo_bucket_s(0.25) == 0.2
    with pytest.raises(ValueError, match="no latency bucket"):
        slo_bucket_s(0.001)


def test_dashboard_loads_into_the_grafana_model_and_its_queries_parse(tmp_path) -> None:
    config = resolve_target("hardened")
    board = dashboard(config)
    model = Dashboard.from_json(board)
    assert model.uid == "harness-hardened" and len(model.panels) == len(board["panels"])
    queries = panel_queries(board)
    assert len(queries) >= 8
    for q in queries:
        promql_parser.parse(q)
    files = write_ops_files(config, build_rules(config), tmp_path, 60.0, 0.99)
    assert json.loads((tmp_path / "hardened-dashboard.json").read_text()) == board
    assert [f.rsplit("/", 1)[-1] for f in files] == ["hardened-alerts.yaml", "hardened-dashboard.json"]


def test_selectors_name_every_metric_and_label_an_expression_reads() -> None:
    found = selectors('sum by (code) (rate(harness_requests_total{tenant="a"}[1m])) / sum(harness_gpus_alive)')
    assert found == {"harness_requests_total": {"tenant", "code"}, "harness_gpus_alive": set()}
