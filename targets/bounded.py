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

from dataclasses import dataclass
from typing import Generic, Hashable, Iterator, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def drop_front(items: list, head: int) -> int:
    """`items` read from `head` on, whose entries before `head` were popped: drop those from
    the list once they are 1,024 and at least half of it, or all of it is popped (amortised
    O(1) an entry); the head to read from now. The containers that pop from a list's front
    this way (bounded maps' logs, queues.Fifo, delayline.DelayLine) are compiled: native
    list reads where a deque's are method calls."""
    if head >= len(items):
        items.clear()
        return 0
    if head >= 1024 and 2 * head >= len(items):
        del items[:head]
        return 0
    return head


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


class Entry(Generic[K, V]):
    """A key's value, when it was last put or touched (`t`), and where in the map's log that
    touch is (`pos`, counted from the log's first entry ever; -1 once out of the map).

    A caller may keep more than one value with a key in a subclass of its own (`put_entry`,
    `entry`): the dedupe's remembered answer and the input it answered, one object where a
    tuple of them would be two more (a map of 50,000 remembered answers makes and frees one
    entry per request)."""

    def __init__(self, t: float, value: V, key: K) -> None:
        self.t = t
        self.value = value
        self.key = key
        self.pos = -1


class BoundedMap(Generic[K, V]):
    """A map whose entries expire `ttl_s` after they were put (or touched), and
    whose oldest entries are evicted past `max_items`.

    `evicted` counts entries dropped for room (not for age): a nonzero count
    means the bound, not the TTL, is what limits memory.

    Each put or touch appends the key's entry to a log, and the entry keeps where (`pos`);
    a log slot is live while its entry's `pos` still names it (a later touch moves `pos`
    on; an entry leaving the map sets it to -1). The live slots are therefore in last-touch
    order, oldest first: expiry and eviction pop from the log's front, skipping slots a
    later touch replaced, and stop at the first live one (amortised O(1), each a native
    read, a plain list operation, and a dict deletion for an entry that goes). A touch of
    a key present (a tenant's bucket used again) moves its entry, with no new object and
    no dict store. The log is a list read from `_head` on (compiled: native appends and
    reads, where a deque's are method calls); the front it has consumed is dropped in
    bulk (`_trim`, which counts it in `_base`, so that `pos` stays a log position). The
    log holds at most about twice the live entries (`_compact`) beside that front, so
    `max_items` still bounds memory.
    """

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        self._items: dict[K, Entry[K, V]] = {}
        self._log: list[Entry[K, V]] = []
        self._head = 0  # the log's oldest slot not yet popped
        self._base = 0  # the log's slots dropped from its front so far (slot i is at pos _base + i)
        self.evicted = 0
        self.expired = 0
        self._ttl = bound.ttl_s
        self._max = bound.max_items

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Forget every entry (not counted as expired or evicted)."""
        for e in self._items.values():
            e.pos = -1
        self._items.clear()
        self._log.clear()
        self._head = 0
        self._base = 0

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        """The keys, oldest touch first."""
        base, log = self._base, self._log
        return iter([log[i].key for i in range(self._head, len(log)) if log[i].pos == base + i])

    def _log_touch(self, entry: Entry[K, V]) -> None:
        """Append `entry`'s touch to the log (its earlier slot, if any, is then replaced)."""
        log = self._log
        entry.pos = self._base + len(log)
        log.append(entry)
        if len(log) - self._head > 2 * len(self._items) + 64:
            self._compact()

    def _set(self, key: K, value: V, now: float) -> None:
        entry = self._items.get(key)
        if entry is None:
            entry = self._items[key] = Entry(now, value, key)
        else:
            entry.t = now
            entry.value = value
        self._log_touch(entry)

    def _compact(self) -> None:
        """Drop the log's replaced slots (touches of keys that were touched again)."""
        log, base = self._log, self._base
        live = [log[i] for i in range(self._head, len(log)) if log[i].pos == base + i]
        for i, e in enumerate(live):
            e.pos = i
        self._log = live
        self._head = self._base = 0

    def _trim(self, head: int) -> None:
        """The log's slots before `head` are popped (see drop_front)."""
        new_head = drop_front(self._log, head)
        self._base += head - new_head
        self._head = new_head

    def _drop(self, entry: Entry[K, V]) -> None:
        del self._items[entry.key]
        entry.pos = -1

    def _live(self, key: K, now: float) -> Entry[K, V] | None:
        """`key`'s entry if it is live; an expired one is dropped (counted)."""
        item = self._items.get(key)
        if item is not None and now - item.t > self._ttl:
            self._drop(item)
            self.expired += 1
            return None
        return item

    def get(self, key: K, now: float) -> V | None:
        """The live value at `key`, or None (an expired entry is dropped)."""
        item = self._live(key, now)
        return None if item is None else item.value

    def refresh(self, key: K, now: float) -> V | None:
        """The live value at `key` with its TTL restarted (it was used), or None (an
        expired entry is dropped): `get` then `put` of the same value, in one call."""
        item = self._live(key, now)
        if item is None:
            return None
        item.t = now
        log = self._log
        if log[len(log) - 1] is not item:
            # (Already the newest touch, in a tenant's run of requests, it keeps its slot: a new
            # one would take the same place in the log.)
            self._log_touch(item)
        self.prune(now)
        return item.value

    def put(self, key: K, value: V, now: float) -> None:
        """Store `value`, restarting its TTL; expire and evict to stay in bounds."""
        self._set(key, value, now)
        self._bound(now)

    def put_entry(self, entry: Entry[K, V], now: float) -> None:
        """`put` of an entry the caller made (a subclass: see `Entry`), at its `key`, in place of any
        entry there; its `t` is set to `now`."""
        items, key = self._items, entry.key
        old = items.get(key)
        if old is not None:
            old.pos = -1  # out of the map: its log slot is dead
        entry.t = now
        items[key] = entry
        self._log_touch(entry)
        self._bound(now)

    def entry(self, key: K, now: float) -> Entry[K, V] | None:
        """The live entry at `key` (`get`'s, the entry itself), or None (an expired one is dropped)."""
        return self._live(key, now)

    def _bound(self, now: float) -> None:
        """Expire, then evict the oldest entries past `max_items`."""
        self.prune(now)
        items = self._items
        if len(items) > self._max:
            log, head, base = self._log, self._head, self._base
            while len(items) > self._max:
                e = log[head]
                if e.pos == base + head:
                    self._drop(e)
                    self.evicted += 1
                head += 1
            self._trim(head)

    def touch(self, key: K, now: float) -> None:
        """Restart `key`'s TTL (it was used), if present."""
        item = self._items.get(key)
        if item is not None:
            item.t = now
            self._log_touch(item)

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        item.pos = -1
        return item.value

    def prune(self, now: float) -> int:
        """Drop every entry older than the TTL; return how many."""
        ttl, log, n, base = self._ttl, self._log, 0, self._base
        head = start = self._head
        while head < len(log):
            e = log[head]
            if e.pos == base + head:  # a live slot (else replaced by a later touch: skipped)
                if now - e.t <= ttl:  # never past an infinite TTL (sim's accounting)
                    break
                self._drop(e)
                n += 1
            head += 1
        if head != start:
            self._trim(head)
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


class SeenSet:
    """Every int ever added, RecentSet's interface without a bound: for a finite run (a
    simulation), where forgetting would only blur the accounting (it is asked once per
    request computed, with the request's number).

    The ints a run adds are its requests' numbers, 0 up, so they are kept as flags in a list
    indexed by the int (no int boxed, no hashed slot: a set of 400,000 request numbers was a
    set table and 400,000 int objects, read cold); the list grows to at most twice the largest
    int added past its end, plus 4,096. An int outside that (negative, or far past the end) is
    kept in a set, and moves into the flags if the list later grows over it."""

    def __init__(self) -> None:
        self._flags: list[bool] = []
        self._flagged = 0                 # ints held as flags
        self._others: set[int] = set()    # ints the flags do not reach

    def __len__(self) -> int:
        return self._flagged + len(self._others)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, int) and 0 <= key < len(self._flags):
            return self._flags[key]
        return key in self._others

    def add(self, key: int, now: float) -> bool:
        """Add `key`; True if it was not here. `now` is ignored (nothing expires)."""
        flags = self._flags
        if not 0 <= key < len(flags):
            if not 0 <= key < 2 * len(flags) + 4096:
                others = self._others
                if key in others:
                    return False
                others.add(key)
                return True
            self._grow(max(2 * len(flags), key + 1))  # (an int of the set's below the new end moves in)
        if flags[key]:
            return False
        flags[key] = True
        self._flagged += 1
        return True

    def _grow(self, size: int) -> None:
        """Flags for 0 .. size - 1; the set's ints below `size` move into them."""
        flags = self._flags
        flags.extend([False] * (size - len(flags)))
        others = self._others
        if others:
            for k in [k for k in others if 0 <= k < size]:
                others.discard(k)
                flags[k] = True
                self._flagged += 1

    def clear(self) -> None:
        self._flags.clear()
        self._flagged = 0
        self._others.clear()
