"""Capacity planning: the arithmetic by hand, the fleet search as a property, and a
tiny simulated plan (realtime above the formula, offline at it)."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from harness.analysis.capacity.plan import (
    Budget, CapacityInputs, batch_time_fn, formula_gpus, plan_capacity, table_by_b, theoretical_gpus,
)
from harness.analysis.capacity.sim import FleetSearch, Point, backlog, backlog_schedule, lowest_stable_fleet
from harness.analysis.traffic import traffic
from harness.cli import app
from harness.engine.jobs import Jobs
from harness.results.capacity import CapacityResult, Loss
from harness.results.io import dumps

runner = CliRunner()

TINY = Budget(requests=1500, min_s=1.0, max_s=3.0, curve_utilizations=(0.7,), loads=(0.01, 0.1),
              offline_rounds=4, extras=False, slow_min_s=2.0)

# -- the arithmetic, hand-computed ---------------------------------------------------------


def test_doc_numbers() -> None:
    # 10,000 QPS x 0.1 s / 32 = 31.25 GPUs; whole GPUs: 32 (the doc's 10000 / (10 x 32)).
    assert theoretical_gpus(10_000, 32, 0.1) == pytest.approx(31.25)
    assert formula_gpus(31.25) == 32
    assert formula_gpus(theoretical_gpus(10_000, 32, 0.1)) == 32


@pytest.mark.parametrize("b, theoretical, gpus", [
    (1, 1000.0, 1000),   # 10,000 x 0.1 / 1
    (2, 500.0, 500),
    (4, 250.0, 250),
    (8, 125.0, 125),
    (16, 62.5, 63),      # half a GPU rounds up
    (32, 31.25, 32),
    (64, 15.625, 16),
    (128, 7.8125, 8),
])
def test_table_over_b(b: int, theoretical: float, gpus: int) -> None:
    rows = {r["b"]: r for r in table_by_b(10_000, lambda _b: 0.1)}
    assert rows[b]["theoretical_gpus"] == pytest.approx(theoretical)
    assert rows[b]["formula_gpus"] == gpus
    assert rows[b]["per_gpu_rps"] == pytest.approx(b / 0.1)


def test_rounding_is_up_but_exact_integers_stay() -> None:
    assert formula_gpus(32.0) == 32          # 10,240 QPS x 0.1 / 32
    assert formula_gpus(32.0000000001) == 32  # float noise is not a GPU
    assert formula_gpus(32.01) == 33
    # Stability needs capacity strictly above the load: 32 GPUs at exactly 100% are not enough.
    assert lowest_stable_fleet(31.25) == 32
    assert lowest_stable_fleet(32.0) == 33


def test_cost_models() -> None:
    t, knobs = batch_time_fn(CapacityInputs(cost_model="constant"))
    assert t(1) == t(32) == 0.1 and knobs["cost_model"] == "constant"
    t, knobs = batch_time_fn(CapacityInputs(cost_model="affine"))
    # t0 = 20% of 100 ms = 20 ms, k = 80 ms / 32 = 2.5 ms per request: t(32) = 100 ms, t(1) = 22.5 ms.
    assert t(32) == pytest.approx(0.1) and t(1) == pytest.approx(0.0225)
    assert knobs["cost_t0_s"] == pytest.approx(0.02) and knobs["cost_per_item_s"] == pytest.approx(0.0025)
    rows = {r["b"]: r for r in table_by_b(10_000, t)}
    assert rows[1]["theoretical_gpus"] == pytest.approx(10_000 * 0.0225)  # 225 GPUs, not 1000


@pytest.mark.parametrize("kwargs", [
    dict(qps=0), dict(batch_size=0), dict(batch_time_s=-1), dict(slo_p99_s=0),
    dict(cost_model="quadratic"), dict(cost_model="table"),
])
def test_inputs_validate(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        CapacityInputs(**kwargs)


# -- the fleet search ----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(0, 50), gap=st.integers(1, 200), width=st.integers(1, 4), extra=st.integers(0, 60))
def test_search_finds_the_threshold_of_any_monotone_oracle(lo: int, gap: int, width: int, extra: int) -> None:
    threshold = lo + gap
    search = FleetSearch(lo, threshold + extra + 1, width)
    rounds = 0
    while not search.done:
        props = search.proposals()
        assert props and all(lo < g <= search.max_gpus for g in props) and len(props) <= width
        search.update({g: g >= threshold for g in props})
        rounds += 1
        assert rounds < 40
    assert search.result == threshold
    # Galloping then bisecting: logarithmic in the distance, not linear.
    assert len(search.evaluated) <= 2 * width * (gap.bit_length() + 2)


def test_search_reports_none_when_nothing_passes() -> None:
    search = FleetSearch(3, 10, 2)
    while not search.done:
        search.update({g: False for g in search.proposals()})
    assert search.result is None and search.exhausted


def test_search_ignores_a_noisy_failure_above_a_pass() -> None:
    search = FleetSearch(10, 100, 2)
    search.update({11: False, 12: True})
    assert search.done and search.result == 12
    search = FleetSearch(10, 100, 2)
    search.update({11: True, 12: False})  # not monotone: the smallest pass stands
    assert search.result == 11


def _tiny_point(gpus: int) -> dict:
    # B=1, 100 ms, 100 QPS: 10 GPUs of work, no batching to smooth Poisson arrivals (M/D/c).
    knobs = {"gpus": gpus, "batch_size": 1, "batch_time_s": 0.1, "slo_s": 0.2, "peak_qps": 100}
    return Point(f"g{gpus}", "hardened", tuple(sorted(knobs.items())), traffic(100, 20.0), seed=3).run()


@pytest.mark.slow
def test_bisection_on_a_tiny_setup_is_monotone_and_matches_brute_force() -> None:
    slo = 0.2
    fleet = range(11, 17)
    p99 = {g: _tiny_point(g)["p99_s"] for g in fleet}
    ok = {g: p99[g] is not None and p99[g] <= slo for g in fleet}
    passing = [g for g in fleet if ok[g]]
    assert passing and not ok[11], p99            # 91% busy without batching misses 200 ms
    assert all(ok[g] for g in fleet if g >= passing[0]), p99  # more GPUs never hurt
    search = FleetSearch(lowest_stable_fleet(10.0) - 1, 40, width=1)
    while not search.done:
        search.update({g: ok[g] if g in ok else True for g in search.proposals()})
    assert search.result == passing[0]


def test_backlog_arrives_at_once_and_exactly() -> None:
    wl = backlog(2048)
    assert wl.duration_s == pytest.approx(0.001)
    sched = backlog_schedule(wl, 2048, 64)
    assert len(sched) == 2048 and sched.sched_s.max() < 0.001 and set(sched.size) == {64}
    knobs = {"gpus": 4, "batch_size": 16, "batch_time_s": 0.05, "admission": False, "cache": "off",
             "tenant_limits": False, "client_timeout_s": 100.0, "batching": "dynamic"}
    res = Point("b", "hardened", tuple(sorted(knobs.items())), wl, backlog=2048, probe_s=0).run()
    # 2,048 requests = 32 rounds of 4 GPUs x 16: 32 x 50 ms back to back.
    assert res["unique"] == res["succeeded"] == 2048
    assert res["end_s"] == pytest.approx(1.6, abs=0.01) and res["batch_fill"] == pytest.approx(1.0)


# -- a whole (tiny) plan ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_plan() -> CapacityResult:
    return _tiny_plan()  # cached per process: under xdist a worker may leave and re-enter this module


@functools.cache
def _tiny_plan() -> CapacityResult:
    # 2,000 QPS x 50 ms / 16 = 6.25 GPUs; every run short, inline.
    return plan_capacity(qps=2000, batch_size=16, batch_time_s=0.05, slo_p99_s=0.2, seed=1,
                         jobs=Jobs(workers=1), budget=TINY)


@pytest.mark.slow
def test_tiny_plan_arithmetic_and_fleets(tiny_plan: CapacityResult) -> None:
    d = tiny_plan
    assert d.kind == "capacity" and d.to_json()["schema"] == "harness.result/1"
    assert d.theoretical_gpus == pytest.approx(6.25) and d.formula_gpus == 7
    assert d.realtime_gpus > d.theoretical_gpus
    assert d.headroom_gpus >= d.realtime_gpus
    assert d.realtime_with_headroom_gpus == d.headroom_gpus + 1
    # 1.25 x 6.25 = 7.8125 GPUs of work at the headroom load: at least 8.
    assert d.headroom_gpus >= 8
    assert [s.step for s in d.breakdown][:3] == ["theoretical", "formula", "realtime at peak"]
    assert d.inputs.model_dump() == {"qps": 2000.0, "batch_size": 16, "batch_time_s": 0.05, "slo_p99_s": 0.2,
                                     "cost_model": "constant", "cost_table": None, "seed": 1, "quick": False,
                                     "headroom_factor": 1.25}
    assert [r.b for r in d.table_by_b] == [1, 2, 4, 8, 16, 32, 64, 128]


@pytest.mark.slow
def test_tiny_plan_offline_reaches_the_formula(tiny_plan: CapacityResult) -> None:
    off = tiny_plan.offline
    assert off.requests == 7 * 16 * 4
    assert tiny_plan.offline_efficiency >= 0.95 and off.batch_fill == pytest.approx(1.0)
    # Full batches back to back: 4 rounds of 50 ms.
    assert off.makespan_s == pytest.approx(0.2, abs=0.01)


@pytest.mark.slow
def test_tiny_plan_curves_and_losses(tiny_plan: CapacityResult) -> None:
    d = tiny_plan
    gpus = [r.gpus for r in d.curve]
    assert gpus == sorted(gpus) and d.realtime_gpus in gpus
    assert gpus[0] == 6 and not d.curve[0].stable  # the knee: 6.25 GPUs of work on 6
    assert [r.load_fraction for r in d.fill_vs_load] == [0.01, 0.1, 1.0]
    low, peak = d.fill_vs_load[0], d.fill_vs_load[-1]
    assert low.batch_fill < peak.batch_fill  # 20 QPS cannot fill B=16 within the max wait
    sources = [r.source for r in d.losses]
    assert sources == ["partial batches", "GPUs idle while batches form", "queueing variance",
                       "the SLO's cap on batch wait", "fragmentation across per-server queues",
                       "duplicates from retries", "padding with variable sizes", "affine t(b) on small batches"]
    by = {r.source: r for r in d.losses}
    assert all(r.explanation and r.unit for r in d.losses)
    assert by["fragmentation across per-server queues"].measured > 0.3  # 10 queues at 10% load
    assert by["the SLO's cap on batch wait"].measured > 0.3
    assert by["padding with variable sizes"].measured > 0.1
    assert 1.0 < by["affine t(b) on small batches"].measured < 16 * 0.05 / 0.05
    json.loads(dumps(d.to_json()))  # JSON-safe
    assert CapacityResult.from_json(d.to_json()).to_json() == d.to_json()  # round-trips


def test_impossible_slo_gives_no_fleet() -> None:
    d = plan_capacity(qps=200, batch_size=8, batch_time_s=0.5, slo_p99_s=0.3, jobs=Jobs(workers=1), budget=TINY)
    assert d.realtime_gpus is None and d.realtime_with_headroom_gpus is None
    assert any("one batch alone takes longer" in n for n in d.notes)
    assert d.offline_efficiency >= 0.95


# -- rendering and the command ---------------------------------------------------------------


@pytest.mark.slow
def test_console_report_fits_80_columns(tiny_plan: CapacityResult) -> None:
    from reports.capacity import render

    con = Console(width=80, record=True, color_system=None)
    render(tiny_plan, con)
    text = con.export_text()
    assert "6.25" in text and "Offline" in text and "duplicates from retries" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_measured_values_format_by_unit() -> None:
    from reports.capacity import format_measured

    def loss(measured: float | None, unit: str) -> Loss:
        return Loss(source="s", measured=measured, unit=unit, explanation="e")

    assert format_measured(loss(0.329, "share of GPU time")) == "32.9%"
    assert format_measured(loss(0.0004, "share of batch slots")) == "0.04%"
    assert format_measured(loss(0.0099, "s of p99 on 32 GPUs")) == "+10 ms"
    assert format_measured(loss(None, "s of p99 on 32 GPUs")) == "∞"
    assert format_measured(loss(1.376, "x the full-batch GPU time")) == "1.38x"


@pytest.mark.slow
def test_html_sections_have_titled_axes(tiny_plan: CapacityResult) -> None:
    from reports.capacity import sections

    secs = sections(tiny_plan)
    assert [s.title for s in secs] == [
        "Sizing: from the formula to the fleet to buy", "The formula over B", "Latency vs utilization",
        "Batch fill vs load", "Where realtime throughput goes (measured)", "Realtime vs offline"]
    figs = [s.figure for s in secs if s.figure is not None]
    assert len(figs) == 4
    for fig in figs:
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert "(%)" in figs[1].layout.xaxis.title.text and "(ms)" in figs[1].layout.yaxis.title.text
    assert "<td" in secs[4].html and "partial batches" in secs[4].html


@pytest.mark.slow
def test_cli_capacity_json_and_report(tmp_path: Path) -> None:
    out = tmp_path / "cap.json"
    # 500 QPS x 50 ms / 8 = 3.125 GPUs: a quick plan at this scale simulates little.
    res = runner.invoke(app, ["capacity", "--qps", "500", "--batch-size", "8", "--batch-time", "0.05",
                              "--quick", "-j", "1", "--json", "--out", str(out)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    for key in ("theoretical_gpus", "formula_gpus", "realtime_gpus", "realtime_with_headroom_gpus",
                "offline_efficiency", "table_by_b", "losses", "curve", "fill_vs_load", "inputs"):
        assert key in data
    assert data["theoretical_gpus"] == pytest.approx(3.125) and data["formula_gpus"] == 4
    assert data["realtime_gpus"] >= 4 and data["offline_efficiency"] >= 0.95
    again = runner.invoke(app, ["report", str(out)], env={"COLUMNS": "80"})
    assert again.exit_code == 0 and "3.12" in again.output


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "0"], "--batch-size must be >= 1"),
    (["--cost-model", "table"], "needs --cost-table"),
    (["--cost-model", "cubic"], "--cost-model 'cubic': valid are"),
    (["--cost-table", "/nonexistent.json", "--cost-model", "table"], "no such file"),
    (["--headroom", "0.5"], "--headroom must be >= 1"),
])
def test_cli_capacity_rejects_bad_input(args: list[str], message: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["capacity", *args, "--out", str(tmp_path / "x.json")], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "x.json").exists()


@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium binary installed (apt-get install chromium)")
def test_capacity_report_draws_in_headless_chromium(tiny_plan: CapacityResult, tmp_path: Path) -> None:
    from reports.page import write_html

    page = write_html([tiny_plan], tmp_path / "cap.html")
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=90)
    status = re.search(r'id="report-status"[^>]*', done.stdout).group(0)
    assert 'data-state="rendered"' in status and 'data-plots="4"' in status, status
    console = [ln for ln in done.stderr.splitlines() if "CONSOLE" in ln]
    assert not [ln for ln in console if "Error" in ln or "WARN" in ln], console
