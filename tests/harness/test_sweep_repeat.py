"""harness.analysis.sweep.repeat: invalid steps re-run, a search that cannot conclude, the knee's
spread over repeats; and the CLI's exit when no valid knee is found.

Fake step runners (a function of the rate, and of how often a rate was tried): no socket,
no clock, no sim."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harness.analysis.sweep.repeat import inconclusive, knee_spread, median_repeat, search_with_retries
from harness.analysis.sweep.run import one_search
from harness.analysis.sweep.search import RateSearch
from harness.results import from_json
from harness.results.sweep import SweepRepeat, SweepResult, SweepStep

LAG = "driver fell behind: 80 of 7,529 requests sent over 10 ms late (1.1% > 1%)"


def _step(rate: float, passed: bool, valid: bool = True) -> SweepStep:
    return SweepStep(rate_rps=rate, duration_s=1.0, ran_s=1.0, stopped_early=False, unique=100,
                     goodput_rps=rate if passed else 0.0, goodput_ratio=1.0 if passed else 0.5, p99_s=0.01,
                     p99_ok_s=0.01, shed=0, timed_out=0, send_lag_p99_s=0.001, valid=valid,
                     invalid_reasons=[] if valid else [LAG], passed=passed and valid,
                     why="ok" if valid else "invalid: " + LAG, wall_s=1.0)


class FakeTarget:
    """Passes up to `knee_rps`; the tries named in `invalid` ({rate: how many first tries}) are invalid."""

    def __init__(self, knee_rps: float, invalid: dict[float, int] | None = None) -> None:
        self.knee, self.invalid, self.tried = knee_rps, invalid or {}, Counter[float]()

    def __call__(self, rate: float, duration_s: float) -> SweepStep:
        self.tried[rate] += 1
        bad = self.tried[rate] <= self.invalid.get(rate, 0)
        return _step(rate, rate <= self.knee, valid=not bad)


def _run(target: FakeTarget, retries: int = 2, start: float = 100.0) -> list[SweepStep]:
    return search_with_retries(RateSearch(start, rel_tol=0.05), target, lambda rate: 1.0, retries=retries)


def test_an_invalid_step_is_run_again_and_the_search_goes_on_from_its_valid_try() -> None:
    clean = _run(FakeTarget(300.0))
    # the rate after the first (200 req/s) is invalid once: run again, valid, and the search is the same
    hiccup = _run(FakeTarget(300.0, invalid={200.0: 1}))
    assert [(s.rate_rps, s.try_no, s.valid) for s in hiccup[:3]] == [(100.0, 1, True), (200.0, 1, False),
                                                                    (200.0, 2, True)]
    assert [s.rate_rps for s in hiccup if s.valid] == [s.rate_rps for s in clean]
    assert max(s.rate_rps for s in hiccup if s.passed) == max(s.rate_rps for s in clean if s.passed)


def test_a_rate_invalid_in_every_try_stops_the_search_there() -> None:
    steps = _run(FakeTarget(300.0, invalid={200.0: 3}))
    assert [(s.rate_rps, s.try_no) for s in steps] == [(100.0, 1), (200.0, 1), (200.0, 2), (200.0, 3)]
    assert _run(FakeTarget(300.0, invalid={200.0: 3}), retries=0)[-1].try_no == 1  # no re-runs: stop at once
    with pytest.raises(ValueError, match="retries"):
        _run(FakeTarget(1.0), retries=-1)


def test_the_tries_are_bounded_in_all() -> None:
    steps = search_with_retries(RateSearch(100.0, rel_tol=0.001), FakeTarget(333.0), lambda r: 1.0, max_steps=5)
    assert len(steps) == 5


# (target, the search's verdict) -> inconclusive's start (None: it concluded)
VERDICTS = [
    # the first rate invalid three times, nothing passed => no knee, and why
    (FakeTarget(300.0, invalid={100.0: 3}), "no valid step to judge the target by: 100 req/s was invalid in 3 tries"),
    # a knee at 100 and the next rate invalid three times => a knee (a lower bound), not inconclusive
    (FakeTarget(300.0, invalid={200.0: 3}), None),
    # nothing passes, every step valid => a finding about the target ("no rate met the SLO")
    (FakeTarget(0.0), None),
    # the start fails validly, a lower rate is invalid every time => nothing passed: inconclusive
    (FakeTarget(10.0, invalid={50.0: 3}), "no valid step to judge the target by: 50 req/s"),
]


@pytest.mark.parametrize("target, expected", VERDICTS)
def test_a_search_is_inconclusive_only_when_no_valid_step_passed_and_it_stopped_on_an_invalid_one(
        target, expected) -> None:
    why = inconclusive(_run(target))
    assert (why is None) if expected is None else (why or "").startswith(expected), why


def _repeat(i: int, knee: float | None) -> SweepRepeat:
    steps = [_step(knee, True)] if knee else [_step(50.0, False, valid=False)]
    return SweepRepeat(repeat=i, max_rate_within_slo=knee, first_failing_rate=None,
                       inconclusive=None if knee else "no valid step", steps=steps, wall_s=1.0)


def test_the_knee_spread_is_median_min_max_and_spread_of_the_knees_found() -> None:
    reps = [_repeat(1, 923.0), _repeat(2, 880.0), _repeat(3, 960.0), _repeat(4, 900.0), _repeat(5, 940.0)]
    k = knee_spread(reps)
    assert (k.median_rps, k.min_rps, k.max_rps, k.found) == (923.0, 880.0, 960.0, 5)
    assert k.spread_pct == pytest.approx(100 * 80 / 923)       # (max - min) / median
    assert median_repeat(reps).repeat == 1
    # an even count: the lower middle, a rate that was run and passed; a repeat with none is left out
    k = knee_spread([_repeat(1, 900.0), _repeat(2, None), _repeat(3, 1000.0)])
    assert (k.median_rps, k.found, k.knees_rps) == (900.0, 2, [900.0, None, 1000.0])
    assert knee_spread([_repeat(1, None)]).median_rps is None and median_repeat([_repeat(1, None)]).repeat == 1


def test_one_search_keeps_invalid_tries_out_of_the_failing_rate() -> None:
    rep = one_search(FakeTarget(300.0, invalid={200.0: 3}), 1, 100.0, 1.0, 0.3, 0.05, None, 2)
    assert rep.max_rate_within_slo == 100.0 and rep.first_failing_rate is None and rep.inconclusive is None


def _result(**update) -> SweepResult:
    base = SweepResult(target="hardened", mode="live", seed=1, slo_s=0.3, min_goodput_ratio=0.99, rel_tol=0.05,
                       step_duration_s=12.0, max_rate_within_slo=None, first_failing_rate=None,
                       steps=[_step(625.0, False, valid=False).model_copy(update={"try_no": n}) for n in (1, 2, 3)],
                       inconclusive="no valid step to judge the target by: 625 req/s was invalid in 3 tries",
                       wall_s=40.0)
    return base.model_copy(update=update)


def test_the_cli_says_why_no_knee_was_found_and_exits_non_zero(monkeypatch, tmp_path) -> None:
    from typer.testing import CliRunner

    import harness.analysis.sweep as sweep_pkg
    from harness.cli import app

    monkeypatch.setattr(sweep_pkg, "run_sweep", lambda *a, **k: _result())
    out_file = tmp_path / "sweep.json"
    res = CliRunner().invoke(app, ["sweep", "hardened", "--mode", "live", "--out", str(out_file)])
    assert res.exit_code == 1, res.output
    assert "no knee found: no valid step to judge the target by" in res.output
    assert "no rate met the SLO" not in res.output and "invalid #3" in res.output
    saved = from_json(json.loads(out_file.read_text()))
    assert isinstance(saved, SweepResult) and saved.inconclusive and len(saved.steps) == 3


def test_repeats_render_the_spread_and_every_repeat_within_80_columns() -> None:
    from tests.reports.fit import rendered
    from reports import sweep as view

    reps = [_repeat(1, 923.0), _repeat(2, 880.0), _repeat(3, 1960.0)]
    res = _result(max_rate_within_slo=923.0, inconclusive=None, steps=reps[0].steps, repeats=reps,
                  knee_spread=knee_spread(reps))
    text, cuts = rendered(view.render, res, 80)
    assert cuts == [], cuts
    assert "(median of 3)" in text and "median 923, min 880, max 1,960 req/s, spread 117.0%" in text, text
    assert "repeat 3: knee 1,960 req/s" in text
    shown, total = len(reps[0].steps), sum(len(r.steps) for r in reps)
    assert f"{shown} steps shown, {total} over 3 repeats" in " ".join(text.split()), text  # the footer counts all
    assert from_json(res.to_json()) == res


def test_a_check_on_a_sweep_with_no_valid_knee_says_so_and_a_gate_cannot_judge_it(tmp_path) -> None:
    from harness.gate.check import run_gate
    from harness.gate.sweep import judge_sweep

    no, = judge_sweep(_result(), ["max_rate_within_slo >= 100"])
    assert not no.passed and no.note == "no valid knee found"
    gate = tmp_path / "sweep.toml"
    gate.write_text('[[sweep]]\ntarget = "hardened"\nchecks = ["max_rate_within_slo >= 100"]\n')
    verdict = run_gate(str(gate), results=[_result()])
    assert verdict.cannot_judge and verdict.exit_code == 2


class MomentTarget(FakeTarget):
    """Passes up to `knee_rps`, except that the first try of each rate in `moments` fails (a
    clump of sheds, not the rate): a second try there passes."""

    def __init__(self, knee_rps: float, moments: set[float], invalid: dict[float, int] | None = None) -> None:
        super().__init__(knee_rps, invalid)
        self.moments = moments

    def __call__(self, rate: float, duration_s: float) -> SweepStep:
        step = super().__call__(rate, duration_s)
        if step.valid and rate in self.moments and self.tried[rate] - self.invalid.get(rate, 0) == 1:
            return _step(rate, False)
        return step


def _confirmed(target: FakeTarget, confirm: int, retries: int = 2) -> list[SweepStep]:
    return search_with_retries(RateSearch(100.0, rel_tol=0.05), target, lambda rate: 1.0, retries=retries,
                               confirm=confirm)


def _knee(steps: list[SweepStep]) -> float:
    return max(s.rate_rps for s in steps if s.passed)


def test_a_failure_that_does_not_repeat_does_not_end_the_climb() -> None:
    clean = _confirmed(FakeTarget(300.0), 0)
    believed = _confirmed(MomentTarget(300.0, {200.0}), 0)
    confirmed = _confirmed(MomentTarget(300.0, {200.0}), 1)
    assert _knee(believed) < 200.0  # one moment at 200 req/s sets the knee below it
    assert _knee(confirmed) == _knee(clean)
    assert [(s.rate_rps, s.try_no, s.passed) for s in confirmed[1:3]] == [(200.0, 1, False), (200.0, 2, True)]


def test_a_sustained_failure_is_tried_1_plus_confirm_times_and_believed() -> None:
    clean = _confirmed(FakeTarget(300.0), 0)
    for confirm in (1, 2):
        steps = _confirmed(FakeTarget(300.0), confirm)
        assert _knee(steps) == _knee(clean)
        tries = Counter(s.rate_rps for s in steps)
        failing = {s.rate_rps for s in clean if not s.passed}
        assert failing and all(tries[r] == 1 + confirm for r in failing), tries
        assert all(tries[s.rate_rps] == 1 for s in clean if s.passed)  # a pass is never run again
    with pytest.raises(ValueError, match="confirm"):
        _confirmed(FakeTarget(1.0), -1)


def test_invalid_tries_do_not_count_as_failures_to_confirm() -> None:
    # 200 req/s: one invalid try, then its moment, then a pass: three tries, the rate passes
    steps = _confirmed(MomentTarget(300.0, {200.0}, invalid={200.0: 1}), 1)
    at = [(s.try_no, s.valid, s.passed) for s in steps if s.rate_rps == 200.0]
    assert at == [(1, False, False), (2, True, False), (3, True, True)]
    rep = one_search(MomentTarget(300.0, {200.0}), 1, 100.0, 1.0, 0.3, 0.05, None, 2, confirm=1)
    assert rep.max_rate_within_slo == _knee(_confirmed(FakeTarget(300.0), 0))
    assert rep.first_failing_rate is not None and rep.first_failing_rate > rep.max_rate_within_slo


def test_the_cli_refuses_confirm_failures_in_sim() -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    res = CliRunner().invoke(app, ["sweep", "hardened", "--confirm-failures", "2"])
    assert res.exit_code == 2 and "--confirm-failures" in res.output, res.output
