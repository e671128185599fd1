"""Confidence over seeds: intervals and differences against closed forms, and the edge cases
(one seed, a seed with no value, no spread) that must not invent an interval."""

import math

import pytest
from scipy import stats as sps

from harness.analysis.stats import difference, interval, seeds_from


def test_seeds_are_consecutive_from_the_base_seed():
    assert seeds_from(7, 3) == [7, 8, 9]
    assert seeds_from(1, 1) == [1]
    with pytest.raises(ValueError):
        seeds_from(1, 0)


def test_interval_is_student_t_over_the_seeds():
    # 1..5: mean 3, sd sqrt(2.5), so half-width t(0.975, 4) x sqrt(2.5 / 5) = 2.7764 x 0.7071 = 1.9633
    ci = interval([1, 2, 3, 4, 5])
    assert ci.mean == pytest.approx(3.0)
    assert ci.half_width == pytest.approx(2.776445 * math.sqrt(0.5), rel=1e-5)
    assert (ci.lo, ci.hi, ci.n) == (pytest.approx(3 - ci.half_width), pytest.approx(3 + ci.half_width), 5)
    assert ci.excludes(0.5) and not ci.excludes(2.0)


def test_one_seed_has_no_interval():
    ci = interval([0.25])
    assert ci.mean == 0.25 and ci.lo is None and ci.hi is None and not ci.has_interval
    assert not ci.excludes(0.0)  # no interval excludes nothing


def test_a_seed_without_a_value_means_no_interval_and_no_mean():
    ci = interval([0.1, None, 0.2, math.inf])
    assert (ci.mean, ci.lo, ci.missing, ci.n) == (None, None, 2, 4)


def test_paired_difference_matches_scipys_paired_t():
    a = [0.50, 0.52, 0.47, 0.55, 0.51]
    b = [0.53, 0.56, 0.49, 0.57, 0.55]
    d = difference(a, b)
    ref = sps.ttest_rel(b, a)
    ci = ref.confidence_interval(0.95)
    assert d.test == "paired t" and d.n == 5
    assert d.mean == pytest.approx(0.03)
    assert (d.lo, d.hi) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert d.p_value == pytest.approx(ref.pvalue)
    assert d.excludes(0.0) and d.significant()


def test_noise_only_difference_is_not_significant():
    a = [0.50, 0.52, 0.47, 0.55, 0.51]
    b = [0.51, 0.50, 0.49, 0.54, 0.51]  # B - A: +0.01, -0.02, +0.02, -0.01, 0
    d = difference(a, b)
    assert d.mean == pytest.approx(0.0, abs=1e-12)
    assert not d.excludes(0.0) and not d.significant()


def test_one_sided_test_and_margin():
    base = [100.0, 102.0, 98.0, 101.0, 99.0]
    new = [110.0, 113.0, 107.0, 111.0, 109.0]  # about +10%
    worse = difference(base, new, alternative="greater")
    assert worse.p_value < 0.001 and worse.effect > 5
    # Against the baseline moved +15%, the same runs are not significantly worse.
    within = difference([x * 1.15 for x in base], new, alternative="greater")
    assert within.p_value > 0.5
    # The other direction is not the tested one.
    assert difference(base, new, alternative="less").p_value > 0.99


def test_no_spread_is_certain_not_undefined():
    same = difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert (same.lo, same.hi, same.p_value) == (0.0, 0.0, 1.0)
    shifted = difference([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], alternative="greater")
    assert (shifted.lo, shifted.hi, shifted.p_value) == (1.0, 1.0, 0.0)


def test_welch_for_different_seeds_and_guards():
    d = difference([1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.5], paired=False)
    ref = sps.ttest_ind([3.0, 4.0, 5.0, 6.5], [1.0, 2.0, 3.0, 4.0], equal_var=False)
    assert d.test == "Welch t" and d.p_value == pytest.approx(ref.pvalue)
    assert difference([1.0], [2.0]).p_value is None  # one seed: no test
    assert difference([1.0, None], [2.0, 3.0]).mean is None
    with pytest.raises(ValueError):
        difference([1.0, 2.0], [1.0])
