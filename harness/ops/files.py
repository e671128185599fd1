"""Write a target's alert rules and dashboard to a folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from harness.ops.dashboard import dashboard
from harness.ops.prom import rules_yaml
from harness.ops.rules import AlertRule, Signal
from targets.config import TargetConfig

__all__ = ["write_ops_files"]


def write_ops_files(config: TargetConfig, rules: list[AlertRule], out_dir: Path, hour_s: float,
                    objective: float, first_row: Sequence[Signal] | None = None,
                    chosen_by: str | None = None) -> list[str]:
    """`<target>-alerts.yaml` (Prometheus rule file) and `<target>-dashboard.json` (Grafana) in out_dir;
    the dashboard's first row `first_row` as `chosen_by` chose it (harness.ops.dashboard)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = config.name.replace("/", "_")
    rules_path = out_dir / f"{stem}-alerts.yaml"
    board_path = out_dir / f"{stem}-dashboard.json"
    rules_path.write_text(rules_yaml(config, rules))
    board_path.write_text(json.dumps(dashboard(config, hour_s, objective, first_row, chosen_by), indent=2) + "\n")
    return [str(rules_path), str(board_path)]
