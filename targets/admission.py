"""Admission control and per-tenant limits: pure policies over state and `now`.

`TokenBucket` caps a tenant's rate. `predicted_latency_s` estimates how long a
request admitted now would take, from the work queued ahead of it and the
capacity serving that queue; `admit` sheds a request whose predicted latency
exceeds its budget (the SLO, or less if its deadline is nearer), so queues
stay bounded by time rather than by count. `answer_within_s` is the other
side of that budget: how long a front end holds a request for the target's
answer before answering it 503 itself.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from targets.bounded import Bound, BoundedMap


class TokenBucket:
    """`rate` tokens per second, at most `capacity` banked; starts full."""

    def __init__(self, rate: float, capacity: float, now: float = 0.0) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("a token bucket needs rate > 0 and capacity >= 1")
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updated_s = now

    def _refill(self, now: float) -> None:
        if now > self.updated_s:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated_s) * self.rate)
            self.updated_s = now

    def try_take(self, now: float, n: float = 1.0) -> bool:
        if now > self.updated_s:  # _refill, inline: this runs for every request
            self.tokens = min(self.capacity, self.tokens + (now - self.updated_s) * self.rate)
            self.updated_s = now
        if self.tokens >= n:
            self.tokens -= n
            return True
        return False

    def wait_s(self, now: float, n: float = 1.0) -> float:
        """Seconds until `n` tokens are available."""
        self._refill(now)
        return max(0.0, (n - self.tokens) / self.rate)


class Verdict(NamedTuple):
    """A tuple, not a frozen dataclass: one is made per request admitted."""

    admit: bool
    predicted_s: float
    retry_after_s: float = 0.0


def predicted_latency_s(ahead: int, capacity_rps: float, batch_s: float, fill_wait_s: float) -> float:
    """Latency of a request joining behind `ahead` others.

    Queue drain time at the serving capacity, plus waiting for its batch to
    form (`fill_wait_s`, zero once a full batch is queued), plus its own
    batch's compute time.
    """
    if capacity_rps <= 0:
        return float("inf")
    return ahead / capacity_rps + fill_wait_s + batch_s


def admit(predicted_s: float, budget_s: float) -> Verdict:
    """Admit iff the predicted latency fits the budget; else say when to retry."""
    retry = shed_retry_after_s(predicted_s, budget_s)
    return Verdict(True, predicted_s) if retry is None else Verdict(False, predicted_s, retry)


def shed_retry_after_s(predicted_s: float, budget_s: float) -> float | None:
    """`admit`'s rule without its Verdict (a target decides once per request): None
    to admit, else the Retry-After of the shed."""
    if predicted_s <= budget_s:
        return None
    return min(1.0, max(0.05, predicted_s - budget_s))


# A request without a deadline is answered within this many SLOs, 503 if the target has not
# answered by then: admission admits only what it predicts within 0.9 SLO, so ten is a target
# ten times slower than it predicted, or a request it lost (a dead GPU), not a slow answer.
HOLD_SLOS: Final = 10.0


def answer_within_s(deadline_s: float | None, slo_s: float | None, hold_s: float) -> float:
    """Seconds a front end waits for the target's answer to a request before answering it 503:
    until its deadline (`deadline_s`, the caller's remaining budget) when it has one, nobody
    being left to use a later answer; else `HOLD_SLOS` x `slo_s`; never more than `hold_s`
    (the front end's own ceiling, the whole of it without an SLO)."""
    if deadline_s is not None:
        return min(hold_s, deadline_s)
    if slo_s is not None:
        return min(hold_s, HOLD_SLOS * slo_s)
    return hold_s


class TenantBuckets:
    """One `TokenBucket` per tenant, bounded in number.

    A bucket untouched for `capacity / rate` seconds has refilled: it is
    indistinguishable from a new one, so it is dropped (the TTL loses
    nothing). Past `max_tenants` live buckets the least recently used is
    dropped, which at worst hands that tenant a fresh, full bucket.
    """

    def __init__(self, rate: float, capacity: float, max_tenants: int = 100_000) -> None:
        TokenBucket(rate, capacity)  # validate once
        self.rate = rate
        self.capacity = capacity
        self._map: BoundedMap[str, TokenBucket] = BoundedMap(Bound(max_tenants, capacity / rate))

    def __len__(self) -> int:
        return len(self._map)

    @property
    def max_tenants(self) -> int:
        return self._map.bound.max_items

    def bucket(self, tenant: str, now: float) -> TokenBucket:
        """`tenant`'s bucket (a full one if it has none), kept alive as used now."""
        b = self._map.refresh(tenant, now)
        if b is None:
            b = TokenBucket(self.rate, self.capacity, now)
            self._map.put(tenant, b, now)
        return b
