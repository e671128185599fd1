"""Views over seeds: a run's figures with intervals, a gate check's interval and test; one seed
draws what it always drew."""

from __future__ import annotations

from rich.console import Console

from harness.analysis.seeds import seed_set
from harness.results.gate import CheckOutcome, GateResult
from harness.results.run import RunResult
from harness.results.stats import Difference, Interval
from reports import gate as gate_view
from reports import run as run_view
from tests.harness.summaries import summary


def run_result(over: bool) -> RunResult:
    runs = [summary(within=w, late=1000 - w, shed=0, timed_out=0, latency_s={"p99": p}, seed=s)
            for s, (w, p) in enumerate([(990, 0.20), (980, 0.22), (995, None)], 1)]
    return RunResult(summary=runs[0], target_config={}, workload_config={}, seed=1, mode="sim",
                     over_seeds=seed_set([1, 2, 3], runs) if over else None)


def text(render, result) -> str:
    console = Console(width=240, record=True)
    render(result, console)
    return console.export_text()


def test_a_seeded_run_shows_each_figure_with_its_interval():
    result = run_result(over=True)
    rows = {r[0]: r for r in run_view.seed_rows(result.over_seeds)}
    assert rows["goodput_ratio"][1] == "98.8%" and " .. " in rows["goodput_ratio"][2]
    assert rows["latency_s.p99"][1:] == ("never in 1/3", "-")  # seed 3 never answered its tail
    out = text(run_view.render, result)
    assert "over 3 seeds (1, 2, 3): mean and 95% interval" in out
    assert run_view.title(result).endswith("(sim, seeds 1..3)")
    assert RunResult.from_json(result.to_json()) == result


def test_one_seed_run_file_has_no_seed_block():
    result = run_result(over=False)
    assert "over_seeds" not in result.to_json() and "over 1 seeds" not in text(run_view.render, result)


def test_gate_view_says_the_interval_and_the_test():
    d = Difference(mean=0.03, lo=0.02, hi=0.04, n=5, p_value=0.001, test="paired t", alternative="greater",
                   margin=0.0286, effect=3.1)
    check = CheckOutcome(scenario="steady", target="hardened", key="latency_s.p99", op="<=",
                         check="latency_s.p99 <= baseline +10%", threshold=0.315, measured=0.316, passed=False,
                         note="regression: +10.5% vs baseline, limit +10% (one-sided paired t, p=0.001, d=3.10, "
                              "5 seeds)", skipped=False, bound="mean",
                         interval=Interval(mean=0.316, lo=0.300, hi=0.332, n=5), change=d)
    result = GateResult(gate_file="g.toml", seed=1, seeds=[1, 2, 3, 4, 5], checks=[check], passed=False,
                        summaries={}, durations={}, wall_s=0.0)
    out = text(gate_view.render, result)
    assert "95% CI 300 ms..332 ms" in out and "regression: +10.5%" in out and "seeds 1, 2, 3, 4, 5" in out
    assert GateResult.from_json(result.to_json()) == result
    plain = check.model_copy(update={"bound": None, "interval": None, "change": None})
    assert {"bound", "interval", "change"}.isdisjoint(plain.model_dump(mode="json"))
