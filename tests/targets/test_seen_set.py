"""A simulation's record of the requests computed (`SeenSet`: flags indexed by the request's number,
a set for ints the flags do not reach) holds exactly the ints added, as a set would: `add` says
whether each was new, `len` and `in` agree, whatever the order (dense numbers, far ones, negative
ones, numbers the flags grow over later), and `clear` forgets them all."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.bounded import SeenSet

ints = st.one_of(st.integers(0, 300), st.integers(-50, 20_000), st.integers(-10**12, 10**12))


@settings(max_examples=400)
@given(keys=st.lists(ints, max_size=300), probes=st.lists(ints, max_size=30))
def test_it_holds_what_a_set_holds(keys, probes):
    seen, model = SeenSet(), set()
    for k in keys:
        assert seen.add(k, 0.0) == (k not in model)
        model.add(k)
        assert len(seen) == len(model)
    for k in probes + keys:
        assert (k in seen) == (k in model)
    seen.clear()
    assert len(seen) == 0 and all(k not in seen for k in keys)


def test_an_int_the_flags_grow_over_is_not_added_twice():
    seen = SeenSet()
    assert seen.add(5_000, 0.0)       # past the flags' reach: kept in the set
    assert seen.add(4_000, 0.0)       # the flags grow to 4,001
    assert not seen.add(5_000, 0.0)   # the flags grow over 5,000: it moves, still counted once
    assert len(seen) == 2 and 5_000 in seen and 4_999 not in seen
