"""Bounded, expiring containers for per-request and per-tenant state.

Every structure a client can grow by sending requests (IDs seen, answers
remembered, tenants named) lives in one of these, so memory is bounded by
`max_items` whatever the traffic, and by `ttl_s` of traffic when it is light.
They are clock-free: each call that can expire entries takes `now` (loop
seconds), so the same containers run on the virtual clock in sim.

Entries are kept in insertion (or last-touch) order, so expiry pops from the
front and stops at the first live entry: amortised O(1) per call.
"""

from __future__ import annotations

import math

from collections import OrderedDict
from dataclasses import dataclass
from typing import Final, Generic, Hashable, Iterator, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class Bound:
    """A structure's limits: at most `max_items` entries, each kept `ttl_s` seconds."""

    max_items: int
    ttl_s: float

    def __post_init__(self) -> None:
        if self.max_items < 1:
            raise ValueError(f"max_items must be >= 1, got {self.max_items}")
        if not self.ttl_s >= 0:
            raise ValueError(f"ttl_s must be >= 0, got {self.ttl_s}")


_NONE: Final = object()  # no key: the front is unknown


class BoundedMap(Generic[K, V]):
    """A map whose entries expire `ttl_s` after they were put (or touched), and
    whose oldest entries are evicted past `max_items`.

    `evicted` counts entries dropped for room (not for age): a nonzero count
    means the bound, not the TTL, is what limits memory.
    """

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self.evicted = 0
        self.expired = 0
        self._ttl = bound.ttl_s
        self._max = bound.max_items
        # The front (oldest) entry's key and time, once prune has seen it; -inf once
        # that entry moved or left. Nothing expires while the front is live: prune's O(1) exit.
        self._front_t = -math.inf
        self._front_key: object = _NONE

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Forget every entry (not counted as expired or evicted)."""
        self._items.clear()
        self._front_t, self._front_key = -math.inf, _NONE

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def get(self, key: K, now: float) -> V | None:
        """The live value at `key`, or None (an expired entry is dropped)."""
        item = self._items.get(key)
        if item is None:
            return None
        if now - item[0] > self._ttl:
            del self._items[key]
            self.expired += 1
            self._moved(key)
            return None
        return item[1]

    def refresh(self, key: K, now: float) -> V | None:
        """The live value at `key` with its TTL restarted (it was used), or None (an
        expired entry is dropped): `get` then `put` of the same value, in one call."""
        items = self._items
        item = items.get(key)
        if item is None:
            return None
        if now - item[0] > self._ttl:
            del items[key]
            self.expired += 1
            self._moved(key)
            return None
        value = item[1]
        items.move_to_end(key)
        if key == self._front_key:
            self._front_t, self._front_key = -math.inf, _NONE
        items[key] = (now, value)
        if now - self._front_t > self._ttl:
            self.prune(now)
        return value

    def put(self, key: K, value: V, now: float) -> None:
        """Store `value`, restarting its TTL; expire and evict to stay in bounds."""
        items = self._items
        if key in items:
            items.move_to_end(key)
            self._moved(key)
        items[key] = (now, value)  # a new key goes last: the order stays oldest first
        if now - self._front_t > self._ttl:  # never under an infinite TTL (sim's accounting)
            self.prune(now)
        if len(items) > self._max:
            while len(items) > self._max:
                items.popitem(last=False)
                self.evicted += 1
            self._front_t, self._front_key = -math.inf, _NONE

    def touch(self, key: K, now: float) -> None:
        """Restart `key`'s TTL (it was used), if present."""
        item = self._items.get(key)
        if item is not None:
            self._items[key] = (now, item[1])
            self._items.move_to_end(key)
            self._moved(key)

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        self._moved(key)
        return item[1]

    def _moved(self, key: object) -> None:
        """`key` left its place; if it was the front, the front is unknown now."""
        if key == self._front_key:
            self._front_t, self._front_key = -math.inf, _NONE

    def prune(self, now: float) -> int:
        """Drop every entry older than the TTL; return how many."""
        ttl = self._ttl
        if now - self._front_t <= ttl:
            return 0
        items, n = self._items, 0
        self._front_t, self._front_key = -math.inf, _NONE
        while items:
            key, (t, _) = next(iter(items.items()))
            if now - t <= ttl:
                self._front_t, self._front_key = t, key
                break
            del items[key]
            n += 1
        self.expired += n
        return n


class RecentSet(Generic[K]):
    """The keys added in the last `ttl_s` seconds (at most `max_items` of them)."""

    def __init__(self, bound: Bound) -> None:
        self._map: BoundedMap[K, None] = BoundedMap(bound)
        self._keys = self._map._items  # membership is asked per request: one lookup, no calls

    @property
    def bound(self) -> Bound:
        return self._map.bound

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: K, now: float) -> bool:
        """Add `key` (or restart its TTL); True if it was not here (membership and add
        in one call: a target asks both for every request it computes)."""
        new = key not in self._keys
        self._map.put(key, None, now)
        return new


class SeenSet(Generic[K]):
    """Every key ever added, RecentSet's interface without a bound: for a finite run
    (a simulation), where forgetting would only blur the accounting. One lookup and one
    add per key, no entry of a bounded map's (it is asked once per request computed)."""

    def __init__(self) -> None:
        self._keys: set[K] = set()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: K, now: float) -> bool:
        """Add `key`; True if it was not here. `now` is ignored (nothing expires)."""
        keys = self._keys
        if key in keys:
            return False
        keys.add(key)
        return True

    def clear(self) -> None:
        self._keys.clear()
