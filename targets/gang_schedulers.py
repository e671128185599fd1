"""Pool schedulers for two models on one GPU pool (Part 3 of the review).

A pool of ``gpus`` GPUs serves a *large* model, whose batch needs every GPU of the
pool at once (a gang), and a *small* model, whose batch needs one GPU. Both share
one latency target ``slo_s``. Each model batches dynamically: a batch is *due* when
``batch_size`` requests are queued or its oldest request has waited ``max_wait_s``
(a fraction of the SLO slack ``slo_s - batch_time_s``); partial batches are allowed.

Every policy is a step machine in the style of the vLLM v1 scheduler: no asyncio,
no sockets, no clock reads. Contract of ``schedule(state, now_s) -> Decision``:

* The driver calls it after processing every event at ``now_s`` (arrivals, batch
  completions, and wake-ups the policy asked for with ``Decision.wake_at_s``).
* After a call that started something it calls again at the same ``now_s`` with the
  updated state, until a call starts nothing, so a policy may start one batch at a
  time and let the next call see the queue it left.
* ``Start`` batches take the oldest ``size`` requests of the model's FIFO queue.
* ``Decision.reservation_s`` announces the time at which the policy will start a
  waiting large batch (its promise); the driver checks that backfill never makes
  it later.

A policy instance keeps per-run state (``proportional``'s pass counters), so build
a fresh one per run with ``create_policy``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

__all__ = [
    "EPS_S", "ModelKind", "ModelSpec", "PoolSpec", "QueueView", "GpuSlot", "PoolState",
    "Start", "Decision", "PoolPolicy", "ProportionalPolicy", "GangReservePolicy",
    "TimeSlicePolicy", "slack_reserve", "batch_due", "due_at_s", "create_policy", "policy_names",
]

# Float tolerance for "has waited max_wait_s" and slot boundaries: a wake-up
# scheduled at oldest + wait must see the batch as due despite rounding.
EPS_S = 1e-9


class ModelKind(str, enum.Enum):
    LARGE = "large"
    SMALL = "small"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model's traffic and cost: Poisson ``rate_rps`` requests/s; a batch of up
    to ``batch_size`` requests runs ``batch_time_s`` seconds whatever its fill."""

    rate_rps: float
    batch_size: int
    batch_time_s: float

    def __post_init__(self) -> None:
        if not (self.rate_rps >= 0 and math.isfinite(self.rate_rps)):
            raise ValueError(f"rate_rps must be finite and >= 0, got {self.rate_rps}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {self.batch_size}")
        if not (self.batch_time_s > 0 and math.isfinite(self.batch_time_s)):
            raise ValueError(f"batch_time_s must be finite and > 0, got {self.batch_time_s}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by its fields (a pool's config goes to worker processes): compiled (targets.native),
        # a frozen class's default unpickling would set each field on the instance, which it refuses.
        return ModelSpec, (self.rate_rps, self.batch_size, self.batch_time_s)


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """The pool and both models. ``wait_fraction`` of the SLO slack is spent waiting
    for a batch to fill; the rest is left for queueing behind busy GPUs."""

    large: ModelSpec
    small: ModelSpec
    slo_s: float
    gpus: int = 8
    wait_fraction: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise ValueError(f"gpus must be an int >= 1, got {self.gpus}")
        if not (self.slo_s > 0 and math.isfinite(self.slo_s)):
            raise ValueError(f"slo_s must be finite and > 0, got {self.slo_s}")
        if not 0.0 <= self.wait_fraction <= 1.0:
            raise ValueError(f"wait_fraction must be in [0, 1], got {self.wait_fraction}")

    def __reduce__(self) -> tuple[Any, ...]:
        return PoolSpec, (self.large, self.small, self.slo_s, self.gpus, self.wait_fraction)  # as ModelSpec's

    def model(self, kind: ModelKind) -> ModelSpec:
        return self.large if kind is ModelKind.LARGE else self.small

    def gang(self, kind: ModelKind) -> int:
        """GPUs one batch of ``kind`` occupies at once."""
        return self.gpus if kind is ModelKind.LARGE else 1

    def max_wait_s(self, kind: ModelKind) -> float:
        """Dynamic-batching timer (s): dispatch a partial batch after this wait."""
        return self.wait_fraction * max(0.0, self.slo_s - self.model(kind).batch_time_s)

    def gpu_s_per_request(self, kind: ModelKind) -> float:
        """GPU-seconds one request costs in a full batch: gang * t / B."""
        m = self.model(kind)
        return self.gang(kind) * m.batch_time_s / m.batch_size


@dataclass(frozen=True, slots=True)
class QueueView:
    """What a policy sees of one FIFO queue: its length and oldest arrival (s)."""

    length: int = 0
    oldest_arrival_s: float = math.inf


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """A busy GPU: which model's batch runs on it and when it ends (s)."""

    model: ModelKind
    end_s: float


@dataclass(frozen=True, slots=True)
class PoolState:
    """Snapshot at one instant: ``slots[g]`` is None when GPU ``g`` is free."""

    slots: tuple[GpuSlot | None, ...]
    large: QueueView
    small: QueueView

    def queue(self, kind: ModelKind) -> QueueView:
        return self.large if kind is ModelKind.LARGE else self.small

    def free_gpus(self) -> tuple[int, ...]:
        return tuple(g for g, s in enumerate(self.slots) if s is None)

    def drained_at_s(self, now_s: float) -> float:
        """When every running batch has ended, if nothing new starts (s)."""
        return max([now_s] + [s.end_s for s in self.slots if s is not None])


@dataclass(frozen=True, slots=True)
class Start:
    """Start ``size`` requests of ``model`` on ``gpus`` at ``start_s``; ends ``end_s``."""

    model: ModelKind
    gpus: tuple[int, ...]
    size: int
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class Decision:
    """One call's output. ``wake_at_s``: call me then even if nothing happens.
    ``reservation_s``: the pool is held so a waiting large batch starts by then."""

    starts: tuple[Start, ...] = ()
    wake_at_s: float | None = None
    reservation_s: float | None = None


class PoolPolicy(Protocol):
    name: str

    def schedule(self, state: PoolState, now_s: float) -> Decision: ...


def batch_due(q: QueueView, batch_size: int, wait_s: float, now_s: float) -> bool:
    """A batch is due when full or when its oldest request has waited ``wait_s``."""
    return q.length >= batch_size or (
        q.length > 0 and now_s - q.oldest_arrival_s >= wait_s - EPS_S)


def due_at_s(q: QueueView, batch_size: int, wait_s: float) -> float | None:
    """When the batch becomes due by its timer (s); None for an empty queue."""
    if q.length == 0:
        return None
    return q.oldest_arrival_s if q.length >= batch_size else q.oldest_arrival_s + wait_s


def _earliest(now_s: float, *times: float | None) -> float | None:
    """The earliest of ``times`` still in the future: a timer already past (a due
    batch that cannot start) must not hide a later one."""
    known = [t for t in times if t is not None and t > now_s + EPS_S]
    return min(known) if known else None


class _Base:
    """Shared batching helpers; subclasses implement ``schedule``."""

    name = "base"

    def __init__(self, spec: PoolSpec) -> None:
        self.spec = spec

    def _due(self, state: PoolState, kind: ModelKind, now_s: float,
             wait_s: float | None = None) -> bool:
        wait = self.spec.max_wait_s(kind) if wait_s is None else wait_s
        return batch_due(state.queue(kind), self.spec.model(kind).batch_size, wait, now_s)

    def _timer(self, state: PoolState, kind: ModelKind, wait_s: float | None = None) -> float | None:
        wait = self.spec.max_wait_s(kind) if wait_s is None else wait_s
        return due_at_s(state.queue(kind), self.spec.model(kind).batch_size, wait)

    def _large_start(self, state: PoolState, now_s: float) -> Start:
        m = self.spec.large
        return Start(ModelKind.LARGE, tuple(range(self.spec.gpus)),
                     min(state.large.length, m.batch_size), now_s, now_s + m.batch_time_s)

    def _small_starts(self, state: PoolState, now_s: float,
                      until_s: float = math.inf) -> list[Start]:
        """Due small batches on free GPUs, each ending by ``until_s`` (a reservation).

        After the first batch the new oldest request is unknown, so only batches that
        are due by size follow; the driver's re-call handles the rest.
        """
        m = self.spec.small
        # Strictly no tolerance: a batch ending a rounding error after a slot would
        # keep a GPU busy at the instant the large batch needs all of them.
        if now_s + m.batch_time_s > until_s or not self._due(state, ModelKind.SMALL, now_s):
            return []
        out: list[Start] = []
        remaining = state.small.length
        for g in state.free_gpus():
            if remaining == 0 or (out and remaining < m.batch_size):
                break
            size = min(remaining, m.batch_size)
            out.append(Start(ModelKind.SMALL, (g,), size, now_s, now_s + m.batch_time_s))
            remaining -= size
        return out


class ProportionalPolicy(_Base):
    """The design doc's proposal: two queues, dispatch in proportion to QPS.

    Reading (documented because the doc is silent on gangs): a stride counter picks
    which *due* queue gets the next batch, each model's pass advancing by
    ``1 / rate_rps`` per batch, so over contended turns batches go out in the ratio
    of the models' QPS; equal passes go to the large model (the doc's tie-break).
    When the large model's turn comes with fewer than ``gpus`` GPUs free it cannot
    start; the doc reserves nothing, so the dispatcher stays work-conserving: the
    large model keeps its turn (its pass does not advance, so it goes first the
    moment all GPUs are free) while free GPUs go to due small batches. With small
    batches staggered in time (a new one every B_S / rate_S s, each lasting t_S), all
    GPUs are never free at once while small traffic flows, and the large model
    starves although most of the pool sits idle. The QPS weights barely matter: the
    gang condition, not the turn order, decides. Had the turn held the pool instead,
    the policy would become a reservation triggered by the counter, with the weights
    again playing no part (a due large batch is usually the only contender).
    """

    name = "proportional"

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        self._stride = {k: (1.0 / spec.model(k).rate_rps if spec.model(k).rate_rps > 0 else 1.0)
                        for k in ModelKind}
        self._pass = {k: 0.0 for k in ModelKind}
        self._virtual = 0.0  # pass of the last dispatch; idle queues cannot bank credit

    def _charge(self, kind: ModelKind) -> None:
        p = max(self._pass[kind], self._virtual)
        self._virtual = p
        self._pass[kind] = p + self._stride[kind]

    def schedule(self, state: PoolState, now_s: float) -> Decision:
        due = [k for k in (ModelKind.LARGE, ModelKind.SMALL) if self._due(state, k, now_s)]
        # Lowest pass first; the tuple's second key sends ties to the large model.
        due.sort(key=lambda k: (max(self._pass[k], self._virtual), k is not ModelKind.LARGE))
        for kind in due:
            if kind is ModelKind.LARGE:
                if len(state.free_gpus()) == self.spec.gpus:
                    self._charge(kind)
                    return Decision((self._large_start(state, now_s),))
                continue  # turn kept, GPUs not held: the doc has no reservation
            starts = self._small_starts(state, now_s)
            if starts:
                for _ in starts:
                    self._charge(kind)
                return Decision(tuple(starts))
        return Decision(wake_at_s=_earliest(now_s, self._timer(state, ModelKind.LARGE),
                                            self._timer(state, ModelKind.SMALL)))


class GangReservePolicy(_Base):
    """Reservation with drain and backfill.

    When the large batch is due for reservation (full, or its oldest request has
    waited ``threshold_s``), no small batch starts unless it ends by the time every
    running batch has drained (backfill); when all GPUs are free the large batch
    starts on all of them. Since backfill ends by the drain time, the reservation
    announced when it was made is never pushed later. ``threshold_s`` defaults to
    the large model's batching timer.
    """

    name = "gang-reserve"

    def __init__(self, spec: PoolSpec, threshold_s: float | None = None) -> None:
        super().__init__(spec)
        self.threshold_s = spec.max_wait_s(ModelKind.LARGE) if threshold_s is None else threshold_s
        if self.threshold_s < 0:
            raise ValueError(f"threshold_s must be >= 0, got {self.threshold_s}")

    def schedule(self, state: PoolState, now_s: float) -> Decision:
        if self._due(state, ModelKind.LARGE, now_s, self.threshold_s):
            if len(state.free_gpus()) == self.spec.gpus:
                return Decision((self._large_start(state, now_s),), reservation_s=now_s)
            drained = state.drained_at_s(now_s)
            # Completions wake us; the timer matters only for backfill of a filling small batch.
            return Decision(tuple(self._small_starts(state, now_s, until_s=drained)),
                            wake_at_s=_earliest(now_s, self._timer(state, ModelKind.SMALL)),
                            reservation_s=drained)
        return Decision(tuple(self._small_starts(state, now_s)),
                        wake_at_s=_earliest(now_s, self._timer(state, ModelKind.LARGE, self.threshold_s),
                                            self._timer(state, ModelKind.SMALL)))


def slack_reserve(spec: PoolSpec, guard: float = 0.9) -> GangReservePolicy:
    """Gang-reserve that reserves late: at ``guard`` times the latest moment the
    oldest large request can still make the SLO after draining one small batch,
    ``slo - t_L - t_S``. Fuller large batches (a lower GPU cost per request) are
    bought with large-model latency close to the target."""
    if not 0.0 <= guard <= 1.0:
        raise ValueError(f"guard must be in [0, 1], got {guard}")
    policy = GangReservePolicy(spec, threshold_s=guard * max(
        0.0, spec.slo_s - spec.large.batch_time_s - spec.small.batch_time_s))
    policy.name = "slack-reserve"
    return policy


class TimeSlicePolicy(_Base):
    """A fixed cycle: at every multiple of ``cycle_s`` a slot for one large batch on
    all GPUs; small batches in the rest, each ending by the next slot boundary.

    Large requests wait at most one cycle then run ``t_L``, so the default
    ``cycle_s = (slo - t_L) / 2`` keeps them at half the SLO slack plus ``t_L``. One
    large batch per cycle caps the large model at ``B_L / cycle_s`` requests/s. An
    empty slot is handed to small batches; but small batches never start within
    ``t_S`` of a boundary, whether or not a large request will show up: the cost of
    rigidity.
    """

    name = "time-slice"

    def __init__(self, spec: PoolSpec, cycle_s: float | None = None) -> None:
        super().__init__(spec)
        t_l, t_s = spec.large.batch_time_s, spec.small.batch_time_s
        self.cycle_s = (spec.slo_s - t_l) / 2 if cycle_s is None else cycle_s
        if self.cycle_s < t_l + t_s - EPS_S:  # tolerance: (slo - t_L) / 2 rounds
            raise ValueError(f"cycle_s {self.cycle_s:.3f} s must be >= t_L + t_S = {t_l + t_s:.3f} s"
                             " (the large slot plus one small batch); raise the SLO or the cycle")

    def schedule(self, state: PoolState, now_s: float) -> Decision:
        # The tolerance is in seconds, not cycles: an instant a rounding error before a
        # boundary (two events the loop runs together) belongs to the slot that starts there.
        k = math.floor((now_s + EPS_S) / self.cycle_s)
        slot, next_slot = k * self.cycle_s, (k + 1) * self.cycle_s
        small_wake = self._timer(state, ModelKind.SMALL)
        if state.large.length > 0:
            if abs(now_s - slot) <= EPS_S and len(state.free_gpus()) == self.spec.gpus:
                return Decision((self._large_start(state, now_s),), reservation_s=now_s)
            starts = self._small_starts(state, now_s, until_s=next_slot)
            return Decision(tuple(starts), wake_at_s=_earliest(now_s, next_slot, small_wake),
                            reservation_s=next_slot)
        starts = self._small_starts(state, now_s, until_s=next_slot)
        return Decision(tuple(starts), wake_at_s=_earliest(now_s, next_slot, small_wake))


_REGISTRY: dict[str, Callable[..., PoolPolicy]] = {
    "proportional": ProportionalPolicy,
    "gang-reserve": GangReservePolicy,
    "slack-reserve": slack_reserve,
    "time-slice": TimeSlicePolicy,
}


def policy_names() -> tuple[str, ...]:
    """Registered policy names, the doc's proposal first."""
    return tuple(_REGISTRY)


def create_policy(name: str, spec: PoolSpec, **params: float) -> PoolPolicy:
    """A fresh policy ``name`` for ``spec``; ``params`` go to its constructor
    (``threshold_s`` for gang-reserve, ``cycle_s`` for time-slice)."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown pool policy {name!r}; valid: {', '.join(_REGISTRY)}") from None
    return factory(spec, **params)
