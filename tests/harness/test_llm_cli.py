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


def test_seeds_give_intervals_and_jobs_give_the_same_figures(tmp_path):
    base = ["compare", "llm-static", "llm-continuous", "-w", "fixed", "--rate", "4", "--duration", "10",
            "--set", "batch_size=4", "--json"]
    seeded = runner.invoke(app, [*base, "--seeds", "3", "--jobs", "2", "--out", str(tmp_path / "a.json")])
    assert seeded.exit_code == 0, seeded.output
    over = json.loads(seeded.stdout)["over_seeds"]
    assert over["seeds"] == [1, 2, 3]
    tpot = over["ratios"]["fixed"]["tpot_ratio"]
    assert tpot["n"] == 3 and tpot["lo"] <= tpot["mean"] <= tpot["hi"]
    assert set(over["runs"]) == {"llm-static, fixed, 4", "llm-continuous, fixed, 4"}
    inline = runner.invoke(app, [*base, "--out", str(tmp_path / "b.json")])
    pooled = runner.invoke(app, [*base, "--jobs", "2", "--out", str(tmp_path / "c.json")])
    first = json.loads(seeded.stdout)
    for doc in (json.loads(inline.stdout), json.loads(pooled.stdout)):
        assert doc["runs"] == first["runs"] and doc["ratios"] == first["ratios"]  # seed 1, however it ran


def test_the_llm_suite_names_the_llm_bad_days(tmp_path):
    res = runner.invoke(app, ["compare", "llm-static", "llm-continuous", "--suite", "llm-bad-day", "--rate", "1",
                              "--duration", "5", "--json", "--out", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    mixes = json.loads(res.stdout)["settings"]["mixes"]
    assert mixes[:3] == ["long-prompts", "long-outputs", "dominant-tenant"] and mixes[3].endswith("azure-llm-sample.csv")


@pytest.mark.parametrize("args, message", [
    (["--scale", "0.5"], "--scale: not used by an LLM compare"),
    (["--warmup", "1", "--driver-procs", "2"], "--warmup, --driver-procs: not used by an LLM compare"),
    (["--mode", "live", "--seeds", "2"], "--seeds: not used by an LLM compare in --mode live"),
    (["--mode", "live", "--jobs", "2"], "--jobs: not used by an LLM compare in --mode live"),
    (["--suite", "bad-dy"], "unknown LLM suite 'bad-dy': valid are llm-bad-day"),
    (["--suite", "llm-bad-day", "-w", "fixed"], "--workload and --suite both name the mixes"),
])
def test_options_an_llm_compare_cannot_honour_end_with_exit_2_naming_them(args, message):
    res = runner.invoke(app, ["compare", "llm-static", "llm-continuous", *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


@pytest.mark.live
def test_live_compare_takes_the_mix_and_records_the_settings_that_ran(tmp_path):
    out = tmp_path / "live.json"
    res = runner.invoke(app, ["compare", "llm-dynamic", "llm-continuous", "--mode", "live", "-w", "fixed",
                              "--rate", "2", "--duration", "2", "--set", "batch_size=4", "--set", "tenant_tok_s=50000",
                              "--set", "max_seqs=8", "--out", str(out)])
    assert res.exit_code == 2 and "context" in res.output   # fixed: 512 + 128 tokens, over the tiny decoder's 512
    res = runner.invoke(app, ["compare", "llm-dynamic", "llm-continuous", "--mode", "live", "--rate", "2",
                              "--duration", "2", "--set", "batch_size=4", "--set", "tenant_tok_s=50000",
                              "--set", "max_seqs=8", "--out", str(out)])
    assert res.exit_code == 0, res.output
    engine = load_result(out).settings.engine
    assert (engine.batch_size, engine.tenant_tok_s, engine.max_seqs) == (4, 50000, 8)
