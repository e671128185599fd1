"""BoundedMap against a plain model: its log of touches (expiry and eviction from the
front, replaced entries skipped, compaction) must never change what the map holds,
expires or evicts, nor the order it holds them in."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.bounded import Bound, BoundedMap, Entry

OPS = st.lists(st.tuples(st.sampled_from(["put", "put_entry", "get", "entry", "touch", "refresh", "pop", "prune"]),
                         st.integers(0, 6), st.floats(0.0, 3.0)), max_size=300)


class Model:
    """Insertion-ordered dict of key -> (time, value), pruned by scanning from the front."""

    def __init__(self, max_items: int, ttl: float) -> None:
        self.items: dict = {}
        self.max, self.ttl = max_items, ttl
        self.evicted = self.expired = 0

    def prune(self, now: float) -> None:
        for k in list(self.items):
            if now - self.items[k][0] <= self.ttl:
                break
            del self.items[k]
            self.expired += 1

    def put(self, k, v, now):
        self.items.pop(k, None)
        self.items[k] = (now, v)
        if self.ttl != math.inf:
            self.prune(now)
        while len(self.items) > self.max:
            del self.items[next(iter(self.items))]
            self.evicted += 1

    def get(self, k, now):
        item = self.items.get(k)
        if item is None:
            return None
        if now - item[0] > self.ttl:
            del self.items[k]
            self.expired += 1
            return None
        return item[1]

    def touch(self, k, now):
        if k in self.items:
            self.items[k] = (now, self.items.pop(k)[1])

    def refresh(self, k, now):
        value = self.get(k, now)
        if k in self.items:
            self.touch(k, now)
            if self.ttl != math.inf:
                self.prune(now)
        return value


@settings(max_examples=150, deadline=None)
@given(OPS, st.integers(1, 5), st.sampled_from([0.0, 0.5, 1.0, math.inf]))
def test_bounded_map_matches_a_plain_model(ops, max_items, ttl):
    m, ref = BoundedMap(Bound(max_items, ttl)), Model(max_items, ttl)
    now = 0.0
    for op, key, dt in ops:
        now += dt  # time moves forward, as loop time does
        if op == "put":
            m.put(key, now, now)
            ref.put(key, now, now)
        elif op == "put_entry":  # an entry the caller made (the dedupe's remembered answers): a put
            m.put_entry(Entry(-1.0, now, key), now)
            ref.put(key, now, now)
        elif op == "entry":
            e = m.entry(key, now)
            assert (None if e is None else (e.key, e.value)) == (None if (v := ref.get(key, now)) is None else (key, v))
        elif op == "get":
            assert m.get(key, now) == ref.get(key, now)
        elif op == "touch":
            m.touch(key, now)
            ref.touch(key, now)
        elif op == "refresh":
            assert m.refresh(key, now) == ref.refresh(key, now)
        elif op == "pop":
            assert m.pop(key) == (ref.items.pop(key)[1] if key in ref.items else None)
        else:
            m.prune(now)
            ref.prune(now)
        assert list(m) == list(ref.items)
        assert (m.evicted, m.expired) == (ref.evicted, ref.expired)


def test_touching_the_same_keys_forever_keeps_the_log_within_twice_the_entries():
    """Every touch logs an entry and the replaced ones wait in the log: compaction keeps
    memory bounded by the live entries, not by the traffic (an infinite TTL never prunes)."""
    m = BoundedMap(Bound(10, math.inf))
    for i in range(10):
        m.put(i, i, 0.0)
    for t in range(1, 20_000):
        m.touch(t % 10, float(t))
        assert len(m._log) <= 2 * len(m) + 64
    assert len(m) == 10 and list(m) == [(t % 10) for t in range(19_990, 20_000)]
    m.put(10, 10, 20_000.0)  # past max_items: the least recently touched goes
    assert 19_990 % 10 not in m and m.evicted == 1


def test_a_stream_of_expiring_puts_keeps_the_consumed_front_of_the_log_bounded():
    """Expiry and eviction pop from the log's front by moving its head; the popped front is
    dropped in bulk once it is 1,024 entries and half the list, so a long stream of puts
    holds memory for the live entries, not for the traffic."""
    m = BoundedMap(Bound(500, 1.0))
    longest = 0
    for t in range(200_000):
        m.put(t, t, t / 1000)  # a thousand a second, each kept a second: about 1,000 live, 500 kept
        longest = max(longest, len(m._log))
        assert len(m._log) - m._head <= 2 * len(m) + 64
    assert len(m) == 500 and longest <= 2 * (2 * 500 + 64) + 1024
    assert list(m) == list(range(199_500, 200_000))


def test_a_replaced_touch_at_the_front_does_not_hold_back_the_expiry_behind_it():
    """The log's front slot is a touch of `e` that a later touch replaced; `x`, behind it, has
    expired. Pruning must skip the replaced slot (not read `e`'s new time there) and expire `x`."""
    m = BoundedMap(Bound(10, 1.0))
    m.put("e", 1, 0.0)
    m.put("x", 2, 1.0)
    m.touch("e", 5.0)
    assert m.prune(5.5) == 1 and list(m) == ["e"] and m.expired == 1
    m.refresh("e", 5.6)  # the same through refresh: its replaced slots never expire it
    assert m.get("e", 6.5) == 1 and list(m) == ["e"]
