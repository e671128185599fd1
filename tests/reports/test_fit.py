"""The 80-column check itself (tests/reports/fit.py), and the views at their widest.

The every-command test (tests/harness/test_result_contract.py) renders what tiny runs
make; here are the widest cells the views meet at full scale: a live sweep (its send-lag
column, a 4-digit p99, sheds in the tens of thousands), every alert rule firing on the
bad days, both designs of a review's alerts follow-up, the LLM flaws at their longest
(tests/reports/data/llm-review-part.json: the LLM part of a full review)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from harness.results import load_result

from harness.results.alerts import AlertsResult, RuleFigures, RuleFiring, ScenarioAlerts
from harness.results.followups import AlertsAnswer, DayDetection
from harness.results.sweep import SweepResult, SweepStep
from reports import alerts as alerts_view
from reports import sweep as sweep_view
from reports.registry import view
from reports.review_followups import render_alerts
from tests.reports.fit import cut_cells, rendered

RULES = ("GoodputBudgetFastBurn", "GoodputBudgetSlowBurn", "QueueDelayHigh", "SheddingLoad", "RetryRateHigh",
         "GpuSaturated", "GpuCapacityLost")
BAD_DAYS = ("spike", "slowdown", "dominant-tenant", "gpu-outage", "variable-sizes")


def _table(*, prose: bool, cells: list[str]) -> Table:
    t = Table()
    t.add_column("name", no_wrap=True)
    t.add_column("words", overflow="fold" if prose else "ellipsis")
    for c in cells:
        t.add_row("x" * 30, c)
    return t


def _show(table: Table):
    return lambda _result, console: console.print(table)


def test_a_figure_cut_or_wrapped_is_found_and_prose_may_wrap_at_spaces() -> None:
    long_words = "the quick brown fox jumps over the lazy dog " * 3
    assert cut_cells(_show(_table(prose=True, cells=[long_words])), None, 60) == []
    cuts = cut_cells(_show(_table(prose=False, cells=[long_words])), None, 60)
    assert len(cuts) == 1 and "column 'words'" in cuts[0] and "cut or wrapped" in cuts[0]
    word = "GoodputBudgetFastBurn" * 2
    cuts = cut_cells(_show(_table(prose=True, cells=[word])), None, 60)
    assert len(cuts) == 1 and "a word of it broken" in cuts[0]
    assert cut_cells(_show(_table(prose=False, cells=["KNEE pass"])), None, 80) == []
    assert cut_cells(_show(_table(prose=False, cells=["KNEE pass"])), None, 38) != []  # "KNEE" over "pass"


def _live_sweep() -> SweepResult:
    def step(rate: float, passed: bool) -> SweepStep:
        return SweepStep(rate_rps=rate, duration_s=30.0, ran_s=12.3, stopped_early=True, unique=36_000,
                         goodput_rps=0.9 * rate, goodput_ratio=0.9, p99_s=1.234, p99_ok_s=9.876, shed=36_000,
                         timed_out=1_200, send_lag_p99_s=0.0123, passed=passed, why="", wall_s=12.3)
    return SweepResult(target="http://127.0.0.1:8000/predict", mode="live", seed=1, slo_s=0.3, min_goodput_ratio=0.99,
                       rel_tol=0.05, step_duration_s=30.0, max_rate_within_slo=1_768.0, first_failing_rate=2_500.0,
                       steps=[step(1_250.0, True), step(1_768.0, True), step(2_500.0, False)], wall_s=60.0)


def test_a_live_sweep_keeps_every_column_whole_and_a_sim_one_drops_the_send_lag() -> None:
    live = _live_sweep()
    text, cuts = rendered(sweep_view.render, live, 80)
    assert cuts == [] and "lag p99" in text and "KNEE" in text and "12.3/30" in text, "\n".join(cuts) + text
    sim = live.model_copy(update={"mode": "sim", "steps": [s.model_copy(update={"send_lag_p99_s": None})
                                                           for s in live.steps]})
    text, cuts = rendered(sweep_view.render, sim, 80)
    assert cuts == [] and "lag p99" not in text and "KNEE" in text


def test_alerts_with_every_rule_firing_on_every_bad_day_fit() -> None:
    rules = [RuleFigures(name=r, severity="page" if "Budget" in r else "warning", expr="x", for_s=0.416667,
                         summary="goodput SLO (0.99 within 0.3 s) burning 14.4x: 2% of a 30-day budget in an hour")
             for r in RULES]
    fired = [RuleFiring(rule=r, first_s=11.0 + i) for i, r in enumerate(RULES)]
    days = [ScenarioAlerts(scenario=d, onset_s=10.0, first_rule=RULES[1], first_s=11.0, delay_s=1.0, fired=fired)
            for d in BAD_DAYS]
    days.append(ScenarioAlerts(scenario="low-traffic", onset_s=None, first_rule=None, first_s=None, delay_s=None))
    missed = ScenarioAlerts(scenario="dominant-tenant", onset_s=10.0, first_rule=None, first_s=None, delay_s=None)
    result = AlertsResult(target="hardened", hour_s=60.0, objective=0.99, seed=1, rules=rules,
                          scenarios=[*days, missed])
    text, cuts = rendered(alerts_view.render, result, 80)
    assert cuts == [], "\n".join(cuts) + text
    assert "* GoodputBudgetSlowBurn 12 s" in text and "NONE after the onset" in text


def test_the_reviews_alerts_follow_up_fits_with_both_designs() -> None:
    days = [DayDetection(design=design, scenario=s, run_s=600.0, bad=s in BAD_DAYS, onset_s=10.0, goodput=0.699,
                         first_rule="GoodputBudgetFastBurn", delay_s=1.0, fired=list(RULES))
            for design in ("hardened", "hardened (flawed)") for s in ("low-traffic", *BAD_DAYS)]
    answer = AlertsAnswer(hour_s=60.0, objective=0.99, within_s=120.0, source="the ablation's runs", metrics=[],
                          days=days, missed=[], false_alarms=[])
    text, cuts = rendered(lambda a, console: render_alerts(a, console), answer, 80)
    assert cuts == [], "\n".join(cuts) + text
    assert "hardened (flawed)" in text and "dominant-tenant" in text


def test_the_llm_flaws_at_their_longest_fit() -> None:
    # The LLM part of a full review (60 s a point, every flaw; its runs dropped to keep the file small).
    result = load_result(Path(__file__).parent / "data" / "llm-review-part.json")
    text, cuts = rendered(view("llm").render, result, 80)
    assert cuts == [], "\n".join(cuts) + text
    assert "run-to-completion-batching" in text and "on dominant-tenant" in text
