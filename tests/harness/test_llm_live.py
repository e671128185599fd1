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
    # The fitted cost explains each measured step, not only their total (a least-squares fit with a
    # free base term matches the total by construction): the median step is predicted within 50%.
    c = prof.cost
    errors = sorted(abs(c.base_s + p * c.per_prefill_token_s + d * c.per_decode_seq_s + x * c.per_context_token_s - t) / t
                    for p, d, x, t in prof.rows)
    assert errors[len(errors) // 2] < 0.5, (errors[len(errors) // 2], c)
    assert load_cost(prof.to_json(tmp_path / "cost.json")) == prof.cost
