"""Live LLM: `harness profile llm` calibrates the sim (steps and front end) and its cost reads back.

Whether sim and live then agree on TTFT and TPOT at half capacity is a timing figure, measured by
`benchmarks/llm_sim_vs_live.py` (a unit test of wall-clock latency is flaky on a shared machine)."""

from __future__ import annotations

import pytest

from harness.live.llm_profile import load_cost, profile_llm

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_profile_writes_a_cost_that_reads_back(tmp_path):
    prof = profile_llm(rate_rps=4.0, duration_s=5.0, threads=1)
    assert len(prof.rows) > 20
    # The fitted cost explains the measured steps one by one, not only their total (a least-squares fit
    # with a free base term matches the total by construction): it orders steps as their measured times
    # do. A rank correlation, because on a loaded machine each step's wall time also carries the other
    # processes' preemptions (the median step's error there is as large as a constant's, ~0.4-0.6, while
    # the ordering still holds: rho ~0.4, p ~1e-14 at load 6-8). A constant or mis-fitted cost fails.
    from scipy.stats import spearmanr

    c = prof.cost
    predicted = [c.base_s + p * c.per_prefill_token_s + d * c.per_decode_seq_s + x * c.per_context_token_s
                 for p, d, x, _ in prof.rows]
    rho = spearmanr(predicted, [t for *_, t in prof.rows])
    assert rho.statistic > 0.2 and rho.pvalue < 1e-3, (rho, c)
    assert load_cost(prof.to_json(tmp_path / "cost.json")) == prof.cost
