"""Admission's forecast: how long a request admitted now would take, and whether to refuse it.

`AdmissionForecast.retry_after_s` is an API server's admission decision (doc item 5):
None to admit, else the Retry-After of a 503. The forecast is the queue's drain at
the alive fleet's capacity (slowed by a measured slowdown), the wait for the request's
batch to form, and its own batch (targets.admission.predicted_latency_s); the budget
is the SLO, or less if the request's deadline is nearer, times `admission_target`.

The batch-forming wait (`admission_fill`): `max-wait` assumes the batcher's whole
max_wait_s unless a full batch is queued; `rate` (rate batching) the time until the
queue, filling at the offered arrival rate, reaches the size the batcher lets go
(targets.dispatch_policy.fill_wait_s). The offered rate is measured here, before
admission: the batcher's own meter counts only the admitted, which would starve itself.
"""

from __future__ import annotations

from typing import Callable, Final, Sequence

from targets.admission import predicted_latency_s, shed_retry_after_s
from targets.batcher import Batcher, BatchPolicy
from targets.config import Batching, TargetConfig
from targets.dispatch_policy import ArrivalRate, fill_wait_s
from targets.gpu_pool import GpuPool
from targets.protocol import Attempt
from targets.slowness import Slowness

__all__ = ["AdmissionForecast"]

_OWN_COSTS_KEPT: Final = 65_536  # input lengths below this have their batch cost remembered


class AdmissionForecast:
    """One target's admission: its queues (`batchers`), fleet (`pool`) and measured slowdown."""

    def __init__(self, config: TargetConfig, cost: Callable[[int, int], float], batch_s: float, pool: GpuPool,
                 batchers: Sequence[Batcher], policy: BatchPolicy, slowness: Slowness) -> None:
        self.pool, self.batchers, self.policy, self.slowness = pool, batchers, policy, slowness
        self.cost, self.batch_s = cost, batch_s
        # Read on every request: plain attributes rather than the pydantic config's.
        self._max_wait_s = config.effective_max_wait_s  # a derived property: read once, not per request
        self._greedy = config.batching is Batching.GREEDY
        self._tenant_limits, self._batch_size = config.tenant_limits, config.batch_size
        self._slo_s, self._target = config.slo_s, config.admission_target
        # cost(batch_size, length) by length, for lengths below _OWN_COSTS_KEPT (-1.0: not yet
        # asked); compiled, a native list read where a dict's was a lookup by a boxed int.
        self._own_batch_s: list[float] = []
        self._offered: list[ArrivalRate] | None = (
            [ArrivalRate(batch_s) for _ in batchers]
            if config.batching is Batching.RATE and config.admission_fill == "rate" else None)

    def retry_after_s(self, batcher: Batcher, a: Attempt, now: float, index: int) -> float | None:
        """None to admit `a` into `batcher` (queue `index`), else the Retry-After of its refusal."""
        offered = self._offered
        if offered is not None:
            offered[index].observe(now)
        deadline = a.deadline_s
        budget = self._slo_s if deadline is None else min(self._slo_s, deadline - now)
        return shed_retry_after_s(self.predicted_s(batcher, a, now, index), budget * self._target)

    def predicted_s(self, batcher: Batcher, a: Attempt, now: float, index: int = 0) -> float:
        q, pool, queues, size = batcher.queue, self.pool, len(self.batchers), self._batch_size
        ahead: float = float(len(q))
        if self._tenant_limits:
            # Fair queueing serves this tenant once per round: its wait is its
            # own backlog times the number of tenants sharing the rounds.
            fair = (q.tenant_len(a.tenant) + 1) * max(1, q.active_tenants())
            if fair < ahead:
                ahead = float(fair)
        gpus = pool.alive / queues
        ahead += pool.backlog_count / queues
        s = self.slowness  # s.at(now), its answer of this instant read without a call
        slow = s.value if now == s.asked_s else s.at(now)
        capacity = gpus * size / (self.batch_s * slow)
        if ahead + 1 >= size or self._greedy:
            fill = 0.0
        elif self._offered is not None:  # until the rate batcher would let this queue go
            policy = self.policy
            fill = fill_wait_s(len(q) + 1, self._offered[index].rps(now), gpus / slow, policy.utilization,
                               policy.per_gpu_rps, self._max_wait_s)
        else:
            fill = self._max_wait_s
        length, costs = a.size, self._own_batch_s
        if 0 <= length < len(costs) and costs[length] >= 0.0:
            own = costs[length]
        else:
            own = self.cost(size, length)
            if 0 <= length < _OWN_COSTS_KEPT:
                if length >= len(costs):
                    costs.extend([-1.0] * (length + 1 - len(costs)))
                costs[length] = own
        return predicted_latency_s(int(ahead), capacity, own * slow, fill)
