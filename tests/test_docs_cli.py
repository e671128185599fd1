"""`harness workloads --schema`, `harness workloads NAME` and `harness docs --check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from workloads.loader import SCENARIO_DIR, read_toml, scenario_names

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_workloads_schema_prints_the_checked_in_schema() -> None:
    res = runner.invoke(app, ["workloads", "--schema"])
    assert res.exit_code == 0, res.output
    assert res.output == (ROOT / "docs" / "workload.schema.json").read_text()
    assert json.loads(res.output)["$schema"].startswith("https://json-schema.org/")


def test_every_built_in_scenario_is_valid_under_the_schema_and_a_bad_key_is_not() -> None:
    import jsonschema  # a test dependency (pyproject: test extra)
    schema = json.loads((ROOT / "docs" / "workload.schema.json").read_text())
    for name in scenario_names():
        jsonschema.validate(read_toml(SCENARIO_DIR / f"{name}.toml"), schema)
    bad = {"phases": [{"kind": "constant", "duration_s": 10, "rps": 100}]}  # the guess: rps
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_workloads_name_explains_each_key_it_sets(monkeypatch) -> None:
    from harness.cli import common

    # The CLI's console takes its width when first imported; a wide one keeps each meaning on one line.
    monkeypatch.setattr(common.out, "width", 240)
    res = runner.invoke(app, ["workloads", "dominant-tenant"])
    assert res.exit_code == 0, res.output
    assert "tenants[0].bursts[0].factor" in res.output
    assert "the tenant's rate is multiplied by this during the burst" in res.output
    assert "phases[0].rate_rps" in res.output and "requests/s" in res.output


def test_workloads_name_unknown_is_one_line_and_exit_2() -> None:
    res = runner.invoke(app, ["workloads", "no-such-workload"])
    assert res.exit_code == 2
    assert "unknown workload 'no-such-workload'" in res.output


@pytest.mark.slow
def test_docs_check_fails_naming_the_stale_file_and_the_command(tmp_path: Path) -> None:
    assert runner.invoke(app, ["docs", "--out", str(tmp_path)]).exit_code == 0
    assert runner.invoke(app, ["docs", "--out", str(tmp_path), "--check"]).exit_code == 0
    (tmp_path / "targets.md").write_text("edited by hand\n")
    res = runner.invoke(app, ["docs", "--out", str(tmp_path), "--check"], env={"COLUMNS": "240"})
    assert res.exit_code == 1
    assert "targets.md: differs from a fresh generation" in res.output
    assert "harness docs --out docs/" in res.output
