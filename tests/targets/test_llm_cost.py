"""The LLM step cost model: its terms, its defaults' sanity, and the table fit."""

from __future__ import annotations

import numpy as np
import pytest

from targets.llm.cost import DEFAULT, StepCost


def test_each_term_prices_its_resource():
    c = StepCost(base_s=0.01, per_prefill_token_s=1e-4, per_decode_seq_s=2e-4, per_context_token_s=1e-6)
    assert c.time_s(0, 0, 0) == 0.01
    assert c.time_s(1000, 0, 0) == pytest.approx(0.11)
    assert c.time_s(0, 10, 5000) == pytest.approx(0.01 + 0.002 + 0.005)


def test_default_is_memory_bound_at_small_batch():
    # One decode row costs about the weight read; 256 rows cost a few times that, not 256 times.
    one = DEFAULT.decode_s(1, 500)
    many = DEFAULT.decode_s(256, 256 * 500)
    assert 0.007 < one < 0.01
    assert 3 < many / one < 15


def test_from_table_recovers_the_coefficients_of_measured_rows():
    truth = StepCost(base_s=0.006, per_prefill_token_s=5e-5, per_decode_seq_s=3e-4, per_context_token_s=2e-7)
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(200):
        p, d, c = int(rng.integers(0, 2000)), int(rng.integers(0, 64)), int(rng.integers(0, 60000))
        rows.append((p, d, c, truth.time_s(p, d, c) * (1 + rng.normal(0, 0.002))))
    fit = StepCost.from_table(rows)
    assert fit.base_s == pytest.approx(truth.base_s, rel=0.1)
    assert fit.per_prefill_token_s == pytest.approx(truth.per_prefill_token_s, rel=0.05)
    assert fit.per_decode_seq_s == pytest.approx(truth.per_decode_seq_s, rel=0.1)
    assert fit.per_context_token_s == pytest.approx(truth.per_context_token_s, rel=0.1)


@pytest.mark.parametrize("rows, match", [
    ([(1, 2, 3)], "rows are"),
    ([(1, 2, 3, 0.1)] * 3, ">= 4 rows"),
    ([(1, 2, 3, float("nan"))] * 4, "finite"),
    ([(-1, 2, 3, 0.1)] * 4, "non-negative"),
])
def test_from_table_refuses_rows_that_cannot_fit(rows, match):
    with pytest.raises(ValueError, match=match):
        StepCost.from_table(rows)


def test_coefficients_are_checked():
    with pytest.raises(ValueError, match="per_decode_seq_s"):
        StepCost(0.01, 0.0, -1.0, 0.0)
    with pytest.raises(ValueError, match="must cost something"):
        StepCost(0.0, 0.0, 0.0, 1e-6)


def test_fit_median_follows_the_median_step_where_a_long_tail_pulls_least_squares_off():
    # 200 decode steps (1-8 rows) and 40 prefill steps of a true cost, every fifth step 5x slower (preempted)
    true = StepCost(base_s=1e-3, per_prefill_token_s=50e-6, per_decode_seq_s=300e-6, per_context_token_s=1e-6)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(240):
        p = int(rng.integers(16, 128)) if i % 6 == 0 else 0
        d, c = int(rng.integers(1, 9)), int(rng.integers(0, 400))
        wall = true.time_s(p, d, c) * (5.0 if i % 5 == 0 else 1.0)
        rows.append((p, d, c, wall))
    fit = StepCost.fit_median(rows)
    for p, d, c in ((0, 1, 50), (0, 8, 400), (100, 2, 300)):
        assert fit.time_s(p, d, c) == pytest.approx(true.time_s(p, d, c), rel=0.05)
    ls = StepCost.from_table(rows)
    assert ls.time_s(0, 1, 50) > 1.15 * true.time_s(0, 1, 50)    # least squares follows the tail


def test_fit_median_refuses_what_from_table_refuses():
    with pytest.raises(ValueError, match=">= 4 rows"):
        StepCost.fit_median([(1, 1, 1, 0.01)])


def test_fit_wake_recovers_what_a_step_after_idle_costs_more():
    """Steps back to back priced by one cost; steps after idle (>= WAKE_IDLE_S) by it plus 0.9 ms: the fit
    finds the four coefficients from the warm steps and the wake-up from the others."""
    from targets.llm.cost import WAKE_IDLE_S

    true = StepCost(base_s=4e-4, per_prefill_token_s=2e-5, per_decode_seq_s=1e-4, per_context_token_s=1e-6)
    rng = np.random.default_rng(3)
    rows = []
    for i in range(400):
        p, d, c = int(rng.integers(0, 60)) * (i % 3 == 0), int(rng.integers(1, 8)), int(rng.integers(16, 400))
        idle = 0.3 if i % 5 == 0 else 1e-4
        rows.append((p, d, c, true.step_s(p, d, c, idle) + 0.9e-3 * (idle >= WAKE_IDLE_S), idle))
    fit = StepCost.fit_wake(rows)
    assert fit.wake_s == pytest.approx(0.9e-3, rel=0.02)
    assert fit.base_s == pytest.approx(true.base_s, rel=0.05)
    assert fit.per_decode_seq_s == pytest.approx(true.per_decode_seq_s, rel=0.05)
    assert true.step_s(10, 1, 100, WAKE_IDLE_S) == true.time_s(10, 1, 100)   # true has no wake-up
    assert fit.step_s(10, 1, 100, WAKE_IDLE_S) - fit.step_s(10, 1, 100, WAKE_IDLE_S / 2) == pytest.approx(fit.wake_s)
    # no step after idle: no wake-up; rows of four columns are refused
    assert StepCost.fit_wake([r for r in rows if r[4] < WAKE_IDLE_S]).wake_s == 0
    with pytest.raises(ValueError, match="idle_s"):
        StepCost.fit_wake([r[:4] for r in rows])
    with pytest.raises(ValueError, match="wake_s"):
        StepCost(1e-3, 0, 0, 0, wake_s=-1.0)
