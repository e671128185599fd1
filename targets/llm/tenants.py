"""Per-tenant rate limits at an LLM engine's door: a token bucket per tenant, on requests or on tokens.

An LLM request's cost is not one unit: its prompt is prefilled and its output
decoded and held in the KV cache, so a tenant sending a few requests of
thousands of tokens takes more of the engine than one sending many short chats.
A limit on request counts (the doc's item 5, "per-client limits", read
literally) lets such a tenant through; a limit on tokens does not.

`TenantLimits` says what is limited: requests/s (`requests_per_s`, burst
`burst_requests`) and/or tokens/s of prompt + max output (`tokens_per_s`,
burst `burst_tokens`), the same for every tenant (0: that limit is off). A
request over its tenant's limit is shed (`OverLimit.SHED`) or held until the
bucket has refilled for it (`OverLimit.DELAY`, FIFO per tenant), unless that
wait would pass `max_delay_s`, when it is shed.

`TenantAdmission` puts that check in front of any scheduler: it is a scheduler
itself (the `targets.llm.LlmScheduler` contract), passing a sequence to the
inner one (`inner`) only once its tenant's buckets allowed it. Every
admission takes its cost from a bucket that held it, so a tenant is never
admitted more than rate x t + burst of either unit in t seconds. It never
reads a clock: `now` comes with every call, and `wake_at()` names the next
release of a held sequence.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from enum import Enum

from targets.llm.scheduler import LlmScheduler
from targets.llm.sequence import Sequence, Step, StepOutcome

__all__ = ["Bucket", "OverLimit", "TenantAdmission", "TenantLimits"]


class OverLimit(str, Enum):
    SHED = "shed"
    DELAY = "delay"


@dataclass(frozen=True)
class TenantLimits:
    """Each tenant's limits (0 rate: off); `active` when either is on."""

    requests_per_s: float = 0.0
    burst_requests: float = 10.0
    tokens_per_s: float = 0.0
    burst_tokens: float = 20_000.0
    over_limit: OverLimit = OverLimit.SHED
    max_delay_s: float = 10.0

    def __post_init__(self) -> None:
        if self.requests_per_s < 0 or self.tokens_per_s < 0:
            raise ValueError("tenant rate limits must be >= 0 (0: off)")
        if self.burst_requests < 1 or self.burst_tokens < 1:
            raise ValueError("tenant bursts must be >= 1")
        if not self.max_delay_s >= 0:
            raise ValueError(f"max_delay_s must be >= 0, got {self.max_delay_s}")
        try:
            object.__setattr__(self, "over_limit", OverLimit(self.over_limit))
        except ValueError:
            raise ValueError(f"over_limit must be one of {', '.join(o.value for o in OverLimit)}, "
                             f"got {self.over_limit!r}") from None

    @property
    def active(self) -> bool:
        return self.requests_per_s > 0 or self.tokens_per_s > 0


def _cost(seq: Sequence) -> tuple[float, float]:
    """(requests, tokens) one sequence takes from its tenant's buckets: tokens are prompt + max output."""
    return 1.0, float(seq.prompt_tokens + seq.output_tokens)


_SLACK = 1e-9  # relative: a bucket refilled to exactly `n` by float arithmetic may read n - 1 ulp


class Bucket:
    """`rate` units/s, at most `burst` banked, full at its first use (`now`)."""

    __slots__ = ("rate", "burst", "level", "at_s")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst, self.level, self.at_s = rate, burst, burst, now

    def refill(self, now: float) -> None:
        if now > self.at_s:
            self.level = min(self.burst, self.level + (now - self.at_s) * self.rate)
            self.at_s = now

    def ready_at(self, n: float) -> float:
        """When `n` units are banked (as of the last refill): `at_s` if they are now."""
        short = n - self.level
        return self.at_s if short <= _SLACK * n else self.at_s + short / self.rate


class _Tenant:
    """One tenant's buckets (requests, tokens; only those whose limit is on) and the sequences held
    for them, oldest first."""

    __slots__ = ("buckets", "costs", "held")

    def __init__(self, limits: TenantLimits, now: float) -> None:
        on = [(i, Bucket(rate, burst, now)) for i, (rate, burst) in enumerate(
            ((limits.requests_per_s, limits.burst_requests), (limits.tokens_per_s, limits.burst_tokens))) if rate > 0]
        self.costs = tuple(i for i, _ in on)   # which part of `_cost` each bucket takes
        self.buckets = tuple(b for _, b in on)
        self.held: deque[Sequence] = deque()

    def ready_at(self, now: float, cost: tuple[float, float]) -> float:
        """When every bucket holds its part of `cost` (>= now); inf if one never can."""
        at = now
        for b, i in zip(self.buckets, self.costs):
            if cost[i] > b.burst * (1 + _SLACK):
                return math.inf
            b.refill(now)
            at = max(at, b.ready_at(cost[i]))
        return at

    def take(self, now: float, cost: tuple[float, float]) -> bool:
        """Take `cost` from every bucket, or (False) from none."""
        if self.ready_at(now, cost) > now:
            return False
        for b, i in zip(self.buckets, self.costs):
            b.level -= cost[i]
        return True

    def backlog_ready_at(self, now: float, cost: tuple[float, float]) -> float:
        """When a sequence of `cost` joining the held ones would pass: the buckets refill for all of them."""
        total = [c + sum(_cost(s)[i] for s in self.held) for i, c in enumerate(cost)]
        at = now
        for b, i in zip(self.buckets, self.costs):
            b.refill(now)
            at = max(at, b.at_s + max(0.0, total[i] - b.level) / b.rate)
        return at


class TenantAdmission:
    """Tenant limits in front of `inner` (module doc). `shed` and `delayed` count sequences so treated."""

    def __init__(self, inner: LlmScheduler, limits: TenantLimits) -> None:
        self.inner = inner
        self.limits = limits
        self._tenants: dict[int, _Tenant] = {}
        self._holding = 0
        self.shed = 0
        self.delayed = 0

    # -- the step-machine contract ------------------------------------------------------------

    def add(self, seq: Sequence, now: float) -> bool:
        """Pass `seq` on, hold it, or shed it (False, `seq.shed`); False too when `inner` rejects it."""
        tenant = self._tenants.get(seq.tenant)
        if tenant is None:
            tenant = self._tenants[seq.tenant] = _Tenant(self.limits, now)
        cost = _cost(seq)
        if not tenant.held and tenant.take(now, cost):
            return self.inner.add(seq, now)
        delay = self.limits.over_limit is OverLimit.DELAY
        if (delay and tenant.ready_at(now, cost) < math.inf
                and tenant.backlog_ready_at(now, cost) - now <= self.limits.max_delay_s):
            tenant.held.append(seq)
            self._holding += 1
            self.delayed += 1
            return True
        seq.shed = True
        self.shed += 1
        return False

    def retry_at(self, seq: Sequence, now: float) -> float:
        """When shed `seq`, sent again, would pass its tenant's limits if the tenant sends nothing else
        meanwhile (>= now; inf: never, it is over a burst): a live server's Retry-After."""
        tenant, cost = self._tenants[seq.tenant], _cost(seq)
        if tenant.ready_at(now, cost) == math.inf:
            return math.inf
        at = tenant.backlog_ready_at(now, cost)
        if self.limits.over_limit is OverLimit.DELAY:
            at -= self.limits.max_delay_s  # held, not shed, once its release is within max_delay_s
        return max(now, at)

    def schedule(self, now: float) -> Step | None:
        if self._holding:
            self._release(now)
        return self.inner.schedule(now)

    def complete(self, step: Step, now: float) -> StepOutcome:
        return self.inner.complete(step, now)

    def wake_at(self) -> float | None:
        """The inner scheduler's timer, or the next held sequence's release, whichever is first."""
        times = [t for t in (self.inner.wake_at(), self._next_release()) if t is not None]
        return min(times) if times else None

    def pending(self) -> int:
        return self._holding + self.inner.pending()

    def running(self) -> int:
        return self.inner.running()

    # -- internals ----------------------------------------------------------------------------

    def _release(self, now: float) -> None:
        for tenant in self._tenants.values():
            while tenant.held and tenant.take(now, _cost(tenant.held[0])):
                self._holding -= 1
                self.inner.add(tenant.held.popleft(), now)

    def _next_release(self) -> float | None:
        if not self._holding:
            return None
        # As of each tenant's last refill (a time already passed): its head's release time.
        return min(t.ready_at(max(b.at_s for b in t.buckets), _cost(t.held[0]))
                   for t in self._tenants.values() if t.held)
