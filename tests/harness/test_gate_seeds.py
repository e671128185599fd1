"""Gates over seeds: a check reads the bound of the interval it names, and a baseline check
fails only on a significant regression (one-sided test, with its p-value and effect)."""

from __future__ import annotations

import pytest

from harness.analysis.seeds import seed_set
from harness.engine.jobs import Jobs
from harness.gate.check import evaluate
from harness.gate.file import Bound, Gate, load_gate_file, parse_check
from workloads.loader import ConfigError
from tests.harness.summaries import summary

SEEDS = [1, 2, 3, 4, 5]
KEY = ("steady", "hardened", None)


def runs(p99s: list[float | None], within: int = 990) -> list:
    return [summary(within=within, late=1000 - within, shed=0, timed_out=0, latency_s={"p99": p},
                    target="hardened", workload="steady", seed=s) for s, p in zip(SEEDS, p99s)]


def judge(check_text, mine: list, base: list | None = None, bound: str | None = None):
    raw = {"check": check_text, "bound": bound} if bound else check_text
    check = parse_check(raw, 0.05, "t.toml", "c")
    gate = Gate("steady", "hardened", None, (check,))
    baseline = {("steady", "hardened"): base[0]} if base else None
    base_seeded = {("steady", "hardened"): seed_set(SEEDS, base)} if base else None
    return evaluate(check, gate, {KEY: mine[0]}, baseline, {KEY: mine}, base_seeded, SEEDS)


P99 = [0.280, 0.295, 0.270, 0.300, 0.285]   # mean 0.286, upper bound about 0.300


def test_the_mean_passes_where_the_upper_bound_fails():
    mean = judge("latency_s.p99 <= 0.295", runs(P99))
    upper = judge("latency_s.p99 <= 0.295", runs(P99), bound="upper")
    assert mean.passed and mean.measured == pytest.approx(0.286) and mean.bound == "mean"
    assert not upper.passed and upper.measured == pytest.approx(upper.interval.hi) and upper.measured > 0.295
    assert upper.interval.n == 5 and "upper bound, 5 seeds" in upper.note


def test_lower_bound_on_goodput_and_a_seed_never_answered():
    low = judge("goodput_ratio >= 0.99", runs(P99, within=990), bound="lower")
    assert low.passed and low.measured == pytest.approx(0.99)   # no spread: the bound is the mean
    never = judge("latency_s.p99 <= 10", runs([0.2, None, 0.2, 0.2, 0.2]), bound="upper")
    assert not never.passed and never.measured == float("inf")


def test_baseline_regression_is_flagged_only_when_significant():
    base = runs(P99)
    slower = runs([p * 1.2 for p in P99])       # +20% in every seed, limit +10%
    noisy = runs([0.300, 0.280, 0.290, 0.275, 0.300])  # +1.0% on average, noise
    bad = judge("latency_s.p99 <= baseline +10%", slower, base)
    fine = judge("latency_s.p99 <= baseline +10%", noisy, base)
    assert not bad.passed and bad.change.significant() and bad.change.test == "paired t"
    assert bad.note.startswith("regression: +20.0% vs baseline, limit +10% (one-sided paired t, p=")
    assert fine.passed and not fine.change.significant()
    assert fine.note.startswith("no significant change: +1.0% vs baseline")
    # +5% with one seed at +12%: that seed alone is beyond the limit, the seeds together are not.
    shift = runs([p * 1.12 if i == 3 else p * 1.05 for i, p in enumerate(P99)])
    assert judge("latency_s.p99 <= baseline +10%", shift, base).passed


def test_a_file_names_the_bound_and_its_seeds(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('[defaults]\nseeds = 3\n[[scenario]]\nname = "steady"\nchecks = [\n'
                    '  { check = "latency_s.p99 <= 0.3", bound = "upper" },\n  "goodput_ratio >= 0.99",\n]\n')
    gf = load_gate_file(path)
    assert gf.seeds == 3 and [c.bound for c in gf.gates[0].checks] == [Bound.UPPER, Bound.MEAN]
    path.write_text('[[scenario]]\nname = "steady"\nchecks = [{ check = "goodput_ratio >= 0.9", bound = "top" }]\n')
    with pytest.raises(ConfigError, match=r"key 'scenario\[0\].checks\[0\].bound': 'top': valid are mean, lower, upper"):
        load_gate_file(path)


@pytest.mark.slow
def test_a_seeded_gate_runs_each_seed_and_is_its_own_baseline(tmp_path):
    from harness.gate.check import run_gate

    path = tmp_path / "g.toml"
    path.write_text('[defaults]\nseeds = 2\nduration_s = 0.5\n[[scenario]]\nname = "steady"\nchecks = [\n'
                    '  { check = "latency_s.p99 <= 0.3", bound = "upper" },\n  "goodput_ratio >= baseline",\n]\n')
    first = run_gate(str(path), jobs=Jobs(workers=1))
    runs = first.over_seeds["steady"]["hardened"]
    assert first.seeds == [1, 2] and [s.seed for s in runs.summaries] == [1, 2]
    assert first.summaries["steady"]["hardened"] == runs.summaries[0]
    assert first.checks[0].interval.n == 2 and first.checks[1].skipped
    again = run_gate(str(path), baseline=first, jobs=Jobs(workers=1))
    same = again.checks[1]
    assert same.passed and same.change.test == "paired t" and same.change.p_value == 1.0
    assert same.note.startswith("no significant change: +0.0% vs baseline")
