"""`harness sweep`: the rate search, the certain-failure rule, a tiny sim sweep, gate checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.analysis.sweep import run_sweep, step_duration_s
from harness.analysis.sweep_search import RateSearch, allowed_failures, certain_failures
from harness.gate.sweep import judge_sweep
from harness.results import from_json
from harness.results.sweep import SweepResult
from workloads.loader import ConfigError


def _search(knee: float, **kw) -> RateSearch:
    rs = RateSearch(100.0, **kw)
    while (r := rs.next_rate()) is not None:
        rs.update(r, r <= knee)
    return rs


@pytest.mark.parametrize("knee", [37.0, 100.0, 130.0, 999.0])
def test_search_brackets_the_knee_within_tolerance(knee: float) -> None:
    rs = _search(knee, rel_tol=0.05)
    assert rs.lo is not None and rs.hi is not None
    assert rs.lo <= knee < rs.hi                 # a passing rate below a failing one
    assert rs.hi / rs.lo <= 1.05


def test_search_gives_up_when_nothing_passes_or_nothing_fails() -> None:
    none = _search(0.0, min_rps=1.0)
    assert none.lo is None and none.done       # floor reached: no rate met the SLO
    never = _search(math.inf, max_rps=1000.0)
    assert never.hi is None and never.lo == 1000.0


def test_a_noisy_failure_below_a_pass_is_trusted() -> None:
    rs = RateSearch(100.0)
    rs.update(100.0, True)
    rs.update(200.0, True)
    rs.update(150.0, False)                    # noise: fails between two passes
    assert rs.hi == 150.0 and rs.lo == 100.0


def test_allowed_failures_is_what_p99_tolerates() -> None:
    assert allowed_failures(1000, 0.99) == 10  # 990 within the SLO keep p99 there
    assert allowed_failures(99, 0.99) == 0     # ceil(98.01) = 99: none may miss
    assert allowed_failures(100, 1.0) == 0


def test_certain_failures_counts_bad_endings_and_overdue_requests() -> None:
    # 6 requests at t = 0..5 s, SLO 1 s, now 4 s:
    outcome = np.array([0, 0, 2, -1, -1, -1], dtype=np.int8)   # OK, OK, shed, pending x3
    latency = np.array([0.5, 1.5, np.inf, np.inf, np.inf, np.inf])
    sched = np.arange(6.0)
    # late OK (1), shed (2), pending since 3 s (not yet overdue: 3 > 4 - 1), 4 and 5 in the future
    assert certain_failures(outcome, latency, sched, 4.0, 1.0) == 2
    assert certain_failures(outcome, latency, sched, 4.5, 1.0) == 3   # request 3 is now overdue


def test_step_length_exposes_an_overload_of_the_tolerance() -> None:
    assert step_duration_s(10_000, None, 0.3, 0.05) == pytest.approx(12.0)  # 2 x SLO / tol
    assert step_duration_s(10_000, 3.0, 0.3, 0.05) == 3.0


def _tiny_sweep() -> SweepResult:
    # One GPU of 32 per 100 ms: 320 req/s at most; the knee lies below it.
    knobs = {"peak_qps": 200, "gpus": 1, "tenant_limits": False}
    return run_sweep("hardened", "sim", overrides=knobs, duration_s=3.0, rel_tol=0.1)


def test_sim_sweep_finds_a_knee_below_the_fleet_capacity() -> None:
    res = _tiny_sweep()
    assert res.max_rate_within_slo is not None and res.first_failing_rate is not None
    assert res.max_rate_within_slo < 320 <= res.first_failing_rate * 1.5
    assert res.first_failing_rate / res.max_rate_within_slo <= 1.1 + 1e-9
    assert any(s.stopped_early for s in res.steps)          # failing steps end early
    assert all(s.passed == (s.rate_rps <= res.max_rate_within_slo) for s in res.steps)
    back = from_json(res.to_json())
    assert isinstance(back, SweepResult) and back == res
    ok, = judge_sweep(res, [f"max_rate_within_slo >= {math.floor(res.max_rate_within_slo)}"])
    bad, = judge_sweep(res, ["max_rate_within_slo >= 320"])
    assert ok.passed and not bad.passed


def test_gate_refuses_what_a_sweep_lacks() -> None:
    res = SweepResult(target="t", mode="sim", seed=1, slo_s=0.3, min_goodput_ratio=0.99, rel_tol=0.05,
                      step_duration_s=1.0, max_rate_within_slo=None, first_failing_rate=5.0, steps=[], wall_s=0.0)
    no, = judge_sweep(res, ["max_rate_within_slo >= 1"])
    assert not no.passed and "no rate" in no.note
    with pytest.raises(ConfigError):
        judge_sweep(res, ["goodput_ratio >= 0.9"])
    with pytest.raises(ConfigError):
        judge_sweep(res, ["max_rate_within_slo >= baseline"])
