"""`harness.engine.hdr.record_counts` records as hdrh's own `record_value` loop does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from harness.engine.hdr import new_histogram, record_counts
from harness.engine.llm_run import count_gaps, record_gaps

_VALUES = st.one_of(st.integers(-5, 10**6), st.integers(0, 2 * 3_600_000_000), st.integers(2**53 - 2, 2**60))


def _state(hist) -> tuple[list[int], int, int, int]:
    return (np.ctypeslib.as_array(hist.counts)[:hist.counts_len].tolist(), hist.total_count, hist.min_value,
            hist.max_value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_VALUES, st.integers(0, 1_000)), max_size=60),
       st.lists(st.tuples(st.integers(1, 10**7), st.integers(1, 9)), max_size=10))
def test_bulk_recording_matches_record_value_one_by_one(pairs, before):
    loop, bulk = new_histogram(), new_histogram()
    for hist in (loop, bulk):  # a histogram that already holds values
        for value, count in before:
            hist.record_value(value, count)
    for value, count in pairs:
        loop.record_value(value, count)
    record_counts(bulk, [v for v, _ in pairs], [c for _, c in pairs])
    assert _state(bulk) == _state(loop)


def test_an_llm_runs_gaps_are_recorded_whole():
    itl: dict[int, int] = {}
    count_gaps(itl, {0.0125: 3, 0.0000001: 2})   # 12,500 us; a gap under a microsecond counts as 1
    count_gaps(itl, {0.0125: 1, 2.5: 4})
    assert itl == {12_500: 4, 1: 2, 2_500_000: 4}
    hist = new_histogram()
    record_gaps(hist, itl)
    assert hist.get_total_count() == 10
    assert hist.get_count_at_value(12_500) == 4 and hist.get_count_at_value(1) == 2
    assert hist.min_value == 1 and hist.max_value == 2_500_000
