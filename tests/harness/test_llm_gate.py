"""LLM endpoint gates (harness.gate.llm): `harness gate FILE` of [[llm]] tables, and `sweep URL --check`.

Malformed files are refused before anything is sent (no server). The live tests drive the
fake OpenAI server of tests/harness/fake_openai.py, whose timing is set; the slow one serves
the tiny decoder with `harness serve` and runs the shipped example, harness/gate/llm.toml.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.gate.llm import LLM_KEYS, load_llm_gate_file
from harness.results import load_result
from harness.results.gate import GateResult
from tests.harness.fake_openai import FakeOpenAI, serve

runner = CliRunner()
NOWHERE = "http://127.0.0.1:9/v1/completions"   # nothing listens on port 9 (discard)
EXAMPLE = Path(__file__).resolve().parents[2] / "harness" / "gate" / "llm.toml"


def gate_file(tmp_path: Path, checks: list[str], url: str = NOWHERE, **settings: object) -> Path:
    lines = ["[defaults]", f'url = "{url}"', "rate_rps = 4", "duration_s = 1.5"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    lines += ["[[llm]]", f"checks = {json.dumps(checks)}"]
    path = tmp_path / "llm.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def words(text: str) -> str:
    return " ".join(text.split())


# -- malformed files: exit 2 naming the file, the key and the problem, nothing sent --------------

@pytest.mark.parametrize("text, key, problem", [
    ('[[llm]]\nurl = "U"\nrate = 2\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].rate", "unknown key (allowed here:"),
    ('[[llm]]\nurl = "U"\nchecks = ["ttft.p99 <= 1"]', "llm[0].checks[0]", "unknown LLM key 'ttft.p99': one of"),
    ('[[llm]]\nurl = "U"\nchecks = ["ttft_s.p99 about 1"]', "llm[0].checks[0]", "cannot parse 'ttft_s.p99 about 1'"),
    ('[[llm]]\nurl = "U"\nchecks = []', "llm[0].checks", "must be a non-empty list of checks"),
    ('[[llm]]\nurl = "http://10.0.0.1:80/v1/completions"\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].url",
     "target URL 'http://10.0.0.1:80/v1/completions' is outside loopback; pass --allow-remote"),
    ('[defaults]\nurl = "https://127.0.0.1/v1/completions"\n[[llm]]\nchecks = ["ttft_s.p99 <= 1"]', "defaults.url",
     "target URL 'https://127.0.0.1/v1/completions': only http://HOST:PORT/PATH is supported"),
    ('[[llm]]\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].url", "missing: give url here, defaults.url or --target URL"),
    ('[defaults]\nurl = "U"\nmix = "nope"\n[[llm]]\nchecks = ["ttft_s.p99 <= 1"]', "defaults.mix",
     "unknown length mix 'nope'"),
    ('[[llm]]\nurl = "U"\nattainment = 2\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].attainment",
     "must be a share in (0, 1]"),
    ('[[llm]]\nurl = "U"\nrate_rps = -2\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].rate_rps",
     "must be a positive number, not -2"),
    ('[[llm]]\nurl = "U"\nchecks = [{check = "ttft_s.p99 <= 1", bound = "upper"}]', "llm[0].checks[0].bound",
     "an LLM gate is one live run: there is no interval to bound"),
    ('[[llm]]\nurl = "U"\nchecks = ["ttft_s.p99 <= 1"]\n[[scenario]]\nname = "steady"\nchecks = ["goodput_ratio >= 1"]',
     "scenario", "an LLM gate drives a live endpoint and a sim gate runs in virtual time"),
    ('[defaults]\nseed = "one"\n[[llm]]\nurl = "U"\nchecks = ["ttft_s.p99 <= 1"]', "defaults.seed",
     "must be an integer"),
    ('[[llm]]\nurl = "U"\nmix = "gone.csv"\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].mix",
     "LLM trace file 'gone.csv' not found"),
    ('[[llm]]\nurl = "U"\nchecks = ["ttft_s.p99 <= 1"]\n[[llm]]\nurl = "U"\ncheck = ["ttft_s.p99 <= 1"]',
     "llm[1].check", "unknown key"),
    ('[[llm]]\nurl = "U"\ndriver_procs = 0\nchecks = ["ttft_s.p99 <= 1"]', "llm[0].driver_procs",
     "must be a whole number >= 1, not 0"),
    ('[[llm]]\nurl = "U"\ndriver_procs = 2\ndriver_executor = "dask"\nchecks = ["ttft_s.p99 <= 1"]', "llm[0]",
     "the driver's executor must be one of process, ray, got 'dask'"),
    ('[[llm]]\nurl = "U"\ndriver_executor = "ray"\nchecks = ["ttft_s.p99 <= 1"]', "llm[0]",
     "executor ray runs the driver's processes as Ray actors: give more than one"),
    ('[[llm]]\nurl = "U"\nconcurrency = 2\ndriver_procs = 3\nchecks = ["ttft_s.p99 <= 1"]', "llm[0]",
     "--driver-procs 3 is more than --concurrency 2"),
])
def test_a_malformed_llm_gate_file_is_exit_2_naming_file_key_and_problem(tmp_path, text, key, problem):
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('"U"', f'"{NOWHERE}"') + "\n")
    res = runner.invoke(app, ["gate", str(path)])
    assert res.exit_code == 2, res.output
    assert f"{path}: key '{key}': {problem}" in words(res.output)


@pytest.mark.parametrize("args, message", [
    (["--seeds", "3"], "--seeds: not used by an LLM endpoint's gate"),
    (["--jobs", "2"], "--jobs: not used by an LLM endpoint's gate"),
    (["--target", "hardened"], "--target 'hardened': the gates of"),
    (["--target", "http://10.0.0.1:80/v1/completions"], "--target: target URL 'http://10.0.0.1:80/v1/completions' "
                                                        "is outside loopback"),
])
def test_options_an_llm_gate_cannot_honour_are_exit_2(tmp_path, args, message):
    res = runner.invoke(app, ["gate", str(gate_file(tmp_path, ["ttft_s.p99 <= 1"])), *args])
    assert res.exit_code == 2, res.output
    assert message in words(res.output)


def test_allow_remote_and_target_say_which_endpoint_is_driven(tmp_path):
    path = gate_file(tmp_path, ["ttft_s.p99 <= 1"], url="http://10.0.0.1:80/v1/completions")
    gf = load_llm_gate_file(path, allow_remote=True)
    assert gf.gates[0].target.host == "10.0.0.1"
    local = "http://127.0.0.1:8123/v1/chat/completions"
    gate = load_llm_gate_file(path, target=local, allow_remote=True).gates[0]
    assert gate.target.url == local and gate.sweep.rates_rps == (4.0,) and gate.sweep.duration_s == 1.5
    assert gate.scenario == "short 4 req/s"


def test_target_replaces_the_endpoint_under_test_and_only_it(tmp_path):
    other = "http://127.0.0.1:8200/v1/completions"
    path = tmp_path / "two.toml"
    path.write_text(f'[defaults]\nurl = "{NOWHERE}"\n[[llm]]\nchecks = ["ttft_s.p99 <= 1"]\n'
                    f'[[llm]]\nurl = "{other}"\nchecks = ["ttft_s.p99 <= 1"]\n')
    local = "http://127.0.0.1:8123/v1/completions"
    assert [g.target.url for g in load_llm_gate_file(path, target=local).gates] == [local, other]
    path.write_text(path.read_text().replace(f'[defaults]\nurl = "{NOWHERE}"\n', "").replace(
        "[[llm]]\nchecks", f'[[llm]]\nurl = "{NOWHERE}"\nchecks'))
    assert [g.target.url for g in load_llm_gate_file(path, target=local).gates] == [local, local]


def test_the_example_is_a_valid_gate_file_and_every_key_is_documented():
    gf = load_llm_gate_file(EXAMPLE)
    assert {c.key for g in gf.gates for c in g.checks} <= set(LLM_KEYS)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "gate.md").read_text()
    assert all(f"`{k}`" in docs for k in LLM_KEYS)


# -- live: the fake server ------------------------------------------------------------------------

@pytest.mark.live
def test_a_gate_the_endpoint_meets_passes_and_reports_like_the_request_level_gate(tmp_path):
    from reports.registry import view
    from tests.reports.fit import rendered

    checks = ["ttft_s.p90 <= 0.3", "tpot_s.p90 <= 0.05", "itl_s.p99 <= 0.1", "goodput_rps >= 1",
              "slo_attainment >= 0.9", "output_tok_s > 0", "error_ratio == 0", "timeout_ratio == 0",
              "ttft_s.p50 <= baseline"]
    with serve(FakeOpenAI(ttft_s=0.02, itl_s=0.005)) as url:
        path = gate_file(tmp_path, checks, url, slo_ttft_s=0.5)
        res = runner.invoke(app, ["gate", str(path), "--out", str(tmp_path / "gate.json"),
                                  "--junit", str(tmp_path / "gate.xml"), "--markdown", str(tmp_path / "gate.md")])
    assert res.exit_code == 0, res.output
    text = words(res.output)
    assert "PASSED: 8 passed, 0 failed, 1 skipped of 9 checks" in text and f"live runs of {url}" in text
    result = load_result(tmp_path / "gate.json")
    assert isinstance(result, GateResult) and result.passed and result.llm is not None
    run = result.llm[0].runs[0]
    assert run.finished == run.requests > 0 and 0.02 <= run.ttft_s.p50 < 0.3    # the server waits 20 ms
    assert '<testsuites tests="9" failures="0"' in (tmp_path / "gate.xml").read_text()
    assert ": passed" in (tmp_path / "gate.md").read_text()
    shown, cuts = rendered(view("gate").render, result, 80)
    assert cuts == [] and max(len(line) for line in shown.splitlines()) <= 80, shown


@pytest.mark.live
def test_a_bound_no_server_meets_fails_with_exit_1(tmp_path):
    with serve(FakeOpenAI(ttft_s=0.02)) as url:
        res = runner.invoke(app, ["gate", str(gate_file(tmp_path, ["ttft_s.p50 <= 0.001", "error_ratio == 0"], url)),
                                  "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    failed = [c for c in doc["checks"] if not c["passed"]]
    assert [c["check"] for c in failed] == ["ttft_s.p50 <= 0.001"] and failed[0]["measured"] > 0.01


@pytest.mark.live
def test_a_slower_endpoint_fails_against_the_baseline_of_a_faster_one(tmp_path):
    checks = ["ttft_s.p90 <= baseline +50%", "goodput_rps >= baseline"]
    with serve(FakeOpenAI(ttft_s=0.02)) as fast, serve(FakeOpenAI(ttft_s=0.25)) as slow:
        base = tmp_path / "base.json"
        made = runner.invoke(app, ["run", fast, "-w", "short", "--rate", "4", "--duration", "1.5", "--out", str(base)])
        assert made.exit_code == 0, made.output
        path = gate_file(tmp_path, checks, fast)
        same = runner.invoke(app, ["gate", str(path), "--baseline", str(base)])
        worse = runner.invoke(app, ["gate", str(path), "--target", slow, "--baseline", str(base)])
    assert same.exit_code == 0, same.output
    assert worse.exit_code == 1, worse.output
    assert "FAIL" in worse.output and "baseline" in words(worse.output)


@pytest.mark.live
def test_saved_runs_are_judged_without_a_server_and_must_match_mix_and_rate(tmp_path):
    with serve(FakeOpenAI(ttft_s=0.02)) as url:
        run = tmp_path / "run.json"
        made = runner.invoke(app, ["run", url, "--rate", "4", "--duration", "1.5", "--out", str(run)])
        assert made.exit_code == 0, made.output
    path = gate_file(tmp_path, ["ttft_s.p90 <= 0.3"], url)
    res = runner.invoke(app, ["gate", str(path), "--results", str(run), "--out", str(tmp_path / "g.json")])
    assert res.exit_code == 0, res.output
    assert f"live runs of {url} from" in words(res.output)
    assert load_result(tmp_path / "g.json").results == [str(run)]
    (tmp_path / "other.toml").write_text(path.read_text().replace("rate_rps = 4", "rate_rps = 8"))
    res = runner.invoke(app, ["gate", str(tmp_path / "other.toml"), "--results", str(run)])
    assert res.exit_code == 2 and "needs a run of short 8 req/s" in words(res.output), res.output
    res = runner.invoke(app, ["gate", str(path), "--baseline", str(tmp_path / "g.json"), "--results", str(run)])
    assert res.exit_code == 0, res.output   # an LLM gate's result is a baseline too


@pytest.mark.live
def test_an_endpoint_that_cannot_be_reached_cannot_be_judged_exit_2(tmp_path):
    res = runner.invoke(app, ["gate", str(gate_file(tmp_path, ["ttft_s.p90 <= 0.3"]))])
    assert res.exit_code == 2, res.output
    assert "CANNOT JUDGE" in res.output and f"cannot reach {NOWHERE}" in words(res.output)


@pytest.mark.live
def test_sweep_url_check_judges_the_knee_exit_1_when_one_fails(tmp_path):
    with serve(FakeOpenAI(ttft_s=0.02, queue_s=0.06, itl_s=0.002)) as url:
        res = runner.invoke(app, ["sweep", url, "--start-rate", "4", "--step-duration", "1", "--tolerance", "0.5",
                                  "--set", "slo_ttft_s=0.3", "--min-goodput", "0.9", "--out", str(tmp_path / "s.json"),
                                  "--check", "max_rate_within_slo >= 1", "--check", "max_rate_within_slo >= 10000"])
    assert res.exit_code == 1, res.output
    text = words(res.output)
    assert "pass: max_rate_within_slo >= 1 (" in text and "FAIL: max_rate_within_slo >= 10000 (" in text
    # the saved sweep, judged by a gate file's [[sweep]] table as a request-level sweep is
    (tmp_path / "sweep.toml").write_text(f'[[sweep]]\ntarget = "{url}"\nchecks = ["max_rate_within_slo >= 1"]\n')
    res = runner.invoke(app, ["gate", str(tmp_path / "sweep.toml"), "--results", str(tmp_path / "s.json")])
    assert res.exit_code == 0 and "PASSED: 1 passed, 0 failed of 1 checks" in words(res.output), res.output


# -- live and slow: the tiny decoder served, the shipped example --------------------------------

@pytest.mark.slow
@pytest.mark.live
def test_the_example_passes_on_continuous_batching_and_fails_static_against_its_baseline(tmp_path):
    from tests.harness.test_llm_url import _served

    continuous, c_url = _served("llm-continuous")
    static, s_url = _served("llm-static")
    try:
        base = tmp_path / "base.json"
        passed = runner.invoke(app, ["gate", str(EXAMPLE), "--target", c_url, "--out", str(base)])
        failed = runner.invoke(app, ["gate", str(EXAMPLE), "--target", s_url, "--baseline", str(base)])
    finally:
        for proc in (continuous, static):
            proc.terminate()
        for proc in (continuous, static):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:  # llm-static may still hold the abandoned requests
                proc.kill()
                proc.wait(20)
    assert passed.exit_code == 0, passed.output
    assert failed.exit_code == 1, failed.output
    result = load_result(base)
    assert isinstance(result, GateResult) and result.llm and result.llm[0].settings.targets[0].model == "tiny-llm"


@pytest.mark.live
def test_a_gate_drives_its_run_over_driver_processes(tmp_path):
    """`driver_procs = 2`: the gate's run split over two processes, as `run URL --driver-procs 2`."""
    with serve(FakeOpenAI(ttft_s=0.01, itl_s=0.002)) as url:
        path = gate_file(tmp_path, ["error_ratio == 0", "finished >= 1"], url, driver_procs=2)
        res = runner.invoke(app, ["gate", str(path), "--out", str(tmp_path / "gate.json")])
    assert res.exit_code == 0, res.output
    result = load_result(tmp_path / "gate.json")
    assert isinstance(result, GateResult) and result.llm is not None
    run = result.llm[0].runs[0]
    assert run.traffic is not None and run.traffic.driver_procs == 2 and run.finished == run.requests > 0

