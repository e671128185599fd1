"""Live LLM: `harness profile llm` calibrates the sim, and sim and live agree at about half capacity."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from harness.live.llm_drive import serve_and_drive
from harness.live.llm_profile import LIVE_ENGINE, calibration_schedule, load_cost, profile_llm

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_profile_writes_a_cost_that_reads_back(tmp_path):
    prof = profile_llm(rate_rps=4.0, duration_s=5.0, threads=1)
    assert len(prof.rows) > 20 and prof.cost.per_decode_seq_s > 0
    assert load_cost(prof.to_json(tmp_path / "cost.json")) == prof.cost


def test_sim_predicts_live_tpot_at_half_capacity():
    spec = replace(LIVE_ENGINE, cost=profile_llm(threads=1).cost)
    # Half of capacity: the highest sweep rate the calibrated sim serves (>= 95% of offered tokens) / 2.
    served = []
    for rate in (2, 4, 6, 8, 12, 16, 24, 32):
        s = calibration_schedule(rate, 60, 1)
        run = run_figures(simulate(spec, s), "sim", "cal", rate, s.tenants, 2, 0.1)
        if run.output_tok_s >= 0.95 * s.output_tokens.sum() / 60 and run.unfinished == 0:
            served.append(rate)
    rate = max(served) / 2
    s = calibration_schedule(rate, 30, 1)
    sim, live, errors, _ = asyncio.run(serve_and_drive(spec, s))
    assert not errors
    a = run_figures(sim, "sim", "cal", rate, s.tenants, 2, 0.1)
    b = run_figures(live, "live", "cal", rate, s.tenants, 2, 0.1)
    assert b.finished == a.finished == b.requests
    said = (f"at {rate:g} req/s: TTFT p50 sim {a.ttft_s.p50:.4f} live {b.ttft_s.p50:.4f}; "
            f"TPOT p50 sim {a.tpot_s.p50:.4f} live {b.tpot_s.p50:.4f}")
    assert b.tpot_s.p50 == pytest.approx(a.tpot_s.p50, rel=0.15), said
    assert b.ttft_s.p50 == pytest.approx(a.ttft_s.p50, rel=0.15), said
