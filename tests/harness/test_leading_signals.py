"""One choice of leading signals: the dashboard `harness alerts` writes puts on its first row the
signals the ranking `harness review` prints chose (harness.analysis.alerts.leading), measured on
its own days or taken from a saved review (`--review`), and on the same days the two name the same
signals. (On their default runs, the full bad-day suite and a full review of hardened, both name
error-ratio, shed-ratio, gpus-lost; a review's shortened runs can rank otherwise, hence `--review`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis.alerts import ProvenDay, leading_from_days, scenario_alerts
from harness.analysis.alerts.eval import Series
from harness.analysis.review.alerts import BaselineRun, alerts_answer
from harness.analysis.review.run import review
from harness.cli import app
from harness.engine.jobs import Jobs, SimJob
from harness.ops.dashboard import UNMEASURED_ROW, dashboard, first_row_titles
from harness.ops.rules import Signal, build_rules, shape_of
from harness.results import load_result
from targets.spec import resolve_target
from tests.harness.alert_suite import QUICK_SUITE

# The review's experiments on the same two bad days (its runs shortened around each disturbance).
REVIEW_SCENARIOS = {"no-admission-control": ["spike"], "no-failure-handling": ["gpu-outage"]}


def test_the_first_row_follows_the_signals_given_and_says_by_what() -> None:
    cfg = resolve_target("hardened")
    board = dashboard(cfg, first_row=[Signal.SHED_RATIO, Signal.GPUS_LOST], chosen_by="a test")
    assert first_row_titles(board) == ["Goodput SLI: requests answered OK within the SLO, at the front door",
                                       "Sheds: share of answers refused 429/503 (API servers and balancer)",
                                       "GPUs down: share of the fleet", "Error-budget burn rate"]
    assert board["panels"][0]["title"].startswith("The first row, chosen by a test: error-ratio, shed-ratio")
    unmeasured = dashboard(cfg)
    assert "not measured" in unmeasured["panels"][0]["title"]
    assert len(first_row_titles(unmeasured)) == len(UNMEASURED_ROW) + 1
    titles = [p["title"] for p in board["panels"]]
    assert len(titles) == len(set(titles))  # every signal once: the rest in a row of their own


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("leading")
    suite = out / "quick.toml"
    suite.write_text(QUICK_SUITE)
    res = CliRunner().invoke(app, ["alerts", "hardened", "--out", str(out), "--suite", str(suite), "-q", "-j", "1"])
    assert res.exit_code == 0, res.output
    alerts = load_result(out / "hardened-alerts-result.json")
    rev = review("hardened", flaw_scenarios=REVIEW_SCENARIOS, jobs=Jobs(workers=1), llm=None)  # no LLM section
    (out / "review.json").write_text(json.dumps(rev.to_json()))
    return out, alerts, rev


@pytest.mark.slow
def test_harness_alerts_and_harness_review_name_the_same_leading_signals(both) -> None:
    """Both commands rank with harness.analysis.alerts.leading: on the same runs they name the same
    row, through each one's own entry point (the review's `alerts_answer`, alerts' `leading_from_days`),
    and the row `harness alerts` names is the one its dashboard file puts first."""
    out, alerts, _ = both
    cfg = resolve_target("hardened")
    rules = build_rules(cfg)
    names = ["spike", "gpu-outage", "steady", "diurnal", "night"]
    jobs = [SimJob("hardened", name, 1, duration_s=20.0) for name in names]
    runs = [job.run() for job in jobs]
    baseline = [BaselineRun("hardened", cfg.model_dump(), job.workload, job.workload_config(), run.timeseries,
                            run.summary.goodput_ratio) for job, run in zip(jobs, runs)]
    by_review = [m.signal for m in alerts_answer(baseline, "hardened", "the same runs").metrics]
    days = [ProvenDay(scenario_alerts(job.workload, job.workload_config(), run.timeseries, rules, shape_of(cfg)),
                      Series.from_timeseries(run.timeseries), run.summary.goodput_ratio)
            for job, run in zip(jobs, runs)]
    by_alerts = [m.signal for m in leading_from_days("hardened", days, rules, cfg)]
    assert by_alerts == by_review and by_alerts[0] == "error-ratio" and len(by_alerts) == 3
    assert [m.signal for m in alerts.leading] == by_alerts  # `harness alerts --suite` ran these very days
    board = json.loads((out / "hardened-dashboard.json").read_text())
    assert board["panels"][0]["title"].endswith(": " + ", ".join(by_alerts))  # the file says the same


@pytest.mark.slow
def test_a_saved_reviews_row_is_the_dashboards(both, tmp_path: Path) -> None:
    out, _, rev = both
    res = CliRunner().invoke(app, ["alerts", "hardened", "--no-eval", "--review", str(out / "review.json"),
                                   "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.output
    saved = load_result(tmp_path / "hardened-alerts-result.json")
    assert [m.signal for m in saved.leading] == [m.signal for m in rev.alerts.metrics]
    assert "the review in" in saved.leading_source
    board = json.loads((tmp_path / "hardened-dashboard.json").read_text())
    assert board["panels"][0]["title"].endswith(": " + ", ".join(m.signal for m in rev.alerts.metrics))


def test_a_file_that_is_no_review_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "x.json"
    other.write_text("{}")
    res = CliRunner().invoke(app, ["alerts", "hardened", "--no-eval", "--review", str(other), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--review" in res.output
