"""`harness sweep`: the rate search, the certain-failure rule, a tiny sim sweep, gate checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.analysis.sweep.run import run_sweep, step_duration_s
from harness.analysis.sweep.search import RateSearch, allowed_failures, certain_failures
from harness.gate.sweep import judge_sweep
from harness.results import from_json
from harness.results.sweep import SweepResult, SweepStep
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


def _saved_sweep(target: str, knee: float | None, last_valid: bool = True) -> SweepResult:
    step = dict(duration_s=1.0, ran_s=1.0, stopped_early=False, unique=100, goodput_rps=100.0, goodput_ratio=1.0,
                p99_s=0.01, p99_ok_s=0.01, shed=0, timed_out=0, wall_s=1.0)
    steps = [SweepStep(rate_rps=knee or 50.0, passed=knee is not None, why="", **step)]
    if not last_valid:
        steps.append(SweepStep(rate_rps=2 * (knee or 50.0), passed=False, valid=False, why="invalid",
                               invalid_reasons=["driver fell behind: send lag p99 9 ms > 5 ms"], **step))
    return SweepResult(target=target, mode="live", seed=1, slo_s=0.3, min_goodput_ratio=0.99, rel_tol=0.05,
                       step_duration_s=1.0, max_rate_within_slo=knee, first_failing_rate=None if last_valid else 2 * knee,
                       steps=steps, wall_s=0.0)


def test_a_gate_file_judges_saved_sweeps(tmp_path) -> None:
    from harness.gate.check import run_gate

    gate = tmp_path / "sweep.toml"
    gate.write_text('[defaults]\ntarget = "hardened"\n\n[[sweep]]\nchecks = ["max_rate_within_slo >= 500"]\n\n'
                    '[[sweep]]\ntarget = "http://127.0.0.1:8000/predict"\nchecks = ["first_failing_rate >= 900"]\n')
    url = "http://127.0.0.1:8000/predict"
    ok = run_gate(str(gate), results=[_saved_sweep("hardened", 600.0), _saved_sweep(url, 100.0)])
    assert ok.passed and [c.passed for c in ok.checks] == [True, True] and not ok.cannot_judge
    low = run_gate(str(gate), results=[_saved_sweep("hardened", 400.0), _saved_sweep(url, 100.0)])
    assert not low.passed and low.exit_code == 1 and not low.cannot_judge
    # The driver, not the target, gave out above 400 req/s: a failed check cannot be judged.
    bound = run_gate(str(gate), results=[_saved_sweep("hardened", 400.0, last_valid=False), _saved_sweep(url, 100.0)])
    assert bound.cannot_judge and bound.exit_code == 2 and "lower bound" in bound.cannot_judge[0]
    passes = run_gate(str(gate), results=[_saved_sweep("hardened", 700.0, last_valid=False), _saved_sweep(url, 1.0)])
    assert passes.passed and not passes.cannot_judge
    with pytest.raises(ConfigError, match="reads a saved sweep of 'hardened'"):
        run_gate(str(gate), results=[_saved_sweep(url, 100.0)])
    with pytest.raises(ConfigError, match="reads a saved sweep"):
        run_gate(str(gate))
    bad = tmp_path / "bad.toml"
    bad.write_text('[[sweep]]\nchecks = ["goodput_ratio >= 0.9"]\n')
    with pytest.raises(ConfigError, match="unknown sweep key"):
        run_gate(str(bad), results=[_saved_sweep("hardened", 600.0)])


def test_a_knee_near_the_fleets_ceiling_is_called_the_fleets() -> None:
    from harness.analysis.sweep.run import fleet_note
    from targets.config import TargetConfig

    cfg = TargetConfig(gpus=3, batch_size=32, batch_time_s=0.1)  # ceiling 960 req/s
    note = fleet_note(cfg, 923.0, "live", None)
    assert note is not None and "96% of the fleet's ceiling" in note and "--scale" in note
    assert fleet_note(cfg, 923.0, "sim", None) is None                # sim without a front end: nothing else binds
    fronted = TargetConfig(gpus=3, batch_size=32, batch_time_s=0.1, frontend_cost_s=0.0005)
    assert "--set gpus" in (fleet_note(fronted, 923.0, "sim", None) or "")
    assert fleet_note(cfg, 700.0, "live", None) is None          # 73%: the front end's (or the SLO's)
    assert fleet_note(cfg, None, "live", None) is None


def test_sweep_json_prints_a_document() -> None:
    import json

    from typer.testing import CliRunner

    from harness.cli import app

    out = CliRunner().invoke(app, ["sweep", "hardened", "--json", "--set", "gpus=2", "--set", "peak_qps=400"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["kind"] == "sweep" and doc["max_rate_within_slo"] > 0


def test_the_sweep_view_fits_80_columns_without_cutting_a_cell() -> None:
    from rich.console import Console

    from harness.analysis.sweep.run import run_sweep
    from reports.sweep import render

    result = run_sweep("hardened", "sim", overrides={"gpus": 2, "peak_qps": 400})
    console = Console(width=80, record=True)
    render(result, console)
    text = console.export_text()
    assert "…" not in text and "KNEE" in text, text
    assert all(len(line) <= 80 for line in text.splitlines())
