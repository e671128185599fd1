"""The `capacity` and `pool` kinds end to end: the file each command writes loads as its
typed result, round-trips through JSON, and renders via the view registry in the
terminal and as HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import harness.analysis.capacity.plan as capacity_analysis
from harness.analysis.capacity.plan import Budget
from harness.cli import app
from harness.results import from_json, load_result
from harness.results.capacity import CapacityResult
from harness.results.pool import PoolResult
from reports.page import write_html
from reports.registry import view

runner = CliRunner()
DATA = Path(__file__).parent / "data"

# A plan small enough for the fast tier: a few hundred requests a point.
SMALL_BUDGET = Budget(requests=300, min_s=0.5, max_s=1.0, curve_utilizations=(0.7,), loads=(0.01, 0.1),
                      offline_rounds=2, extras=False, slow_min_s=1.0, search_width=1)


def _check_kind(path: Path, cls: type, tmp_path: Path) -> None:
    doc = json.loads(path.read_text())
    result = load_result(path)
    assert isinstance(result, cls) and result.kind == doc["kind"]
    assert from_json(doc).to_json() == doc  # round-trips, key for key
    module = view(result.kind)
    con = Console(width=80, record=True, color_system=None)
    module.render(result, con)
    text = con.export_text()
    assert text and max(len(line) for line in text.splitlines()) <= 80
    assert module.title(result) and module.sections(result)
    page = write_html([result], tmp_path / f"{result.kind}.html").read_text()
    assert module.title(result) in page and 'data-state="loading"' in page


def test_saved_capacity_file_loads_round_trips_and_renders(tmp_path: Path) -> None:
    # Written by `harness capacity --qps 500 --batch-size 8 --batch-time 0.05 --quick -j 1`.
    _check_kind(DATA / "capacity-500qps.json", CapacityResult, tmp_path)


@pytest.mark.slow
def test_capacity_file_loads_round_trips_and_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capacity_analysis, "QUICK", SMALL_BUDGET)
    out = tmp_path / "cap.json"
    res = runner.invoke(app, ["capacity", "--qps", "500", "--batch-size", "8", "--batch-time", "0.05",
                              "--quick", "-j", "1", "--quiet", "--out", str(out)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    _check_kind(out, CapacityResult, tmp_path)


def test_pool_file_loads_round_trips_and_renders(tmp_path: Path) -> None:
    out = tmp_path / "pool.json"
    res = runner.invoke(app, ["pool", "--compare", "--duration", "2", "--quiet", "--out", str(out)],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    _check_kind(out, PoolResult, tmp_path)
    result = load_result(out)
    assert all(r.verdict is not None for r in result.results.values())  # verdicts are data in the file


def test_pool_files_written_before_verdicts_were_data_still_load() -> None:
    doc = {"schema": "harness.result/1", "kind": "pool", "versions": {},
           "config": {"large": {"rate_rps": 10.0, "batch_size": 8, "batch_time_s": 0.2},
                      "small": {"rate_rps": 2000.0, "batch_size": 32, "batch_time_s": 0.05},
                      "slo_s": 1.0, "gpus": 8, "duration_s": 30.0, "seed": 0, "target_utilization": 0.8,
                      "wait_fraction": 0.5, "drain_s": None, "gantt_window_s": [13.5, 16.5],
                      "max_gantt_bars": 4000, "max_events": None},
           "capacity": {"large_gpu_s_per_s": 2.0, "small_gpu_s_per_s": 3.125, "lhs_gpu_s_per_s": 5.125,
                        "rhs_gpu_s_per_s": 6.4, "utilization_needed": 0.640625, "ok": True, "reason": None},
           "results": {}, "policies": [], "skipped": {}, "meets_slo": [], "verdict": []}
    assert from_json(doc).to_json() == doc
