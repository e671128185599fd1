"""A live host's second model version: the canary's own torch workers beside the baseline's.

A host whose spec has a `canary` block (`LiveCanarySpec`) serves two versions of
its model through one front door, split by the same `CanarySplit` as the sim:
the baseline on the target's GPU workers and the canary on workers of its own
(a canary deployment is its own replicas), built from the canary's weight seed
(another seed: other weights, so other answers; the same seed: the same answers)
and slowed by its version's cost factor (each batch held to that multiple of its
padded, or measured, time), failing its version's share of answers with a 5xx.

The rollout's weight is set at run time over the host's control pipe (op
`canary`, `{"weight": w}`: nothing listens on the network for it), which also
answers the canary's counters: attempts routed to it, and cache hits that gave a
request the other version's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from targets.versions import CanaryRouting, CanarySplit, ModelVersion

__all__ = ["LiveCanary", "LiveCanarySpec"]


@dataclass(frozen=True)
class LiveCanarySpec:
    """The canary as plain JSON-able data (a HostSpec's `canary` block).

    `version`: targets.versions.ModelVersion fields (its name, cost factor, error
    rate; its output shift is the sim's and unused live: a live canary's answers
    are its own model's). `weights_seed`: the canary model's weight seed; None:
    the baseline's (a good canary answers as the baseline does)."""

    version: dict[str, Any]
    routing: str = CanaryRouting.HASH.value
    gpus: int = 1
    weights_seed: int | None = None


class LiveCanary:
    """The canary attached to a running TargetHost's ServingTarget."""

    def __init__(self, split: CanarySplit, gpus: list[Any], target: Any) -> None:
        self.split = split
        self.gpus = gpus
        self.target = target

    @classmethod
    async def attach(cls, host: Any, raw: dict[str, Any]) -> "LiveCanary":
        """Build the canary's workers for `host` (a harness.live.host.TargetHost whose
        target is built), warm them, and attach them to its target at weight 0."""
        from harness.live.host_warmup import warm_models
        from targets.gpu.worker import torch_gpus

        spec = LiveCanarySpec(**raw)
        version = ModelVersion.model_validate(spec.version)
        hs, cfg, target = host.spec, host.config, host.target
        fixed = hs.pad_to_s is not None
        seed = hs.seed if spec.weights_seed is None else spec.weights_seed
        gpus = torch_gpus(spec.gpus, hs.model, target.cost, hs.device, hs.pad_to_s if fixed else None, hs.threads,
                          seed, pad_to_cost=not fixed and hs.effective_pad_s(cfg) is not None)
        for gpu in gpus:
            gpu.slowdown = version.cost_factor
        await warm_models(gpus, cfg.batch_size)
        split = target.attach_canary(version, CanaryRouting(spec.routing), spec.gpus, executor_for=lambda i: gpus[i])
        for gpu, worker in zip(gpus, target.canary.pool.workers):
            gpu.dispatched_s = lambda w=worker: w.started_s  # hold batches from the pool's own start
        return cls(split, gpus, target)

    def command(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Op `canary`: set the weight when `weight` is given; answer the weight, the counters
        and each version's mean batch time so far (s, as its pool saw it: holds included)."""
        if "weight" in msg:
            weight = float(msg["weight"])
            if not 0.0 <= weight <= 1.0:
                return {"error": f"canary weight must be within 0..1, got {weight}"}
            self.split.weight = weight
        canary = self.target.canary
        return {"weight": self.split.weight, "routed": canary.stats.routed, "wrong_version": canary.stats.wrong_version,
                "batch_s": {canary.baseline.name: _mean_batch_s(self.target.pool),
                            canary.version.name: _mean_batch_s(canary.pool)}}

    def close(self) -> None:
        self.target.canary.pool.cancel_all()
        for gpu in self.gpus:
            gpu.close()


def _mean_batch_s(pool: Any) -> float | None:
    return pool.stats.busy_s / pool.stats.batches if pool.stats.batches else None
