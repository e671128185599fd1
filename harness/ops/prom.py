"""Prometheus rule files: written with PyYAML, every expression checked by a PromQL parser.

`selectors(expr)` walks the parsed expression (promql-parser, the Rust parser
Prometheus-compatible tools use) and returns every metric it reads with the
labels it matches on, so a test can hold them against what `/metrics` serves.
"""

from __future__ import annotations

from typing import Any

import promql_parser
import yaml

from harness.ops.rules import AlertRule, duration, rule_expr, shape_of
from targets.config import TargetConfig

__all__ = ["rule_groups", "rules_yaml", "selectors"]


def rule_groups(config: TargetConfig, rules: list[AlertRule]) -> dict[str, Any]:
    """The rules as a Prometheus rule file's data (`groups:`); each expression parsed first."""
    shape = shape_of(config)
    out = []
    for r in rules:
        expr = rule_expr(r, shape)
        promql_parser.parse(expr)  # ValueError on anything Prometheus would refuse
        rule: dict[str, Any] = {"alert": r.name, "expr": expr}
        if r.for_s:  # absent: fire at the first evaluation that holds (Prometheus's default)
            rule["for"] = duration(r.for_s)
        rule["labels"] = {"severity": r.severity, "target": config.name}
        rule["annotations"] = {"summary": r.summary}
        out.append(rule)
    return {"groups": [{"name": f"harness-{config.name}", "rules": out}]}


def rules_yaml(config: TargetConfig, rules: list[AlertRule]) -> str:
    return yaml.safe_dump(rule_groups(config, rules), sort_keys=False, width=200)


def selectors(expr: str) -> dict[str, set[str]]:
    """metric name -> the label names the expression matches or groups on."""
    found: dict[str, set[str]] = {}

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.MatrixSelector):
            node = node.vector_selector
        # A selector without a metric name (`{job="x"}`) reads no one metric: not listed.
        if isinstance(node, promql_parser.VectorSelector) and node.name is not None:
            found.setdefault(node.name, set()).update(m.name for m in node.matchers.matchers)
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            grouped = set(node.modifier.labels)
            inner: dict[str, set[str]] = {}
            promql_parser.walk(node.expr, pre_visit=lambda n: _collect(n, inner))
            for name in inner:
                found.setdefault(name, set()).update(grouped)

    promql_parser.walk(promql_parser.parse(expr), pre_visit=visit)
    return found


def _collect(node: Any, into: dict[str, set[str]]) -> None:
    if isinstance(node, promql_parser.VectorSelector) and node.name is not None:
        into.setdefault(node.name, set())
