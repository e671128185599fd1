"""The dedupe writes a (tenant, request ID) key as one string (a string ID) or one int (a
whole-number ID, a sim client's: the tenant's number above the ID's bits), else a tuple. The
keys must stand for the pairs one to one, whatever the order tenants first come in, an ID at
or past the packed range, or more tenants than the dedupe numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from targets.dedupe import _ID_BITS, _PREFIXES_KEPT, Deduper
from targets.protocol import OK, Attempt, Response

EDGE = 1 << _ID_BITS
ids = st.one_of(
    st.integers(-3, 3), st.integers(EDGE - 3, EDGE + 3), st.integers(-(EDGE << 4), EDGE << 4),
    st.sampled_from(["", "0", "1", "7", "a", "t-1", "1:x"]), st.text(max_size=4))
pairs = st.lists(st.tuples(st.sampled_from(["", "t", "gold", "1:t", "t0"]), ids), min_size=1, max_size=40)


def _equal_exactly_when_the_pairs_are(d: Deduper, script: list[tuple[str, str | int]]) -> None:
    keys = [d._key(tenant, rid) for tenant, rid in script]
    for (p, k) in zip(script, keys):
        for (q, m) in zip(script, keys):
            assert (k == m) == (p == q), (p, q, k, m)
    assert [d._key(tenant, rid) for tenant, rid in script] == keys  # and the same pair, the same key again


@given(pairs)
def test_keys_are_equal_exactly_when_tenant_and_request_id_are(script):
    _equal_exactly_when_the_pairs_are(Deduper(), script)


def test_tenants_past_those_numbered_still_get_keys_of_their_own() -> None:
    d = Deduper()
    many = [(f"t{i}", 5) for i in range(_PREFIXES_KEPT + 3)] + [(f"t{i}", "5") for i in range(_PREFIXES_KEPT + 3)]
    keys = {d._key(t, rid) for t, rid in many}
    assert len(keys) == len(many)
    _equal_exactly_when_the_pairs_are(d, [("t1", 5), (f"t{_PREFIXES_KEPT + 1}", 5), ("t1", EDGE + 5), ("t1", "5")])


def _attempt(tenant: str, rid: str | int, content: int = 1) -> Attempt:
    return Attempt(uid=0, tenant=tenant, conn=0, content=content, variant=0, size=8, sent_s=0.0, attempt_no=0,
                   request_id=rid)


def test_a_numbered_request_is_replayed_to_its_own_tenant_only() -> None:
    d, answers = Deduper(ttl_s=10.0), []
    first = _attempt("gold", 7)
    assert d.offer(first, 0.0)
    d.finish(first, Response(OK, output="y"), 0.1)
    again = _attempt("gold", 7)
    again.on_answer = answers.append
    assert not d.offer(again, 0.2) and answers[0].output == "y"  # replayed
    for other in (_attempt("silver", 7), _attempt("gold", "7"), _attempt("gold", 7 + EDGE)):
        assert d.offer(other, 0.3)  # another tenant, a string ID, another number: new work
    clash = _attempt("gold", 7, content=2)
    clash.on_answer = answers.append
    assert not d.offer(clash, 0.4) and answers[1].status == 400  # the same ID with another input
