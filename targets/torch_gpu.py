"""GPU workers on real torch models: GpuPool's executor interface on a TorchExecutor.

`TorchGpu` is what a `GpuPool` sees in live mode in place of the sim's
`ModeledExecutor`: `expected_s(batch)` comes from the target's cost model (the
pool uses it for batch timeouts, admission for its predictions), and
`run_batch(batch)` runs one real forward pass over the attempts' payloads (the
JSON inputs the API server validated) on the executor's own thread.

Failures map onto the pool's two paths:

- the pool kills the worker (`GpuPool.kill`, a scheduled fault) by cancelling
  `run_batch`: the executor is failed too, so its thread drops the batch's
  results and cuts its pad sleep short;
- the worker dies by itself (`fail()`, or a real device error surfacing as
  torch_executor.WorkerDied): `run_batch` raises `targets.pool.WorkerDied`,
  which the pool treats exactly like a kill.

A worker the pool has revived is recovered on its next batch. `slowdown`
(fault injection) stretches each batch to `slowdown` times its measured time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from targets import torch_executor
from targets.pool import WorkerDied
from targets.protocol import Attempt
from targets.torch_executor import TorchExecutor

CostFn = Callable[[int, int], float]  # (batch size, longest input in tokens) -> seconds


class TorchGpu:
    """One GPU worker: a TorchExecutor behind the pool's executor interface."""

    def __init__(self, executor: TorchExecutor, cost: CostFn) -> None:
        self.executor = executor
        self.cost = cost
        self.slowdown = 1.0

    def expected_s(self, batch: list[Attempt]) -> float:
        """Seconds the batch should take (the cost model's, times any slowdown)."""
        return self.cost(len(batch), max(a.size for a in batch)) * self.slowdown

    async def run_batch(self, batch: list[Attempt]) -> list[dict[str, Any]]:
        """One forward pass over the attempts' payloads; one answer per attempt, in order.

        Raises `targets.pool.WorkerDied` if the worker dies with the batch in flight.
        """
        ex = self.executor
        if ex.failed:
            ex.recover()  # the pool only runs batches on workers it considers alive
        started = time.perf_counter()
        try:
            outputs = await ex.run_batch([a.payload for a in batch])
        except torch_executor.WorkerDied as exc:
            raise WorkerDied(str(exc)) from exc
        except asyncio.CancelledError:
            ex.fail()  # killed by the pool: void the thread's results, stop its pad sleep
            raise
        if self.slowdown > 1.0:
            await asyncio.sleep((self.slowdown - 1.0) * (time.perf_counter() - started))
        return outputs

    def fail(self) -> None:
        """The worker dies now: a batch in flight raises WorkerDied in `run_batch`."""
        self.executor.fail()

    def close(self) -> None:
        self.executor.close()


def torch_gpus(count: int, model: str, cost: CostFn, device: str = "auto", pad_to_s: float | None = None,
               threads: int | None = 1, seed: int = 0) -> list[TorchGpu]:
    """`count` workers, each with its own copy of `model` (same seeded weights).

    `pad_to_s` pads every forward pass to that many wall seconds (the design
    doc's 100 ms), so a small live fleet reproduces the doc's arithmetic;
    `threads` is torch's intra-op threads per worker.
    """
    return [TorchGpu(TorchExecutor(model, device=device, threads=threads, pad_to_s=pad_to_s, seed=seed), cost)
            for _ in range(count)]


async def warm_up(gpus: list[TorchGpu], batch_size: int = 8) -> None:
    """One untimed batch per worker, so the first requests do not pay for lazy setup."""
    await asyncio.gather(*(g.executor.warm_up(batch_size) for g in gpus))
