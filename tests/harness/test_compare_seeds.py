"""Compare over seeds: a winner only where the paired interval of B - A excludes 0 and the
difference passes the noise threshold; a near-tie reads as a tie; one seed is unchanged."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.analysis.compare.verdicts import judge_seeds, scenario_verdicts
from harness.analysis.seeds import seed_set
from harness.results.compare import CompareResult, Winner
from reports.compare import overview_table, render, verdict_lines, verdicts_html
from tests.harness.summaries import summary
from workloads.answers import Answer
from workloads.model import WorkloadConfig

GOODPUT = Answer(figure="goodput_ratio")
P99 = Answer(figure="latency_ok_s.p99")


def steady(answers: list[dict]) -> WorkloadConfig:
    return WorkloadConfig.model_validate({
        "name": "steady", "phases": [{"kind": "constant", "duration_s": 10, "rate_rps": 100}], "answers": answers})


def runs(within: list[int], p99_ok: list[float], p99: list[float | None] | None = None) -> list:
    """One summary per seed, 1000 requests each (the rest late)."""
    return [summary(within=w, late=1000 - w, shed=0, timed_out=0, p99_ok=p, latency_s={"p99": q}, seed=i)
            for i, (w, p, q) in enumerate(zip(within, p99_ok, p99 or p99_ok), 1)]


def test_consistent_difference_beyond_the_threshold_names_a_winner():
    won, tie, a_ci, b_ci, diff = judge_seeds(GOODPUT, [0.90, 0.91, 0.89, 0.92, 0.90], [0.95, 0.97, 0.94, 0.96, 0.95])
    assert won is Winner.B and tie == pytest.approx(0.005)
    assert diff.excludes(0.0) and diff.mean == pytest.approx(0.05)
    assert a_ci.n == b_ci.n == 5 and a_ci.has_interval


def test_noise_only_difference_is_a_tie_though_one_seed_would_name_a_winner():
    a, b = [0.90, 0.95, 0.88, 0.93, 0.91], [0.93, 0.92, 0.90, 0.91, 0.94]   # B - A: +3, -3, +2, -2, +3 pts
    assert judge_seeds(GOODPUT, a[:1], b[:1])[0] is Winner.B   # seed 1 alone: B by 3 points
    won, _, _, _, diff = judge_seeds(GOODPUT, a, b)
    assert won is Winner.TIE and not diff.excludes(0.0)


def test_a_sure_difference_within_the_noise_threshold_is_still_a_tie():
    # B is better by 0.2 points in every seed: sure, but under goodput's 0.5-point threshold.
    won, _, _, _, diff = judge_seeds(GOODPUT, [0.900, 0.910, 0.920], [0.902, 0.912, 0.922])
    assert diff.excludes(0.0) and won is Winner.TIE


def test_a_side_never_answered_in_some_seed_loses_without_an_interval():
    won, _, a_ci, b_ci, diff = judge_seeds(P99, [0.2, None, 0.2], [0.3, 0.3, 0.31])
    assert a_ci.missing == 1 and diff.mean is None and won is Winner.B


def seeded_compare(a_runs: list, b_runs: list, answers: list[dict]) -> CompareResult:
    seeds = list(range(1, len(a_runs) + 1))
    over = {"steady": {"A": seed_set(seeds, a_runs), "B": seed_set(seeds, b_runs)}}
    v = scenario_verdicts(steady(answers), a_runs[0], b_runs[0], seeds_a=a_runs, seeds_b=b_runs)
    return CompareResult(a="A", b="B", seed=1, seeds=seeds, scenarios={"steady": {"A": a_runs[0], "B": b_runs[0]}},
                         over_seeds=over, verdicts={"steady": v})


def test_near_tie_is_shown_as_tie_in_the_table_and_the_verdicts():
    a = runs([900, 950, 880, 930, 910], [0.20, 0.22, 0.19, 0.21, 0.20])
    b = runs([930, 920, 900, 910, 940], [0.21, 0.20, 0.20, 0.22, 0.19])
    result = seeded_compare(a, b, [{"figure": "goodput_ratio"}, {"figure": "latency_ok_s.p99"}])
    assert result.winners() == {"steady": Winner.TIE}
    console = Console(width=100, record=True)
    render(result, console)
    text = console.export_text()
    assert "A won 0, B won 0 of 1 scenarios" in text
    assert "±" in text and "B - A [95% CI]" in text and "tie (95% interval holds 0)" in text
    html = verdicts_html(result) + overview_table(result)
    assert "B - A [95% CI], p" in html and "91.4% ±3.4" in html and "Over 5 seeds" in html
    line = verdict_lines(result, "steady")[0]
    assert line.startswith("goodput: 91.4% ±") and "(B - A +0.6 pts [" in line and line.endswith("-> tie (95% interval holds 0)")


def test_sure_winner_over_seeds_and_its_headline():
    a = runs([900, 910, 890, 905], [0.30, 0.31, 0.29, 0.30])
    b = runs([960, 970, 955, 965], [0.20, 0.21, 0.20, 0.19])
    result = seeded_compare(a, b, [{"figure": "goodput_ratio"}])
    v = result.verdicts["steady"]
    assert result.winners() == {"steady": Winner.B} and v.winner is Winner.B
    assert v.figure("latency_ok_s.p99").winner is Winner.B  # B - A < 0 and lower is better
    doc = result.to_json()
    assert doc["verdicts"]["steady"]["winner"] == "B" and doc["seeds"] == [1, 2, 3, 4]
    again = CompareResult.from_json(doc)
    assert again.winners() == result.winners() and again.over_seeds["steady"]["A"].figures["goodput_ratio"].n == 4


def test_one_seed_writes_what_it_always_did():
    a, b = runs([900], [0.2]), runs([950], [0.2])
    v = scenario_verdicts(steady([{"figure": "goodput_ratio"}]), a[0], b[0])
    doc = CompareResult(a="A", b="B", seed=1, scenarios={"steady": {"A": a[0], "B": b[0]}},
                        verdicts={"steady": v}).to_json()
    assert "seeds" not in doc and "over_seeds" not in doc
    assert set(doc["verdicts"]["steady"]) == {"answers", "ceiling"}
    assert set(doc["verdicts"]["steady"]["answers"][0]) == {"figure", "label", "unit", "better", "none_means",
                                                             "a", "b", "tie_within", "winner"}
