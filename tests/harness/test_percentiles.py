"""`percentile_of` is numpy's percentile with method "higher" (HdrHistogram's rank), read by one
partition: the same value for any latencies (ties, infinities, NaN) and any percentile."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.percentiles import percentile_of

latency = st.one_of(st.floats(0.0, 10.0), st.sampled_from([0.0, 0.001, 0.25, math.inf]))


def _numpy(values: np.ndarray, q: float) -> float | None:
    if len(values) == 0:
        return None
    x = float(np.percentile(values, q, method="higher"))
    return x if math.isfinite(x) else None


@settings(max_examples=400)
@given(st.lists(latency, max_size=300), st.one_of(st.sampled_from([0.0, 50.0, 90.0, 99.0, 99.9, 100.0]),
                                                   st.floats(0.0, 100.0)), st.booleans())
def test_the_same_value_as_numpys_higher_percentile(values, q, with_nan):
    a = np.array(values + ([math.nan] if with_nan else []), dtype=np.float64)
    before = a.copy()
    assert percentile_of(a, q) == _numpy(before, q)
    assert np.array_equal(a, before, equal_nan=True)  # its input unchanged
    ints = np.array([int(v * 1000) for v in values if math.isfinite(v)], dtype=np.int64)
    assert percentile_of(ints, q) == _numpy(ints, q)
