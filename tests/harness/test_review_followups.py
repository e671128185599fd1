"""The review's follow-ups on hand-made runs: bad and calm days, detection times from the onset,
the dashboard's first row chosen by what caught the bad days, and the canary plan chosen by the
bar and its blast radius. Pure: no simulation."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from harness.analysis.review.alerts import BaselineRun, alerts_answer
from harness.analysis.review.canary import canary_answer
from harness.analysis.variants import knobs_of
from harness.results.canary import CanaryCell, CanaryResult, CanaryRun
from targets.spec import resolve_target
from reports.review_followups import alerts_lines, canary_lines, render_alerts
from workloads.loader import load_workload

N = 40
LABEL, KNOBS = knobs_of("hardened")
GPUS = resolve_target("hardened").fleet_gpus  # all alive: GpuCapacityLost holds its peace


def _ts(good: list[float] | None = None, queue: list[float] | None = None, attempts: float = 100.0) -> dict:
    """A run's per-window series: 100 answers a second, `good` of them OK within the SLO."""
    return {"window_s": 1.0, "answered_rps": [100.0] * N, "answered_good_rps": good or [100.0] * N,
            "shed_rps": [0.0] * N, "attempts_rps": [attempts] * N, "offered_rps": [100.0] * N,
            "gpu_busy": [0.5] * N, "queue_depth": queue or [0.0] * N, "gpus_alive": [float(GPUS)] * N}


def _run(scenario: str, ts: dict, goodput: float) -> BaselineRun:
    return BaselineRun(LABEL, KNOBS, scenario, load_workload(scenario), ts, goodput)


@pytest.fixture(scope="module")
def answer():
    onset = 10  # spike.toml's spike starts 10 s in
    assert load_workload("spike").phases[0].at_s == onset
    bad = [100.0] * onset + [40.0] * (N - onset)
    queue = [0.0] * onset + [1e6] * (N - onset)  # far past half the SLO from the onset on
    runs = [_run("steady", _ts(), 1.0), _run("spike", _ts(good=bad, queue=queue), 0.7),
            _run("night", _ts(good=[50.0] * N), 0.5),  # no disturbance, but burning the budget 50x
            _run("diurnal", _ts(good=[98.5] * N), 0.985)]  # under the 99% objective, but burning only 1.5x
    return alerts_answer(runs, LABEL, "hand-made runs")


def test_bad_and_calm_days_and_detection_from_the_onset(answer):
    days = {d.scenario: d for d in answer.days}
    assert not days["steady"].bad and days["steady"].fired == [] and answer.false_alarms == []
    spike = days["spike"]
    # 60% bad from the window at 10 s. Slow burn (6%; windows 360 s and 30 s, both still young, so
    # both hold every window so far): at t = 11 s 60 / 1100 = 5.5%, at t = 12 s 120 / 1200 = 10%:
    # fires 2 s after the onset. Fast burn (14.4%): its 60 s window passes only at t = 14 s (240 / 1400).
    assert spike.bad and spike.onset_s == 10.0
    assert (spike.first_rule, spike.delay_s) == ("GoodputBudgetSlowBurn", 2.0)
    night = days["night"]  # bad throughout: timed from the start
    assert night.bad and night.onset_s is None and night.delay_s == 1.0 and answer.missed == []
    # Slower than the slow page (6x) is set to catch: a calm day, and nothing fired.
    assert not days["diurnal"].bad and days["diurnal"].fired == []


def test_first_row_is_the_slo_then_the_leading_signals_that_caught_most(answer):
    first, second, _third = answer.metrics
    assert first.signal == "error-ratio" and first.detected == [f"{LABEL}/night", f"{LABEL}/spike"]
    # Only the queue caught a bad day among the leading signals (spike, after its 5 s for:).
    assert second.signal == "queue-delay-s" and second.detected == [f"{LABEL}/spike"]
    assert second.median_delay_s == 6.0 and second.rules[0].rule == "QueueDelayHigh"
    assert [r.rule for r in first.rules] == ["GoodputBudgetFastBurn", "GoodputBudgetSlowBurn"]
    assert first.rules[0].conditions == [(60.0, pytest.approx(0.144)), (5.0, pytest.approx(0.144))]


def test_a_signal_that_fires_on_a_calm_day_is_not_chosen():
    calm_retrying = _run("steady", _ts(attempts=110.0), 1.0)  # 10% retries on a calm day: RetryRateHigh fires
    bad = _run("night", _ts(good=[50.0] * N, attempts=110.0), 0.5)
    a = alerts_answer([calm_retrying, bad], LABEL, "hand-made runs")
    assert a.false_alarms == [f"{LABEL}/steady"]
    assert "retry-ratio" not in [m.signal for m in a.metrics]


def test_alerts_words_quote_thresholds_and_delays(answer):
    text = "\n".join(alerts_lines(answer))
    assert "GoodputBudgetFastBurn (page) above 14.4% over 60 s and 14.4% over 5 s" in text
    assert f"{LABEL}/spike: GoodputBudgetSlowBurn 2 s after the onset" in text
    assert "Missed (nothing within 120 s): none." in text
    console = Console(width=80, record=True, color_system=None)
    render_alerts(answer, console)
    assert max(len(line) for line in console.export_text().splitlines()) <= 80


def _cell(plan: str, day: str, bad: bool, decisions: list[str], served: int) -> CanaryCell:
    runs = [CanaryRun(seed=i, decision=d, decided_at_s=10.0 * (i + 1), step=0, canary_requests=served,
                      wrong_version=0) for i, d in enumerate(decisions)]
    back = sum(d == "rollback" for d in decisions)
    return CanaryCell(plan=plan, day=day, bad=bad, runs=runs, rollback_share=back / len(runs),
                      promote_share=1 - back / len(runs), median_decision_s=10.0, median_blast_radius=served,
                      wrong_version=0)


def test_the_plan_meeting_the_bar_with_the_smallest_blast_radius_is_recommended():
    ok, back = ["promote"] * 20, ["rollback"] * 20
    cells = [_cell("wide", "good", False, ok, 900), _cell("wide", "slow", True, back, 900),
             _cell("narrow", "good", False, ok, 100), _cell("narrow", "slow", True, back, 100),
             _cell("jumpy", "good", False, ["rollback"] * 2 + ok[2:], 50), _cell("jumpy", "slow", True, back, 50),
             # the cache case judges the target, not the plan: missing it does not fail "narrow"
             _cell("narrow", "wrong-behind-exact-cache", True, ok, 100)]
    result = CanaryResult(target="hardened", seeds=20, plans={"wide": "", "narrow": "", "jumpy": ""}, cells=cells)
    a = canary_answer(result, "hand-made")
    by = {p.plan: p for p in a.plans}
    assert by["narrow"].caught == 1.0 and by["narrow"].meets_bar
    assert by["jumpy"].false_rollback == 0.1 and not by["jumpy"].meets_bar  # smallest radius, too many false
    # 0 of 20 good canaries rolled back: the exact 95% upper bound is 1 - 0.025^(1/20).
    assert by["narrow"].false_rollback_high == pytest.approx(1 - 0.025 ** (1 / 20))
    assert a.recommended == "narrow"
    assert np.isclose(by["narrow"].median_blast_radius, 100)
    text = "\n".join(canary_lines(a))
    assert "Recommended: narrow" in text and "Behind the doc's exact-payload cache, narrow rolled back 0%" in text


def _plan_cells(plan: str, days: list[tuple[str, bool]]) -> list[CanaryCell]:
    return [_cell(plan, day, bad, ["rollback" if bad else "promote"] * 3, 10) for day, bad in days]


def test_the_canary_text_says_the_days_and_bar_that_ran_and_changes_with_them():
    from dataclasses import replace

    from harness.analysis.canary.days import CANARY_DAYS, day_figures
    from targets.versions import ModelVersion

    names = ["good", "good-during-spike", "slow", "erroring", "wrong"]
    cells = _plan_cells("careful", [(d, CANARY_DAYS[d].bad) for d in names])
    days = {d: day_figures(CANARY_DAYS[d]) for d in names}
    ran = canary_answer(CanaryResult(target="hardened", seeds=3, plans={"careful": ""}, cells=cells, days=days), "here")
    text = "\n".join(canary_lines(ran))
    assert ("good canaries (good: steady traffic; good-during-spike: spike traffic: any rollback is false) and bad "
            "ones (slow: batch time +50%; erroring: 2% 5xx; wrong: 30% of answers in another class)") in text
    assert ">= 95% of bad canaries rolled back, <= 5% of good ones" in text
    assert "`harness canary careful --seeds 20`" in text
    # Another plan of days (a slower canary, no spike) and another bar: other words, none of the old ones.
    slower = replace(CANARY_DAYS["slow"], version=ModelVersion(name="v2", cost_factor=2.0))
    days2 = {"good": days["good"], "slow": day_figures(slower)}
    cells2 = _plan_cells("fast", [("good", False), ("slow", True)])
    other = canary_answer(CanaryResult(target="hardened", seeds=3, plans={"fast": ""}, cells=cells2, days=days2),
                          "here", min_caught=0.9, max_false_rollback=0.1)
    text2 = "\n".join(canary_lines(other))
    assert "bad ones (slow: batch time +100%)" in text2 and ">= 90% of bad canaries rolled back, <= 10%" in text2
    for gone in ("+50%", "spike", "2% 5xx", "30%", ">= 95%", "<= 5%", "careful"):
        assert gone not in text2


def test_the_live_canary_text_says_the_live_days():
    from harness.analysis.canary.live import LIVE_DAYS, live_day_figures

    names = ["good", "slow", "wrong"]
    cells = _plan_cells("careful", [(d, LIVE_DAYS[d].bad) for d in names])
    result = CanaryResult(mode="live", target="hardened", seeds=1, plans={"careful": ""}, cells=cells,
                          days={d: live_day_figures(LIVE_DAYS[d]) for d in names})
    text = "\n".join(canary_lines(canary_answer(result, "a saved live result")))
    assert "(good: steady traffic: any rollback is false)" in text and "spike" not in text
    assert "bad ones (slow: batch time +50%; wrong: another seed's weights (other answers))" in text
    assert "`harness canary careful --mode live --seeds 20`" in text


def test_a_canary_result_without_days_still_reads():
    cells = _plan_cells("careful", [("good", False), ("slow", True)])
    text = "\n".join(canary_lines(canary_answer(CanaryResult(target="hardened", seeds=3, plans={"careful": ""},
                                                                 cells=cells), "an old file")))
    assert "good canaries (good: any rollback is false) and bad ones (slow)" in text
