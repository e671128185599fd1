"""A live compare a user can start: the suite shortened to a bounded time, and each scenario's
live winner set beside the sim's on the same configs (harness.analysis.compare.live)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from harness.analysis.compare import compare_live
from harness.analysis.compare.live import (LIVE_AFTER_S, LIVE_BEFORE_S, LIVE_DISTURBANCE_S, LIVE_RUN_S, live_plan,
                                           workload_of)
from harness.analysis.shorten import disturbance
from harness.engine.sim import run_sim
from reports.compare import render
from workloads.loader import load_suite, load_workload


def test_the_live_plan_bounds_every_scenario_and_keeps_each_disturbance() -> None:
    names = load_suite("bad-day")
    plan = live_plan(names)
    shorten = workload_of({w: p["shortening"] for w, p in plan.items()})
    for name in names:
        full, short = load_workload(name), shorten(name)
        assert short.duration_s == plan[name]["run_s"] <= full.duration_s
        if disturbance(full) is None:
            assert short.duration_s <= max(LIVE_RUN_S, 0.0) + 1e-9, name
        else:
            d0, d1 = disturbance(short)
            assert d1 - d0 > 0, name  # the spike, fault or burst is still there
            assert short.duration_s - d1 >= min(LIVE_AFTER_S, full.duration_s - disturbance(full)[1]) - 1e-6, name
            assert short.duration_s <= LIVE_BEFORE_S + max(LIVE_DISTURBANCE_S, d1 - d0) + LIVE_AFTER_S + 1e-6
    # The whole suite, both sides: a bounded wall time (each run also has its warm-up and start).
    assert sum(p["run_s"] for p in plan.values()) < 300
    assert sum(p["full_s"] for p in plan.values()) > 1000  # what it used to run, per side


def _in_sim(plan: Any) -> Any:
    """A live compare's run_one that runs the plan in sim: no servers, the same configs."""
    return run_sim(plan.config, plan.workload, plan.seed)


@pytest.mark.slow  # over 2 s on 2 cores (issue 39: the fast tier under 45 s)
def test_a_live_compare_records_its_shortening_and_the_sim_beside_it() -> None:
    result = compare_live("naive", "hardened", ["steady", "spike"], 1, {}, None, None, 0.02, run_one=_in_sim)
    block = result.live or {}
    assert block["shortened"]["steady"]["run_s"] == LIVE_RUN_S < block["shortened"]["steady"]["full_s"]
    assert result.runs["steady"]["naive"].summary.duration_s == LIVE_RUN_S
    sim = block["sim"]
    assert set(sim) == {"steady", "spike"}
    # Here "live" ran in sim too, on the same configs and seed: the two must agree exactly.
    for name, row in sim.items():
        assert row["agree"] and row["live"] == row["sim"], (name, row)
        for side in ("naive", "hardened"):
            live, simulated = row["goodput"][side]
            assert live == simulated
    assert sim["spike"]["live"] == "B"
    console = Console(width=80, record=True)
    render(result, console)
    text = console.export_text()
    assert "live / sim on the same configs" in text and "same winner in 2 of 2" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "steady 20 s of 60" in text
    from reports.compare import sections

    live_sim = [sec for sec in sections(result) if sec.title == "Live against sim on the same configs"]
    assert len(live_sim) == 1 and "same winner in 2 of 2" in live_sim[0].note and "<td>spike</td>" in live_sim[0].html


def test_duration_turns_the_shortening_off() -> None:
    result = compare_live("naive", "hardened", ["steady"], 1, {}, 2.0, None, 0.05, run_one=_in_sim,
                          against_sim=False)
    assert (result.live or {}).get("shortened") is None and "sim" not in (result.live or {})
    assert result.runs["steady"]["naive"].summary.duration_s == 2.0
