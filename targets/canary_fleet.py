"""The canary's own replicas inside a target: a split, a GPU pool, a batcher, and its checks.

A canary deployment serves the share of traffic the rollout gives it on its
own GPUs (slowed by its version's cost factor), so a slow canary slows only its
own answers. Answers carry the version that computed them (`VersionedOutput`),
which is how the target notices a cached answer of the wrong version: the doc's
exact-payload cache keys on the payload alone and hands a canary-routed request
the baseline's answer (or the other way round).

In sim the replicas are modeled GPUs slowed by the version's cost factor and
answers are modeled labels; live, `executor_for` gives them real torch workers
(the canary's own weights and slowdown) and answers are the model's own, tagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from targets.batcher import Batcher, BatchPolicy
from targets.executors import CostFn, ModeledExecutor
from targets.gpu_pool import Executor, GpuPool
from targets.protocol import Attempt
from targets.queues import FifoQueue
from targets.versions import BASELINE, CanaryRouting, CanarySplit, ModelVersion, fails, tagged, version_of

__all__ = ["CanaryFleet", "CanaryStats"]

OnDone = Callable[[list[Attempt], Any, float, ModelVersion], None]


@dataclass
class CanaryStats:
    routed: int = 0         # attempts the split sent to the canary's replicas
    wrong_version: int = 0  # cache hits answered with the other version's output


class CanaryFleet:
    def __init__(self, version: ModelVersion, routing: CanaryRouting, gpus: int, cost: CostFn, policy: BatchPolicy,
                 on_done: OnDone, baseline: ModelVersion = BASELINE,
                 executor_for: Callable[[int], Executor] | None = None, salt: int = 0) -> None:
        self.version = version
        self.baseline = baseline
        self.split = CanarySplit(version, routing, salt=salt)
        self.stats = CanaryStats()
        if executor_for is None:
            executor = ModeledExecutor(lambda b, length: cost(b, length) * version.cost_factor)
            executor_for = lambda i: executor  # noqa: E731
        self.pool = GpuPool(gpus, executor_for, on_done=lambda batch, out, s: on_done(batch, out, s, version))
        self.batcher = Batcher(FifoQueue(), policy, self.pool, pull=True)

    def version_of(self, a: Attempt) -> ModelVersion:
        return self.version if self.split.to_canary(a.uid, a.tenant) else self.baseline

    def takes(self, a: Attempt) -> bool:
        """Whether the split sends this attempt to the canary's replicas (counted)."""
        if self.split.to_canary(a.uid, a.tenant):
            self.stats.routed += 1
            return True
        return False

    def answer(self, a: Attempt, version: ModelVersion, output: Any = None) -> tuple[Any, bool]:
        """What `version` answers for the attempt (its model's `output`, or the modeled
        label when None), tagged with the version, and whether that answer is a 5xx."""
        return tagged(output, version, a.content), fails(a.uid, a.attempt_no, version)

    def check_cached(self, a: Attempt, output: Any) -> None:
        served = version_of(output)
        if served is not None and served != self.version_of(a).name:
            self.stats.wrong_version += 1
