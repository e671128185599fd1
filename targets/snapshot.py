"""What a target reports about itself at the end of a run: plain frozen data.

`ServingTarget.snapshot()` takes one; the summary (harness.engine.summary)
reads nothing else of the target. A live host takes the same snapshot in its
own process and sends it over its pipe as `to_dict()`; the driver's side
rebuilds it with `TargetSnapshot.from_dict` and moves its instants onto the
run's clock with `since(t0)`. So sim and live summaries read one shape, and
no object is faked to look like a target.

Units: seconds (`_s`), GPU-seconds (`_gpu_s`), counts otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["CacheSnapshot", "DedupeSnapshot", "PoolSnapshot", "TargetSnapshot", "WastedSnapshot"]


@dataclass(frozen=True)
class PoolSnapshot:
    """The GPU pool. `busy_gpu_s` counts running batches up to the snapshot;
    `finished_busy_s` only finished (and killed) batches, as `last_done_s`."""

    gpus: int = 0
    alive: int = 0
    batches: int = 0
    items: int = 0                 # requests over all batches (sum of batch sizes)
    largest_batch: int = 0
    busy_gpu_s: float = 0.0
    finished_busy_s: float = 0.0
    last_done_s: float = 0.0       # when the last batch finished, on the target's clock
    lost_attempts: int = 0
    redispatched: int = 0
    killed_batches: int = 0

    @property
    def mean_batch(self) -> float:
        """Mean batch size (0 before the first batch)."""
        return self.items / self.batches if self.batches else 0.0


@dataclass(frozen=True)
class WastedSnapshot:
    """GPU-seconds spent on work nobody needed."""

    duplicate_s: float = 0.0       # a request ID computed twice
    abandoned_s: float = 0.0       # the client had already given up
    padding_s: float = 0.0         # short inputs padded to the batch's longest

    @property
    def total_s(self) -> float:
        return self.duplicate_s + self.abandoned_s + self.padding_s


@dataclass(frozen=True)
class CacheSnapshot:
    lookups: int = 0
    hits: int = 0
    bypassed: int = 0
    evictions: int = 0
    hit_rate: float = 0.0


@dataclass(frozen=True)
class DedupeSnapshot:
    coalesced: int = 0
    replayed: int = 0
    conflicts: int = 0
    refused: int = 0


@dataclass(frozen=True)
class TargetSnapshot:
    """One target's figures; `cache` / `dedupe` are None when it has none."""

    pool: PoolSnapshot
    wasted: WastedSnapshot
    received: int = 0
    lost: int = 0                  # in flight on a dead GPU, never answered
    shed_tenant: int = 0           # 429: over the tenant's limit
    shed_overload: int = 0         # 503: predicted wait over budget
    expired: int = 0               # dropped before dispatch: deadline passed
    cache: CacheSnapshot | None = None
    dedupe: DedupeSnapshot | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (what a live host sends over its pipe)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TargetSnapshot:
        """The snapshot back from `to_dict()`'s data."""
        return cls(
            pool=PoolSnapshot(**d["pool"]),
            wasted=WastedSnapshot(**d["wasted"]),
            cache=CacheSnapshot(**d["cache"]) if d.get("cache") is not None else None,
            dedupe=DedupeSnapshot(**d["dedupe"]) if d.get("dedupe") is not None else None,
            **{k: v for k, v in d.items() if k not in ("pool", "wasted", "cache", "dedupe")},
        )

    def since(self, t0: float) -> TargetSnapshot:
        """Instants made relative to `t0` (a live run's start on the host's clock)."""
        return replace(self, pool=replace(self.pool, last_done_s=max(0.0, self.pool.last_done_s - t0)))
