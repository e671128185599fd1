"""Server-side dedupe and coalescing by (tenant, request ID), checked against the input.

The contract:

- The dedupe key is ``(tenant, request_id)``: two tenants that pick the same
  ID never meet, so no caller can read another tenant's answer by guessing its
  IDs. Attempts without an ID pass through (nothing to dedupe on).
- Each key remembers a digest of its input (`input_digest`). An attempt whose
  key is in flight, or was answered in the last `ttl_s`, with the *same*
  digest is a retry: it attaches to the running work (coalesced) or gets the
  remembered answer (replayed). With a *different* digest it is a client
  error, answered with a `Conflict` (HTTP 409), never with the other input's
  answer.
- At most `max_waiters` attempts attach to one in-flight key; more are refused
  with 429 (one ID cannot pin unbounded memory; attempts that stopped waiting
  leave room). Remembered answers are bounded by count (`max_done`) and age
  (`ttl_s`); in-flight keys by the work in flight, which admission bounds.
- Every attempt attached to a key gets exactly one answer, whichever way the
  key's work ends: `finish` hands its answer (a shed, an expiry or an error
  too) to all of them, and `orphan` (the work was lost with its GPU) frees the
  key and returns the attached attempts for the caller to answer. Nor does an
  attempt wait past its own deadline for work another attempt's later
  deadline keeps alive: `expire(now)` returns each attached attempt, and each
  key's first attempt, still unanswered `grace_s` past its own deadline (the
  caller answers each 503); `next_expiry()` says when to ask next.

The policy is clock-free: every call takes `now`, so it runs in sim as in live.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any, Final, Hashable, Sequence, cast

import numpy as np

from targets.bounded import Bound, BoundedMap, Entry
from targets.protocol import Attempt, Response, Status

DEFAULT_MAX_DONE = 50_000
DEFAULT_MAX_WAITERS = 256
# An attempt waiting on another is answered this long after its own deadline: a client
# whose timeout is that deadline (a sim client, within TIMEOUT_RESOLUTION_S = 1 ms) has
# given up by then, so the answer reaches only clients still waiting.
DEFAULT_GRACE_S = 0.005
_PREFIXES_KEPT: Final = 4096  # tenants whose key prefix (or number) a Deduper keeps made
_ID_BITS: Final = 40  # a whole-number request ID below 2**_ID_BITS packs with its tenant's number


class Conflict(Response):
    """The answer to a reused request ID with a different input: HTTP 409."""

    def __init__(self) -> None:
        super().__init__(Status.BAD_REQUEST, reason="request_id reused with a different input within its dedupe window")


_TOO_MANY_WAITERS: Final = Response(Status.TOO_MANY, retry_after_s=0.1, reason="too many duplicates of one request_id in flight")
ORPHANED: Final = Response(Status.UNAVAILABLE, retry_after_s=0.05,
                           reason="the request this one joined was lost with its GPU; a retry runs afresh")
DEADLINE_PASSED: Final = Response(Status.UNAVAILABLE, reason="deadline passed while waiting on its twin's work")


@dataclass
class DedupeStats:
    coalesced: int = 0
    replayed: int = 0
    conflicts: int = 0
    refused: int = 0             # over max_waiters
    expired: int = 0             # attached attempts handed back at their own deadline
    orphaned: int = 0            # attached attempts handed back when their key's work was lost


def input_digest(value: Any) -> bytes:
    """A 16-byte digest of a model input: equal inputs, equal digests (1 == 1.0).

    Flat lists of numbers (the common case) are hashed as float64s; anything
    else as canonical JSON. A numpy array (an API server's validated input) hashes
    as its `tolist()` does, a flat numeric one without converting it. Raises
    ValueError/RecursionError only for a value no JSON parser produces.
    """
    h = hashlib.blake2b(digest_size=16)
    _feed(h, value)
    return h.digest()


def _feed(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):  # a validated input (targets.gpu.models): as its tolist() would hash
        if value.ndim == 1 and value.dtype.kind in "iuf":
            h.update(b"L%d;" % len(value))
            h.update(np.ascontiguousarray(value, dtype=np.float64).tobytes())
            return
        value = value.tolist()
    if isinstance(value, list):
        if all(type(v) is float or type(v) is int for v in value):
            try:
                h.update(b"L%d;" % len(value))
                h.update(array("d", value).tobytes())
                return
            except OverflowError:  # an int past float range: hash its text instead
                pass
        h.update(b"[%d;" % len(value))
        for v in value:
            _feed(h, v)
        h.update(b"]")
    else:
        h.update(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())
        h.update(b";")


def _key_prefix(tenant: str) -> str:
    """A dedupe key's tenant part (see Deduper._key)."""
    return f"{len(tenant)}:{tenant}"


def attempt_digest(a: Attempt) -> Hashable:
    """The input identity the dedupe checks: the payload's digest when there is
    one (live), else the workload's content and variant ids (sim)."""
    if a.payload is not None:
        return input_digest(a.payload)
    return (a.content, a.variant)


class _Remembered(Entry[Hashable, Response]):
    """A remembered answer (`value`) and the input it answered: the digest of its payload
    (`digest`, live) or, without one, the workload's content and variant ids (sim). One
    object with the map's entry, where (digest, answer) tuples made two more and a boxed id."""

    def __init__(self, key: Hashable, a: Attempt, response: Response) -> None:
        super().__init__(0.0, response, key)
        self.digest: bytes | None = None if a.payload is None else input_digest(a.payload)
        self.content = a.content
        self.variant = a.variant

    def same_input(self, a: Attempt) -> bool:
        """Whether `a`'s input is the one answered: `attempt_digest` of both equal."""
        if a.payload is not None:
            return self.digest is not None and self.digest == input_digest(a.payload)
        return self.digest is None and self.content == a.content and self.variant == a.variant


class Deduper:
    """Coalesces and replays by (tenant, request_id); see the module docstring."""

    def __init__(self, ttl_s: float = 5.0, max_done: int = DEFAULT_MAX_DONE,
                 max_waiters: int = DEFAULT_MAX_WAITERS, grace_s: float = DEFAULT_GRACE_S) -> None:
        self.ttl_s = ttl_s
        self.max_done = max_done
        self.max_waiters = max_waiters
        self.grace_s = grace_s
        # Each key in flight: the attempt doing the work (its input digest is made only when
        # a twin arrives, or as its answer is remembered: most requests have none); the
        # attempts coalesced onto it, once any are.
        # Keys: _key(tenant, request ID), each attempt's kept on it once offered.
        self._inflight: dict[Hashable, Attempt] = {}
        self._waiters: dict[Hashable, list[Attempt]] = {}
        self._done: BoundedMap[Hashable, Response] = BoundedMap(Bound(max_done, ttl_s))  # of _Remembered entries
        self._done_keys = self._done._items  # membership, asked per request: one lookup, no call
        # Attached attempts (and each key's first, once another attached) by their own deadline:
        # (deadline, sequence, key, attempt); an entry answered meanwhile is skipped when popped.
        self._due: list[tuple[float, int, Hashable, Attempt]] = []
        self._seq = 0
        self._prefixes: dict[str, str] = {}  # a string key's tenant part, by tenant (see _key)
        self._numbers: dict[str, int] = {}  # a whole-number key's tenant part, by tenant (see _key)
        self.stats = DedupeStats()

    def clear(self) -> None:
        """Forget every key in flight and every remembered answer (nothing is answered)."""
        self._inflight.clear()
        self._waiters.clear()
        self._done.clear()
        self._due.clear()

    def __len__(self) -> int:
        """Keys held: in flight plus remembered answers."""
        return len(self._inflight) + len(self._done)

    @property
    def done_entries(self) -> int:
        return len(self._done)

    @property
    def inflight_entries(self) -> int:
        return len(self._inflight)

    @property
    def most_waiters(self) -> int:
        """The most attempts coalesced onto one key in flight (at most `max_waiters`)."""
        return max(map(len, self._waiters.values()), default=0)

    def inflight(self, tenant: str, request_id: str | int) -> bool:
        return self._key(tenant, request_id) in self._inflight

    def _key(self, tenant: str, request_id: str | int) -> Hashable:
        """The key of (tenant, request ID), one to one.

        A string ID: one string, its length-prefixed tenant then the ID, so no two pairs share
        one (a separator could occur in a name), and a key is hashed once, where a tuple is
        hashed again at every lookup. A whole-number ID (a sim client's: the request's number)
        below 2**_ID_BITS: one int, the tenant's number (in order of first use) above the ID's
        bits, else the tuple (tenant, ID). Keys of the two kinds never meet (an int is equal to
        no string or tuple), and an int key costs no string to make and hash; an int hashes
        to itself, so a run's consecutive IDs take neighbouring slots of the maps (a string's
        hash is random: each lookup in a map of 50,000 remembered answers missed the cache).
        A tenant's part is made once (at most _PREFIXES_KEPT tenants of each kind kept:
        tenants are the callers')."""
        if isinstance(request_id, int):
            numbers = self._numbers
            number = numbers.get(tenant, -1)
            if number < 0 and len(numbers) < _PREFIXES_KEPT:
                number = numbers[tenant] = len(numbers)
            if number >= 0 and 0 <= request_id < 1 << _ID_BITS:
                return (number << _ID_BITS) | request_id
            return (tenant, request_id)
        prefix = self._prefixes.get(tenant)
        if prefix is None:
            prefix = _key_prefix(tenant)
            if len(self._prefixes) < _PREFIXES_KEPT:
                self._prefixes[tenant] = prefix
        return prefix + request_id

    def offer(self, a: Attempt, now: float) -> bool:
        """True if `a` is new work the caller must queue; False if it was
        answered here (replayed, or refused as a conflict) or coalesced onto
        an in-flight twin, which will be answered by `finish`."""
        rid = a.request_id
        if rid is None:
            return True
        key = a.dedupe_key = self._key(a.tenant, rid)
        # self._done.entry(key, now), called only where the key is there: most requests are new
        done = self._done.entry(key, now) if key in self._done_keys else None
        if done is not None:
            if not cast(_Remembered, done).same_input(a):
                self.stats.conflicts += 1
                a.answer(Conflict())
            else:
                self.stats.replayed += 1
                a.answer(done.value)
            return False
        p = self._inflight.setdefault(key, a)  # one lookup: the key's attempt, `a` if it was new
        if p is a:
            self._done.prune(now)
            return True
        if attempt_digest(p) != attempt_digest(a):
            self.stats.conflicts += 1
            a.answer(Conflict())
            return False
        waiters = self._waiters.get(key)
        if waiters is None:
            waiters = self._waiters[key] = []
            if p.deadline_s is not None:  # the first attempt's own deadline, before a waiter extends it
                self._due_at(p.deadline_s, key, p)
        if len(waiters) >= self.max_waiters:
            waiters[:] = [w for w in waiters if not w.done]  # those that stopped waiting leave room
            if len(waiters) >= self.max_waiters:
                self.stats.refused += 1
                a.answer(_TOO_MANY_WAITERS)
                return False
        self.stats.coalesced += 1
        waiters.append(a)
        # The work must now live as long as the newest waiter needs it.
        if a.deadline_s is None or p.deadline_s is None:
            p.deadline_s = None
        else:
            p.deadline_s = max(p.deadline_s, a.deadline_s)
        if a.deadline_s is not None:
            self._due_at(a.deadline_s, key, a)
        return False

    def _due_at(self, deadline_s: float, key: Hashable, a: Attempt) -> None:
        self._seq += 1
        heappush(self._due, (deadline_s, self._seq, key, a))

    def next_expiry(self) -> float | None:
        """When `expire` may next hand an attempt back (None: none is due ever)."""
        due = self._due
        return due[0][0] + self.grace_s if due else None

    def expire(self, now: float) -> list[Attempt]:
        """The attempts attached to a key in flight, or first on one another joined, that are
        still unanswered `grace_s` past their own deadline; the caller answers each (and the key's
        work goes on for the others: the first attempt stays the one that runs it)."""
        due, out, grace = self._due, [], self.grace_s
        while due and due[0][0] + grace <= now:  # next_expiry's own sum: due at the instant it says
            _, _, key, a = heappop(due)
            if a.done:
                continue  # answered (its key finished), or its client stopped waiting
            p = self._inflight.get(key)
            if p is None:
                continue  # pragma: no cover - every key's end answers its attempts
            if p is not a:
                waiters = self._waiters.get(key)
                if waiters is None or a not in waiters:
                    continue  # pragma: no cover - an unanswered attempt waits on its key
                waiters.remove(a)
            self.stats.expired += 1
            out.append(a)
        return out

    def orphan(self, a: Attempt, now: float) -> list[Attempt]:
        """`a`'s work was lost (a dead GPU): forget its key, so a retry runs afresh, and return
        the attempts that waited on it, for the caller to answer (`ORPHANED`). `a` itself is
        not among them: the lost attempt is the target's to answer or not."""
        waiters = self.finish(a, ORPHANED, now)[1:]
        self.stats.orphaned += len(waiters)
        return waiters

    def waiters(self, a: Attempt) -> Sequence[Attempt]:
        key = a.dedupe_key
        if key is None:  # never offered (or no request ID): waits on nothing, nothing waits on it
            return []
        return self._waiters.get(key, []) if self._inflight.get(key) is a else []

    def finish(self, a: Attempt, response: Response, now: float) -> list[Attempt]:
        """Record `a`'s answer; return every attempt that should receive it (`a` first)."""
        others = self.settle(a, response, now)
        return [a, *others] if others else [a]

    def settle(self, a: Attempt, response: Response, now: float) -> list[Attempt] | None:
        """`finish` without `a` in the answer: record `a`'s answer and return the other attempts
        that should receive it, if any (None: `a` alone; no list made, as for most requests)."""
        key = a.dedupe_key
        if key is None:  # never offered (or no request ID): no key's primary
            return None
        if self._inflight.get(key) is not a:
            return None  # not the key's primary: nothing of another attempt's to touch
        del self._inflight[key]
        status: int = response.status  # (compiled: a native int comparison, not a generic one of an enum)
        if status == 200:
            self._done.put_entry(_Remembered(key, a, response), now)
        return self._waiters.pop(key, None) if self._waiters else None
