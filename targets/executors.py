"""Cost models and the modeled GPU executor used in sim mode.

A batch is as slow as its longest input: inputs are padded to the longest one,
so every cost model is multiplied by max(1, longest / reference_length). With
every input at the reference length (the doc's tacit assumption) the constant
model is exactly the doc's 100 ms per batch.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Callable

from targets.config import CostModel, ModelKnobs
from targets.cost_table import CostTable
from targets.protocol import Attempt, longest

CostFn = Callable[[int, int], float]  # (batch size, longest input) -> seconds


@lru_cache(maxsize=8)
def _load_table(path: str) -> CostTable:
    return CostTable.from_json(path)


def cost_function(config: ModelKnobs) -> CostFn:
    """Seconds for a batch of `b` requests whose longest input is `length`."""
    ref = config.reference_length
    if config.cost_model is CostModel.CONSTANT:
        t = config.batch_time_s
        return lambda b, length: t * (length / ref if length > ref else 1.0)
    if config.cost_model is CostModel.AFFINE:
        t0, k = config.cost_t0_s, config.cost_per_item_s
        return lambda b, length: (t0 + k * b) * (length / ref if length > ref else 1.0)
    table = _load_table(config.cost_table)
    return lambda b, length: table.seconds(b, length)


class ModeledExecutor:
    """A GPU as a cost model: `run_batch` sleeps (virtual) seconds of compute.

    `slowdown` multiplies the time of batches started while it is set (fault
    injection: thermal throttling, a noisy neighbour, a bad driver).
    """

    def __init__(self, cost: CostFn) -> None:
        self.cost = cost
        self.slowdown = 1.0

    def expected_s(self, batch: list[Attempt]) -> float:
        return self.cost(len(batch), longest(batch)) * self.slowdown

    @property
    def only_sleeps(self) -> bool:
        """True while `run_batch` is this class's own: it only sleeps `expected_s(batch)` and
        answers None, so a GPU pool may time the batch on the loop's timers instead of running
        it in a task (targets.gpu_pool). A subclass that answers overrides `run_batch`."""
        return type(self).run_batch is ModeledExecutor.run_batch

    async def run_batch(self, batch: list[Attempt]) -> list | None:
        """None: a cost model computes no outputs (a subclass may answer, one per input)."""
        await asyncio.sleep(self.expected_s(batch))
        return None
