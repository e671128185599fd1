"""`harness compare llm-A llm-B`: the LLM sweep behind the usual compare options."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.results import load_result
from harness.results.llm import LlmResult

runner = CliRunner()


def test_compare_two_llm_policies_writes_an_llm_result(tmp_path):
    out = tmp_path / "llm.json"
    res = runner.invoke(app, ["compare", "llm-dynamic", "llm-continuous", "-w", "fixed", "--rate", "2",
                              "--duration", "10", "--set", "batch_size=4", "--set", "slo_tpot_s=0.05",
                              "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["kind"] == "llm" and doc["settings"]["rates_rps"] == [2.0]
    assert doc["settings"]["engine"]["batch_size"] == 4 and doc["settings"]["slo_tpot_s"] == 0.05
    result = load_result(out)
    assert isinstance(result, LlmResult) and [r.policy for r in result.runs] == ["llm-dynamic", "llm-continuous"]


@pytest.mark.parametrize("args, message", [
    (["llm-static", "naive"], "LLM policies are llm-static"),
    (["llm-static", "llm-static"], "both 'llm-static'"),
    (["llm-static", "llm-continuous", "--set", "nope=1"], "not an LLM engine knob"),
    (["llm-static", "llm-continuous", "--set", "batch_size=0"], "batch_size must be >= 1"),
    (["llm-static", "llm-continuous", "--set", "slo_tpot_s=-1"], "expected a number > 0"),
    (["llm-static", "llm-continuous", "-w", "nope"], "unknown length mix 'nope'"),
])
def test_bad_llm_compares_fail_with_one_line(args, message):
    res = runner.invoke(app, ["compare", *args])
    assert res.exit_code == 2
    assert message in res.output


@pytest.mark.live
def test_live_compare_serves_each_policy_beside_its_sim(tmp_path):
    out = tmp_path / "live.json"
    res = runner.invoke(app, ["compare", "llm-dynamic", "llm-continuous", "--mode", "live", "--rate", "4",
                              "--duration", "3", "--set", "batch_size=4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    result = load_result(out)
    assert [(r.policy, r.mix) for r in result.runs] == [("llm-dynamic", "live"), ("llm-dynamic", "sim"),
                                                        ("llm-continuous", "live"), ("llm-continuous", "sim")]
    assert all(r.finished == r.requests > 0 for r in result.runs)
    assert "llm-continuous" in res.output and "live" in res.output
