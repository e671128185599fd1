"""Request queues: FIFO and deficit-round-robin fair across tenants (length buckets over
either: targets.bucketed_queue). Pure data structures: no clock, no asyncio. Times are passed in.

Every queue supports the same small contract used by the batcher:
`push`, `push_front` (re-dispatch), `__len__`, `oldest_s()` (enqueue time of
the request that has waited longest, or None), `pop(n)` (up to n requests, in
the queue's service order) and `drop_if(pred)` (remove and return matching).
"""

from __future__ import annotations

from typing import Callable, Final, Iterator, TypeVar

from targets.bounded import drop_front
from targets.protocol import Attempt

A = TypeVar("A")


class Queue:
    """The contract of the module docstring, as a base class rather than a Protocol: compiled
    (targets.native), a batcher's call of a queue typed so is a native call (a Protocol's is a
    Python-level one), per request."""

    def push(self, item: Attempt) -> None:
        raise NotImplementedError

    def push_front(self, item: Attempt) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Attempt]:
        """The queued items (in no promised order)."""
        raise NotImplementedError

    def oldest_s(self) -> float | None:
        raise NotImplementedError

    def pop(self, n: int) -> list[Attempt]:
        raise NotImplementedError

    def drop_if(self, pred: Callable[[Attempt], bool]) -> list[Attempt]:
        raise NotImplementedError

    def tenant_len(self, tenant: str) -> int:
        raise NotImplementedError

    def active_tenants(self) -> int:
        """Tenants with a request queued (asked of a tenant-fair queue: a FairQueue's, a BucketedQueue's)."""
        raise NotImplementedError


class Fifo:
    """Attempts first in, first out: a list read from a head index (compiled: appends, reads
    and pops are native, where a deque's are method calls); the popped front is dropped in
    bulk (targets.bounded.drop_front)."""

    def __init__(self, items: list[Attempt] | None = None) -> None:
        self.items: list[Attempt] = items if items is not None else []
        self.head = 0

    def size(self) -> int:
        return len(self.items) - self.head

    def append(self, item: Attempt) -> None:
        self.items.append(item)

    def appendleft(self, item: Attempt) -> None:
        if self.head > 0:
            self.head -= 1
            self.items[self.head] = item
        else:
            self.items.insert(0, item)

    def first(self) -> Attempt:
        """The head (the FIFO must not be empty)."""
        return self.items[self.head]

    def popleft(self) -> Attempt:
        items = self.items
        head = self.head
        item = items[head]
        self.head = drop_front(items, head + 1)
        return item

    def popmany(self, k: int) -> list[Attempt]:
        """The first `k` items (at most all of them), popped."""
        items, head = self.items, self.head
        if k <= 0:
            return []
        end = min(head + k, len(items))
        out = items[head:end]
        self.head = drop_front(items, end)
        return out

    def live(self) -> list[Attempt]:
        """The items, head first (a copy)."""
        return self.items[self.head:]


class FifoQueue(Queue):
    """First in, first out; `oldest_s` is the head's enqueue time."""

    def __init__(self) -> None:
        self._items = Fifo()

    def push(self, item: Attempt) -> None:
        self._items.append(item)

    def push_front(self, item: Attempt) -> None:
        self._items.appendleft(item)

    def __len__(self) -> int:
        return self._items.size()

    def __iter__(self) -> Iterator[Attempt]:
        return iter(self._items.live())

    def oldest_s(self) -> float | None:
        items = self._items
        return items.first().enqueued_s if items.size() > 0 else None

    def pop(self, n: int) -> list[Attempt]:
        return self._items.popmany(n)

    def drop_if(self, pred: Callable[[Attempt], bool]) -> list[Attempt]:
        kept: list[Attempt] = []
        dropped: list[Attempt] = []
        for item in self._items.live():
            (dropped if pred(item) else kept).append(item)
        self._items = Fifo(kept)
        return dropped

    def tenant_len(self, tenant: str) -> int:
        return sum(1 for a in self._items.live() if a.tenant == tenant)


class _Lane:
    """A tenant's place in a FairQueue: its FIFO, its DRR credit, and whether it is in the
    round-robin order (backlogged)."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.q = Fifo()
        self.deficit = 0
        self.active = False


# Idle lanes a FairQueue, and zero counts a BucketedQueue, keep beyond twice the backlogged
# tenants before dropping them (memory stays bounded by the tenants in the queue).
IDLE_KEPT: Final = 64


class FairQueue(Queue):
    """Deficit round robin across tenants (Shreedhar and Varghese, 1995).

    Each backlogged tenant gains `quantum` credit per round and is served while
    its head request's cost (input length) fits its credit, so over any run of
    rounds every backlogged tenant gets service within one max-cost of every
    other's, whatever its arrival rate. FIFO within a tenant.
    """

    def __init__(self, quantum: int = 64) -> None:
        if quantum < 1:
            raise ValueError("quantum must be >= 1")
        self.quantum = quantum
        # The backlogged tenants' lanes in round-robin order (a tenant joins at the back when
        # its first request arrives; a tenant served moves to the back; one emptied leaves).
        # Each tenant's lane stays in `_lanes` while it idles, so that a tenant coming and
        # going (most do, between batches) costs a lookup rather than a dict insertion and
        # deletion each time (a dict churned so rebuilds itself every few insertions); idle
        # lanes are dropped once they outnumber the backlogged ones (`_forget_idle`).
        self._lanes: dict[str, _Lane] = {}
        self._order: list[_Lane] = []
        self._len = 0
        # oldest_s(), kept while only pushes happen (a push can only lower it) and
        # recomputed from the tenants' heads after a pop: the batcher asks on every push.
        self._oldest: float | None = None
        self._oldest_valid = True

    def _lane_of(self, tenant: str) -> _Lane:
        """`tenant`'s lane, in the order (at its back, with no credit, if it was not)."""
        lane = self._lanes.get(tenant)
        if lane is None:
            if len(self._lanes) >= 2 * len(self._order) + IDLE_KEPT:
                self._forget_idle()
            lane = self._lanes[tenant] = _Lane(tenant)
        if not lane.active:
            lane.active = True
            lane.deficit = 0
            self._order.append(lane)
        return lane

    def _forget_idle(self) -> None:
        self._lanes = {lane.tenant: lane for lane in self._order}

    def push(self, item: Attempt) -> None:
        self._lane_of(item.tenant).q.append(item)
        self._note_pushed(item)

    def _note_pushed(self, item: Attempt) -> None:
        self._len += 1
        if self._oldest_valid:
            t, oldest = item.enqueued_s, self._oldest
            if oldest is None or t < oldest:
                self._oldest = t

    def push_front(self, item: Attempt) -> None:
        self._lane_of(item.tenant).q.appendleft(item)
        self._note_pushed(item)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Attempt]:
        for lane in self._order:
            yield from lane.q.live()

    def oldest_s(self) -> float | None:
        if not self._oldest_valid:
            heads = [lane.q.first().enqueued_s for lane in self._order if lane.q.size() > 0]
            self._oldest = min(heads) if heads else None
            self._oldest_valid = True
        return self._oldest

    def tenant_len(self, tenant: str) -> int:
        lane = self._lanes.get(tenant)
        return lane.q.size() if lane is not None else 0

    def active_tenants(self) -> int:
        return sum(1 for lane in self._order if lane.q.size() > 0)

    def pop(self, n: int) -> list[Attempt]:
        self._oldest_valid = False
        quantum = self.quantum
        out: list[Attempt] = []
        want = min(n, self._len)
        # The rounds walk `order` (the tenants in turn) with a pointer `i`: a tenant served
        # moves to the back of the order, which is the pointer moving past it, so that one
        # round after another the order is order[i:] + order[:i], less the tenants emptied.
        # The order is rotated so once, at the end, not once per tenant served.
        order = self._order
        i = 0
        while len(out) < want and order:
            if i >= len(order):
                i = 0  # a new round, in the same order
            lane = order[i]
            q = lane.q
            if q.size() == 0:
                del order[i]
                lane.active = False
                continue
            credit = lane.deficit
            cost = q.first().size
            if cost < 1:
                cost = 1
            if credit < cost:
                credit += quantum
            while cost <= credit:
                out.append(q.popleft())
                credit -= cost
                if q.size() == 0:
                    break
                cost = q.first().size  # the new head's
                if cost < 1:
                    cost = 1
                if len(out) >= want:
                    break
            if q.size() == 0:
                # An idle tenant keeps no credit (DRR's rule), so bursts cannot bank service.
                del order[i]
                lane.active = False
            else:
                lane.deficit = credit
                if len(out) < want or cost > credit:
                    i += 1  # to the back of the order
                # else: the batch is full mid-turn: the tenant keeps its turn and resumes here.
        if 0 < i < len(order):
            self._order = order[i:] + order[:i]  # the tenants served this round, to the back
        self._len -= len(out)
        return out

    def drop_if(self, pred: Callable[[Attempt], bool]) -> list[Attempt]:
        self._oldest_valid = False
        dropped: list[Attempt] = []
        for lane in self._order:
            kept: list[Attempt] = []
            for item in lane.q.live():
                (dropped if pred(item) else kept).append(item)
            lane.q = Fifo(kept)
        self._len -= len(dropped)
        return dropped
