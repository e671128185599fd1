"""`--seeds N` on the command line: the seeds are recorded, the figures carry intervals, and
options that cannot go with seeds end with one line and exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.results import load_result

runner = CliRunner()
SMALL = ["--duration", "1", "--rate", "500", "--jobs", "1", "--quiet"]


def test_run_with_seeds_prints_intervals_and_records_the_seeds(tmp_path):
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["run", "hardened", "-w", "steady", "--seed", "4", "--seeds", "2", "--json",
                              "--out", str(out), *SMALL])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["over_seeds"]["seeds"] == [4, 5] and doc["over_seeds"]["figures"]["goodput_ratio"]["n"] == 2
    saved = load_result(out)
    assert [s.seed for s in saved.over_seeds.summaries] == [4, 5] and saved.summary.seed == 4


@pytest.mark.slow
def test_compare_with_seeds_judges_over_them(tmp_path):
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", "hardened", "hardened", "-w", "steady", "--seeds", "2", "--out", str(out),
                              *SMALL])
    assert res.exit_code == 0, res.output
    result = load_result(out)
    assert result.seeds == [1, 2] and set(result.over_seeds["steady"]) == {"hardened", "hardened (B)"}
    # The same target twice, the same seeds: every difference is exactly 0, so every verdict is a tie.
    assert all(v.winner.name == "TIE" and v.diff.mean == 0 for v in result.verdicts["steady"].answers)
    assert "A won 0, B won 0 of 1 scenarios" in res.output


@pytest.mark.parametrize("args, message", [
    (["run", "hardened", "--seeds", "0"], "--seeds must be >= 1"),
    (["run", "hardened", "--seeds", "2", "--mode", "live"], "--seeds applies to --mode sim only"),
    (["compare", "naive", "hardened", "--seeds", "2", "--mode", "live"], "--seeds applies to --mode sim only"),
])
def test_bad_seed_options_end_with_one_line(args, message):
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and message in res.output, res.output
