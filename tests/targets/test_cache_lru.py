"""The response cache is an LRU of `entries` outputs: against a reference LRU (an OrderedDict that
moves a key to the back on every put and hit, and drops its front past `entries`), every lookup's
hit and output, the entries held and the evictions counted agree, over any sequence of puts and
lookups."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.cache import ResponseCache
from targets.config import CacheMode
from targets.protocol import Attempt


def _attempt(content: int) -> Attempt:
    return Attempt(uid=0, tenant="t", conn=0, content=content, variant=0, size=64, sent_s=0.0, attempt_no=0)


ops = st.lists(st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 12), st.sampled_from([None, 0, "x"])),
               max_size=400)


@settings(max_examples=300)
@given(entries=st.integers(1, 8), steps=ops)
def test_the_cache_keeps_and_evicts_as_a_reference_lru(entries, steps):
    cache = ResponseCache(CacheMode.NORMALIZED, entries, "v1", 0.0)
    model: OrderedDict[int, object] = OrderedDict()
    evictions = 0
    for op, content, output in steps:
        if op == "put":
            cache.put(_attempt(content), output)
            model[content] = output
            model.move_to_end(content)
            if len(model) > entries:
                model.popitem(last=False)
                evictions += 1
        else:
            hit, got = cache.get(_attempt(content))
            assert hit == (content in model)
            assert got == (model[content] if hit else None)
            if hit:
                model.move_to_end(content)
        assert len(cache._data) == len(model) <= entries
        assert cache.stats.evictions == evictions
    assert list(cache._data) == list(model)  # the same keys, in the same order (least recent first)
