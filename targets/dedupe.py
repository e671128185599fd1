"""Server-side dedupe and coalescing by request ID.

While a request ID is in flight, later attempts with the same ID attach to it
instead of being queued again, so one ID never runs twice at once; when it
finishes, every attached attempt gets the one answer. Answers are remembered
for `ttl_s` so a retry that arrives just after completion is answered at once.
Attempts without an ID pass through (there is nothing to dedupe on).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from targets.protocol import Attempt, Response


@dataclass
class DedupeStats:
    coalesced: int = 0
    replayed: int = 0


@dataclass
class _Entry:
    primary: Attempt
    waiters: list[Attempt] = field(default_factory=list)


class Deduper:
    def __init__(self, ttl_s: float = 5.0, max_done: int = 200_000) -> None:
        self.ttl_s = ttl_s
        self.max_done = max_done
        self._inflight: dict[str, _Entry] = {}
        self._done: OrderedDict[str, tuple[float, Response]] = OrderedDict()
        self.stats = DedupeStats()

    def inflight(self, request_id: str) -> bool:
        return request_id in self._inflight

    def offer(self, a: Attempt, now: float) -> bool:
        """True if `a` is new work the caller must queue; False if it was
        coalesced onto an in-flight twin or answered from recent results."""
        rid = a.request_id
        if rid is None:
            return True
        done = self._done.get(rid)
        if done is not None and now - done[0] <= self.ttl_s:
            self.stats.replayed += 1
            a.answer(done[1])
            return False
        entry = self._inflight.get(rid)
        if entry is not None:
            self.stats.coalesced += 1
            entry.waiters.append(a)
            p = entry.primary
            # The work must now live as long as the newest waiter needs it.
            if a.deadline_s is None or p.deadline_s is None:
                p.deadline_s = None
            else:
                p.deadline_s = max(p.deadline_s, a.deadline_s)
            return False
        self._inflight[rid] = _Entry(a)
        return True

    def waiters(self, a: Attempt) -> list[Attempt]:
        entry = self._inflight.get(a.request_id) if a.request_id is not None else None
        return entry.waiters if entry is not None and entry.primary is a else []

    def finish(self, a: Attempt, response: Response, now: float) -> list[Attempt]:
        """Record `a`'s answer; return every attempt that should receive it."""
        rid = a.request_id
        if rid is None:
            return [a]
        entry = self._inflight.pop(rid, None)
        if response.status == 200:
            self._done[rid] = (now, response)
            self._done.move_to_end(rid)
            while len(self._done) > self.max_done:
                self._done.popitem(last=False)
        if entry is None or entry.primary is not a:
            return [a]
        return [a, *entry.waiters]
