"""Canary gates and canary suites: [[canary]] checks pass and fail on measured rollouts, read
exact interval bounds over seeds, refuse bad tables, and a suite's rollout gives the figures the
plan gives alone. Rollouts use a tiny plan (400 req/s, 2 s steps: ~0.1 s of CPU each), where a
slow canary is rolled back at the first step and a 2% erroring one is missed (too few answers)."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis.canary.days import run_canary
from harness.cli import app
from harness.engine.jobs import Jobs
from harness.gate.canary import canary_interval
from harness.gate.check import run_gate
from harness.gate.file import load_gate_file
from harness.gate.keys import CANARY_KEYS
from harness.results import load_result
from harness.results.canary import CanaryCell, CanaryRun
from harness.results.gate import GateResult
from workloads.loader import ConfigError

TINY = """name = "tiny"
rate_rps = 400
max_holds = 0
[analysis]
min_samples = 30
[[steps]]
weight = 0.2
duration_s = 2
[[steps]]
weight = 0.5
duration_s = 2
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("plan") / "tiny.toml"
    p.write_text(TINY)
    return str(p)


def gate_file(tmp_path: Path, plan: str, body: str) -> str:
    p = tmp_path / "gate.toml"
    p.write_text(f'[defaults]\nseeds = 3\n[[canary]]\nplan = "{plan}"\n{body}')
    return str(p)


def test_a_canary_gate_passes_on_a_caught_canary_and_fails_on_a_missed_one(plan, tmp_path) -> None:
    path = gate_file(tmp_path, plan, 'day = "slow"\nchecks = ["rollback_share == 1", "median_decision_s <= 2", '
                                     '"median_blast_radius <= 400"]\n'
                                     f'[[canary]]\nplan = "{plan}"\nday = "erroring"\n'
                                     'checks = ["rollback_share >= 0.5"]\n')
    res = run_gate(path, jobs=Jobs(workers=1))
    rows = {(c.scenario, c.check): c for c in res.checks}
    slow = [c for (s, _), c in rows.items() if s == "canary tiny/slow"]
    assert [c.passed for c in slow] == [True, True, True]
    assert slow[1].measured == 2.0  # the first step's analysis, at 2 s
    missed = rows[("canary tiny/erroring", "rollback_share >= 0.5")]
    assert (missed.passed, missed.measured) == (False, 0.0)  # a 2% error rate is missed by this plan
    assert res.passed is False and res.exit_code == 1
    assert [(c.plan, c.day, len(c.runs)) for r in res.canary or [] for c in r.cells] == \
        [("tiny", "slow", 3), ("tiny", "erroring", 3)]


def test_gate_result_round_trips_and_the_cli_exits_1_on_the_failing_check(plan, tmp_path) -> None:
    path = gate_file(tmp_path, plan, 'day = "erroring"\nseeds = 1\nchecks = ["promote_share >= 0.5", '
                                     '"rollback_share > 0"]\n')
    out = CliRunner().invoke(app, ["gate", path, "--jobs", "1", "--out", str(tmp_path / "g.json")])
    assert out.exit_code == 1, out.output
    doc = load_result(tmp_path / "g.json")
    assert isinstance(doc, GateResult) and [c.passed for c in doc.checks] == [True, False]
    assert doc.canary is not None and doc.canary[0].seeds == 1


def _cell(decisions: list[str], decided: list[float | None]) -> CanaryCell:
    runs = [CanaryRun(seed=i, decision=d, decided_at_s=t, step=0, canary_requests=100 * (i + 1), wrong_version=0)
            for i, (d, t) in enumerate(zip(decisions, decided))]
    return CanaryCell.of("p", "slow", True, runs)


def test_bounds_are_clopper_pearson_for_shares_and_order_statistics_for_medians() -> None:
    ci = canary_interval(_cell(["rollback"] * 10, [5.0] * 10), "rollback_share")
    assert (ci.mean, ci.hi) == (1.0, 1.0) and ci.lo == pytest.approx(0.025 ** (1 / 10))  # CP: all 10 of 10
    few = canary_interval(_cell(["rollback"] * 5, [5.0] * 5), "median_blast_radius")
    assert few.mean == 300 and not few.has_interval  # a 95% interval of a median needs 6 runs
    many = canary_interval(_cell(["rollback"] * 10, [float(i) for i in range(10)]), "median_decision_s")
    assert many.mean == 4.5 and many.lo <= 4.5 <= many.hi and (many.lo, many.hi) != (0.0, 9.0)


def test_a_bound_without_an_interval_fails_rather_than_read_the_median(plan, tmp_path) -> None:
    path = gate_file(tmp_path, plan, 'day = "slow"\nchecks = [{ check = "median_blast_radius <= 1000", '
                                     'bound = "upper" }, { check = "rollback_share >= 0.2", bound = "lower" }]\n')
    res = run_gate(path, jobs=Jobs(workers=1))
    median, share = res.checks
    assert median.passed is False and "unbounded" in median.note  # 3 runs: no 95% interval of a median
    assert share.passed is True and share.measured == pytest.approx(0.025 ** (1 / 3))  # CP lower, 3 of 3


@pytest.mark.parametrize("body, key, problem", [
    ('day = "sluggish"\nchecks = ["rollback_share >= 0.9"]', "canary[0].day", "unknown canary day"),
    ('day = "slow"\nchecks = ["rollback_rate >= 0.9"]', "canary[0].checks[0]", "unknown canary key 'rollback_rate'"),
    ('day = "slow"\nchecks = ["rollback_share >= baseline"]', "canary[0].checks[0]", "not a baseline"),
    ('day = "slow"\nseeds = 0\nchecks = ["rollback_share >= 0.9"]', "canary[0].seeds", "integer >= 1"),
    ('day = "slow"\nchecks = []', "canary[0].checks", "non-empty"),
    ('checks = ["rollback_share >= 0.9"]', "canary[0].day", "missing"),
])
def test_bad_canary_tables_name_the_key(plan, tmp_path, body: str, key: str, problem: str) -> None:
    path = gate_file(tmp_path, plan, body)
    with pytest.raises(ConfigError) as exc:
        load_gate_file(path)
    assert f"key '{key}'" in str(exc.value) and problem in str(exc.value), str(exc.value)


def test_the_ci_gate_checks_a_canary_and_the_keys_are_the_cells_numbers() -> None:
    ci = Path(__file__).parents[2] / "harness" / "gate" / "ci.toml"
    gf = load_gate_file(ci)
    assert [(g.plan, g.day, g.seeds) for g in gf.canary] == [("fast", "slow", 3)]
    assert [g.target for g in load_gate_file(ci, "naive").canary] == ["naive"]  # --target replaces it here too
    assert set(CANARY_KEYS) == {"rollback_share", "promote_share", "median_decision_s", "median_blast_radius",
                                "wrong_version"}


def test_a_suite_rollout_gives_the_figures_of_the_plan_run_alone(plan, tmp_path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[canary]]\nplan = "{plan}"\ndays = ["slow", "good"]\n')
    out = CliRunner().invoke(app, ["canary", "--suite", str(suite), "--seeds", "2", "--seed", "7", "--jobs", "1",
                                   "--out", str(tmp_path / "c.json"), "-q"])
    assert out.exit_code == 0, out.output
    via_suite = load_result(tmp_path / "c.json")
    alone = run_canary([plan], "hardened", 2, 7, ["good"], jobs=Jobs(workers=1))
    assert [c.day for c in via_suite.cells] == ["slow", "good"]
    assert via_suite.cells[1] == alone.cells[0]  # same runs, decisions, medians
    assert via_suite.cells[0].rollback_share == 1.0 and via_suite.cells[1].promote_share == 1.0


def test_a_gate_judges_a_saved_canary_result_and_names_a_missing_cell(plan, tmp_path) -> None:
    out = CliRunner().invoke(app, ["canary", plan, "--day", "slow", "--seeds", "1", "--jobs", "1",
                                   "--out", str(tmp_path / "c.json"), "-q"])
    assert out.exit_code == 0, out.output
    saved = [load_result(tmp_path / "c.json")]
    res = run_gate(gate_file(tmp_path, plan, 'day = "slow"\nchecks = ["rollback_share == 1"]\n'), results=saved)
    assert res.passed and res.checks[0].measured == 1.0 and res.canary is None
    with pytest.raises(ConfigError, match="needs canary rollouts of tiny/good on hardened; .* hold: tiny/slow"):
        run_gate(gate_file(tmp_path, plan, 'day = "good"\nchecks = ["rollback_share == 0"]\n'), results=saved)
