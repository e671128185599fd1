"""CI gates: thresholds, wildcards, baselines, paired gates, exit codes, bad
files and the JUnit/Markdown reports. Every run is `night` cut to 30 s (about
90 requests at 3 QPS), where hardened answers in one batch time and naive,
waiting for full batches, never does."""

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.engine.jobs import Jobs
from harness.gate.check import lookup, run_gate
from harness.gate.file import load_gate_file
from harness.results import from_json, load_result
from harness.results.gate import GateResult
from harness.results.io import clean
from reports.gate import junit_xml, markdown
from workloads.loader import ConfigError

GOOD = """
[defaults]
target = "hardened"
duration_s = 30

[[scenario]]
name = "night"
checks = ["latency_s.p99 <= 0.3", "goodput_ratio >= 0.99", "tenants.*.p99_s <= 0.3", "requests.lost == 0",
          "latency_s.p99 <= baseline +10%"]

[[paired]]
scenario = "night"
b = "naive"
checks = ["goodput_ratio >= 2"]
"""


def write(tmp_path: Path, text: str, name: str = "gates.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("gate"), GOOD)
    return path, run_gate(str(path), jobs=Jobs(workers=1))


def test_hardened_passes_and_reports_measured_values(passing):
    _, res = passing
    assert isinstance(res, GateResult) and res.passed is True
    rows = {c.check: c for c in res.checks}
    hardened = res.summaries["night"]["hardened"]
    assert rows["latency_s.p99 <= 0.3"].measured == hardened.latency_s.p99 < 0.3
    assert rows["tenants.*.p99_s <= 0.3"].measured == max(t.p99_s for t in hardened.tenants.values())
    assert rows["latency_s.p99 <= baseline +10%"].skipped is True
    ratio = rows["goodput_ratio >= 2"]
    naive = res.summaries["night"]["naive"]
    assert ratio.target == "hardened/naive"
    assert ratio.measured == pytest.approx(hardened.goodput_ratio / naive.goodput_ratio)


def test_naive_fails_the_same_file(passing):
    path, _ = passing
    res = run_gate(str(path), target="naive", jobs=Jobs(workers=1))
    assert res.passed is False
    failed = {c.check for c in res.failed}
    # naive's night: full batches never fill, so the tail is never answered
    assert {"latency_s.p99 <= 0.3", "goodput_ratio >= 0.99"} <= failed
    # The pair's A is the target under test, its B the reference naive: naive / naive says nothing.
    pair = next(c for c in res.checks if c.check == "goodput_ratio >= 2")
    assert pair.skipped and pair.target == "naive/naive" and "a ratio of a target with itself" in pair.note
    never = next(c for c in res.checks if c.check == "latency_s.p99 <= 0.3")
    assert never.measured is None or math.isinf(never.measured)


def test_cli_exit_codes_and_reports(passing, tmp_path):
    path, _ = passing
    runner = CliRunner()
    junit, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    ok = runner.invoke(app, ["gate", str(path), "--jobs", "1", "--junit", str(junit), "--markdown", str(md),
                             "--out", str(tmp_path / "gate.json")])
    assert ok.exit_code == 0, ok.output
    assert "PASSED" in ok.output and "latency_s.p99" in ok.output
    suite = ET.parse(junit).getroot()
    cases = suite.findall(".//testcase")
    assert len(cases) == 6 and suite.get("failures") == "0" and suite.get("skipped") == "1"
    assert "| night | hardened |" in md.read_text()
    bad = runner.invoke(app, ["gate", str(path), "--jobs", "1", "--target", "naive", "--junit", str(junit),
                              "--out", str(tmp_path / "gate-naive.json")])
    assert bad.exit_code == 1, bad.output
    assert "FAIL" in bad.output
    assert int(ET.parse(junit).getroot().get("failures")) >= 3
    # The saved result is a baseline for the next run, and re-renders.
    again = runner.invoke(app, ["gate", str(path), "--jobs", "1", "--baseline", str(tmp_path / "gate.json"),
                                "--out", str(tmp_path / "gate2.json")])
    assert again.exit_code == 0 and "skip" not in again.output, again.output
    assert isinstance(load_result(tmp_path / "gate2.json"), GateResult)


@pytest.mark.parametrize("text, key, problem", [
    ('[[scenario]]\nname = "night"\nchecks = ["latency.p99 <= 0.3"]', "scenario[0].checks[0]", "unknown summary key"),
    ('[[scenario]]\nname = "night"\nchecks = ["goodput_ratio >= 0.9", "p99 =< 0.3"]', "scenario[0].checks[1]", "cannot parse"),
    ('[[scenario]]\nname = "night"\nchecks = ["goodput_ratio >= lots"]', "scenario[0].checks[0]", "not a number"),
    ('[[scenario]]\nname = "nowhere"\nchecks = ["goodput_ratio >= 0.9"]', "scenario[0].name", "unknown workload"),
    ('[[scenario]]\nname = "night"\ntarget = "hardend"\nchecks = ["goodput_ratio >= 0.9"]', "scenario[0].target", "unknown target"),
    ('[[scenario]]\nname = "night"\nchekcs = ["goodput_ratio >= 0.9"]', "scenario[0].chekcs", "unknown key"),
    ('[defaults]\nduration_s = -3\n[[scenario]]\nname = "night"\nchecks = ["goodput_ratio >= 1"]', "defaults.duration_s", "positive"),
    ('[[scenario]]\nname = "night"\nchecks = ["tenants.nobody.p99_s <= 0.3"]', "scenario[0].checks[0]", "no tenant 'nobody'"),
    ('[[scenario]]\nname = "night"\nchecks = ["latency_s <= 0.3"]', "scenario[0].checks[0]", "is a table"),
    ('[[paired]]\nscenario = "night"\nb = "naive"\nchecks = ["goodput_ratio >= baseline"]', "paired[0].checks[0]", "not with a baseline"),
    ('[defaults]\nseed = 1\n', "scenario", "no [[scenario]]"),
])
def test_bad_files_name_the_key_and_exit_2(tmp_path, text, key, problem):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        run_gate(str(path), jobs=Jobs(workers=1))
    assert f"{path}: key '{key}'" in str(exc.value) and problem in str(exc.value)
    result = CliRunner().invoke(app, ["gate", str(path), "--jobs", "1"])
    assert result.exit_code == 2
    assert key in result.output


def test_baseline_regression_within_tolerance(passing, tmp_path):
    path, res = passing
    base = json.loads(json.dumps(res.to_json()))
    same = run_gate(str(path), baseline=from_json(base), jobs=Jobs(workers=1))
    row = next(c for c in same.checks if "baseline" in c.check)
    assert row.passed and not row.skipped
    assert row.threshold == pytest.approx(1.1 * res.summaries["night"]["hardened"].latency_s.p99)
    # A baseline 20% faster than today: today's p99 is a >10% regression.
    base["summaries"]["night"]["hardened"]["latency_s"]["p99"] /= 1.2
    worse = run_gate(str(path), baseline=from_json(base), jobs=Jobs(workers=1))
    row = next(c for c in worse.checks if "baseline" in c.check)
    assert not row.passed and worse.passed is False


def test_a_run_result_is_a_baseline_too(passing):
    path, res = passing
    summary = clean(res.summaries["night"]["hardened"].model_dump(by_alias=True))
    run = from_json({"schema": "harness.result/1", "kind": "run", "summary": summary, "target_config": {},
                     "workload_config": {}, "seed": 1, "mode": "sim"})
    again = run_gate(str(path), baseline=run, jobs=Jobs(workers=1))
    row = next(c for c in again.checks if "baseline" in c.check)
    assert row.passed and not row.skipped and row.threshold == pytest.approx(1.1 * summary["latency_s"]["p99"])


def test_default_tolerance_follows_the_operator(tmp_path):
    gf = load_gate_file(write(tmp_path, '[defaults]\ntolerance = 0.2\n[[scenario]]\nname = "night"\n'
                                        'checks = ["latency_s.p99 <= baseline", "goodput_ratio >= baseline", '
                                        '"requests.lost == baseline", "amplification < baseline -5%"]'))
    assert [c.relative for c in gf.gates[0].checks] == [0.2, -0.2, 0.0, -0.05]


def test_lookup_expands_wildcards_and_reads_null_latency_as_never(passing):
    s = {"latency_s": {"p99": None}, "cache": {"hit_rate": None},
         "tenants": {"a": {"p99_s": 0.1}, "b": {"p99_s": None}}}
    assert lookup(s, "latency_s.p99") == [("", math.inf)]
    assert lookup(s, "cache.hit_rate") == [("", None)]
    assert dict(lookup(s, "tenants.*.p99_s")) == {"a": 0.1, "b": math.inf}
    typed = passing[1].summaries["night"]["hardened"]  # a typed RunSummary reads the same way
    assert lookup(typed, "latency_s.p99") == [("", typed.latency_s.p99)]
    assert dict(lookup(typed, "tenants.*.p99_s")) == {k: t.p99_s for k, t in typed.tenants.items()}


def test_reports_are_well_formed(passing):
    _, res = passing
    root = ET.fromstring(junit_xml(res))
    assert root.tag == "testsuites" and len(root.findall(".//testcase")) == len(res.checks)
    text = markdown(res)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(res.checks) and "passed" in text.splitlines()[0]  # header + one per check
    assert "5 of 6 checks passed, 1 skipped" in text


@pytest.mark.parametrize("name", ["ci.toml", "live.toml"])
def test_shipped_gate_files_parse(name):
    gf = load_gate_file(Path(__file__).parents[2] / "harness" / "gate" / name)
    assert gf.gates and all(g.checks for g in gf.gates)


def test_target_replaces_only_the_target_under_test(tmp_path):
    path = write(tmp_path, """
[defaults]
target = "hardened"
[[scenario]]
name = "night"
checks = ["goodput_ratio >= 0.9"]
[[scenario]]
name = "night"
target = "naive"
checks = ["goodput_ratio <= 0.9"]
[[paired]]
scenario = "night"
a = "hardened"
b = "naive"
checks = ["goodput_ratio >= 2"]
[[paired]]
scenario = "night"
a = "naive-full-batch-only"
b = "hardened"
checks = ["goodput_ratio >= 0.5"]
""")
    gf = load_gate_file(path, target="hardened:gpus=9")
    pairs = [(g.target, g.b) for g in gf.gates]
    assert pairs == [("hardened:gpus=9", None), ("naive", None), ("hardened:gpus=9", "naive"),
                     ("naive-full-batch-only", "hardened:gpus=9")]
    # Only where the file names its target under test; a pair naming the same target twice is an error.
    bad = write(tmp_path, '[[paired]]\nscenario = "night"\na = "naive"\nb = "naive"\nchecks = ["goodput_ratio >= 1"]',
                "same.toml")
    with pytest.raises(ConfigError, match="key 'paired\\[0\\].b': A and B are both 'naive'"):
        load_gate_file(bad)


LIVE_GATE = """
[defaults]
target = "hardened"
[[scenario]]
name = "night"
checks = ["goodput_ratio >= 0.9", "latency_s.p99 <= baseline +10%"]
"""


def _saved_run(passing, tmp_path: Path, name: str, **changes) -> Path:
    """The passing gate's night/hardened run, saved as a run result with `changes` to its summary."""
    summary = clean(passing[1].summaries["night"]["hardened"].model_dump(by_alias=True))
    summary.update(changes)
    doc = {"schema": "harness.result/1", "kind": "run", "summary": summary, "target_config": {},
           "workload_config": {}, "seed": 1, "mode": summary["mode"]}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_a_gate_judges_saved_live_runs_and_will_not_judge_an_invalid_one(passing, tmp_path):
    gate = write(tmp_path, LIVE_GATE)
    reasons = ["driver fell behind: send lag p99 19.6 ms > 10.0 ms", "requests waited for a connection"]
    good = _saved_run(passing, tmp_path, "good.json", mode="live")
    bad = _saved_run(passing, tmp_path, "bad.json", mode="live", valid=False, invalid_reasons=reasons)
    runner = CliRunner()
    # A valid live run is judged like a sim run: its own figures, no sim run.
    ok = runner.invoke(app, ["gate", str(gate), "--results", str(good), "--out", str(tmp_path / "g1.json")])
    assert ok.exit_code == 0, ok.output
    judged = load_result(tmp_path / "g1.json")
    assert judged.summaries["night"]["hardened"].mode == "live" and judged.results == [str(good)]
    # An invalid one: exit 2, neither pass nor fail, with the run's reasons.
    no = runner.invoke(app, ["gate", str(gate), "--results", str(bad), "--out", str(tmp_path / "g2.json")])
    text = " ".join(no.output.split())
    assert no.exit_code == 2, no.output
    assert "CANNOT JUDGE" in text and "the live run of night on hardened is invalid: driver fell behind" in text
    result = load_result(tmp_path / "g2.json")
    assert result.verdict == "cannot judge" and result.passed is False and result.exit_code == 2
    # An invalid baseline cannot judge a regression either, even when the sim run itself is fine.
    base = runner.invoke(app, ["gate", str(gate), "--jobs", "1", "--baseline", str(bad),
                               "--out", str(tmp_path / "g3.json")])
    assert base.exit_code == 2 and "the baseline run of night on hardened is invalid" in " ".join(base.output.split())
    # A gate that needs a run the given results lack is a bad invocation.
    missing = runner.invoke(app, ["gate", str(gate), "--target", "naive", "--results", str(good)])
    assert missing.exit_code == 2 and "needs a run of night on naive" in " ".join(missing.output.split())


def test_the_terminal_view_keeps_every_note_whole_at_80_columns():
    # ci.toml's widest rows: a wildcard check's note and a canary row's interval. Before, at
    # 80 columns the columns' minimums overran the width and rich cut the note ("all 10
    # pass; wor" / "t8"; "95% CI 0.2924..1" / "of 3 seeds").
    from io import StringIO

    from rich.console import Console

    from harness.results.gate import CheckOutcome
    from reports.gate import render

    def outcome(scenario: str, check: str, measured: float, note: str) -> CheckOutcome:
        key, op, threshold = check.split(" ")
        return CheckOutcome(scenario=scenario, target="hardened", key=key, op=op, check=check,
                            threshold=float(threshold), measured=measured, passed=True, note=note, skipped=False)

    notes = ["all 10 pass; worst t8", "95% CI 0.2924..1 3 of 3 seeds"]
    result = GateResult(gate_file="ci.toml", seed=1, checks=[
        outcome("steady", "tenants.*.p99_s <= 0.3", 0.104, notes[0]),
        outcome("canary fast/slow", "median_blast_radius <= 500", 252, notes[1])],
        passed=True, summaries={}, durations={}, wall_s=1.0)
    buf = StringIO()
    render(result, Console(file=buf, width=80, force_terminal=False))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    words = " ".join(text.split())
    for note in notes:
        for word in note.split():
            assert f" {word} " in f" {words} ", (word, text)
