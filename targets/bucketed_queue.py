"""Length buckets: one sub-queue per bucket of input lengths, so that a batch pads its
inputs by less than 2x (doc item 2's fix). A `Queue` (targets.queues) whose sub-queues are
FIFOs or fair queues; it counts each tenant's requests for the admission forecast."""

from __future__ import annotations

from typing import Callable, Iterator

from targets.protocol import Attempt
from targets.queues import IDLE_KEPT, FairQueue, FifoQueue, Queue


def _oldest_of(q: Queue) -> float:
    return q.oldest_s()  # type: ignore[return-value]  # only asked of non-empty queues


def length_bucket(size: int, reference: int) -> int:
    """Bucket index of an input length: powers of two around the reference
    length (..., ref/2, ref, 2*ref, ...), so padding within a bucket is < 2x."""
    b, edge = 0, reference
    while size > edge:
        edge *= 2
        b += 1
    return b


class _Count:
    """A tenant's requests in a BucketedQueue."""

    def __init__(self) -> None:
        self.n = 0


class BucketedQueue(Queue):
    """One sub-queue per length bucket; the batcher forms each batch from one."""

    def __init__(self, factory: Callable[[], FifoQueue | FairQueue], reference_length: int) -> None:
        self._factory = factory
        self.reference = reference_length
        self.buckets: dict[int, Queue] = {}
        self._only: list[Queue] = []  # the buckets, while there is one
        self._len = 0
        # Requests queued per tenant, and how many tenants have any. A count that falls to 0
        # stays (a tenant coming and going costs a lookup, not a dict insertion and deletion)
        # until the zeros outnumber the others (`_count_of`).
        self._tenants: dict[str, _Count] = {}
        self._active = 0

    def _count_of(self, tenant: str) -> _Count:
        c = self._tenants.get(tenant)
        if c is None:
            t = self._tenants
            if len(t) >= 2 * self._active + IDLE_KEPT:
                self._tenants = t = {k: v for k, v in t.items() if v.n}
            c = t[tenant] = _Count()
        return c

    def _count(self, items: list[Attempt], sign: int) -> None:
        for a in items:
            c = self._count_of(a.tenant)
            if c.n == 0:
                self._active += 1
            c.n += sign
            if c.n == 0:
                self._active -= 1

    def active_tenants(self) -> int:
        return self._active

    def _bucket(self, item: Attempt) -> Queue:
        size = item.size
        key = 0 if size <= self.reference else length_bucket(size, self.reference)
        q = self.buckets.get(key)
        if q is None:
            q = self.buckets[key] = self._factory()
            self._only = list(self.buckets.values())
        return q

    def push(self, item: Attempt) -> None:
        size = item.size  # _bucket(item), inline for the reference length: one push per request
        q = self.buckets.get(0) if size <= self.reference else None
        if q is None:
            q = self._bucket(item)
        q.push(item)
        self._len += 1
        c = self._count_of(item.tenant)
        if c.n == 0:
            self._active += 1
        c.n += 1

    def push_front(self, item: Attempt) -> None:
        self._bucket(item).push_front(item)
        self._len += 1
        self._count([item], 1)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Attempt]:
        for q in self.buckets.values():
            yield from q

    def oldest_s(self) -> float | None:
        heads = [q.oldest_s() for q in self.buckets.values() if len(q)]
        return min(h for h in heads if h is not None) if heads else None

    def sub_queues(self) -> list[Queue]:
        """Non-empty buckets, the one whose head has waited longest first (a list, not to be
        changed: compiled, the batcher's loop over it is native, per request)."""
        if len(self.buckets) == 1:  # one length so far (the common case): its queue holds everything
            return self._only if self._len else []
        live = [q for q in self.buckets.values() if len(q)]
        if len(live) > 1:
            live.sort(key=_oldest_of)
        return live

    def pop(self, n: int) -> list[Attempt]:
        for q in self.sub_queues():
            return self.pop_from(q, n)
        return []

    def pop_from(self, q: Queue, n: int) -> list[Attempt]:
        out = q.pop(n)
        self._len -= len(out)
        self._count(out, -1)
        return out

    def drop_if(self, pred: Callable[[Attempt], bool]) -> list[Attempt]:
        dropped: list[Attempt] = []
        for q in self.buckets.values():
            dropped.extend(q.drop_if(pred))
        self._len -= len(dropped)
        self._count(dropped, -1)
        return dropped

    def tenant_len(self, tenant: str) -> int:
        c = self._tenants.get(tenant)
        return c.n if c is not None else 0
