"""The response cache writes a key as the content alone where its second part is the common one
(variant 0 when exact, the cache's own model version when normalised). The keys must still stand
for the pairs one to one: two requests share an entry exactly when their pairs are equal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from targets.cache import ResponseCache
from targets.config import CacheMode
from targets.protocol import Attempt

OWN = "v1"


def _attempt(content: int, variant: int) -> Attempt:
    return Attempt(uid=0, tenant="t", conn=0, content=content, variant=variant, size=64, sent_s=0.0, attempt_no=0)


requests = st.tuples(st.integers(-3, 3), st.integers(-2, 2), st.sampled_from([None, "", OWN, "v2", "canary"]))


@given(a=requests, b=requests)
def test_exact_keys_are_equal_exactly_when_content_and_variant_are(a, b):
    cache = ResponseCache(CacheMode.EXACT, 100, OWN, 0.1)
    same = cache.key(_attempt(a[0], a[1]), a[2]) == cache.key(_attempt(b[0], b[1]), b[2])
    assert same == ((a[0], a[1]) == (b[0], b[1]))  # the exact key ignores the version (the doc's flaw)


@given(a=requests, b=requests)
def test_normalized_keys_are_equal_exactly_when_content_and_version_are(a, b):
    cache = ResponseCache(CacheMode.NORMALIZED, 100, OWN, 0.1)
    same = cache.key(_attempt(a[0], a[1]), a[2]) == cache.key(_attempt(b[0], b[1]), b[2])
    assert same == ((a[0], a[2] or OWN) == (b[0], b[2] or OWN))  # no version: the cache's own


@given(a=requests, b=requests)
def test_a_put_is_found_by_exactly_the_requests_with_its_key(a, b):
    for mode in (CacheMode.EXACT, CacheMode.NORMALIZED):
        cache = ResponseCache(mode, 100, OWN, 0.1)
        cache.put(_attempt(a[0], a[1]), "out", a[2])
        hit, output = cache.get(_attempt(b[0], b[1]), b[2])
        expected = ((a[0], a[1]) == (b[0], b[1]) if mode is CacheMode.EXACT
                    else (a[0], a[2] or OWN) == (b[0], b[2] or OWN))
        assert hit == expected and output == ("out" if expected else None)
