"""GPU workers on real torch models: GpuPool's executor interface on a TorchExecutor.

`TorchGpu` is what a `GpuPool` sees in live mode in place of the sim's
`ModeledExecutor`: `expected_s(batch)` comes from the target's cost model (the
pool uses it for batch timeouts, admission for its predictions), and
`run_batch(batch)` runs one real forward pass over the attempts' payloads (the
JSON inputs the API server validated) on the executor's own thread.

Padding: with `pad_s` set, a batch is held until `pad_s(batch)` seconds after
the pool dispatched it (the cost model's time, the doc's 100 ms), so a small
live fleet reproduces the doc's arithmetic. The pad is timed on the event loop
from the dispatch rather than inside the worker thread (TorchExecutor's own
`pad_to_s`): measured here, the thread hand-offs and the previous batch's
answers added 4-5 ms to a thread-side pad on a busy 2-core machine, which a
fleet at utilisation 0.98 cannot absorb; timed from the dispatch, they fall
inside the pad.

Failures map onto the pool's two paths:

- the pool kills the worker (`GpuPool.kill`, a scheduled fault) by cancelling
  `run_batch`: the executor is failed too, so its thread drops the results;
- the worker dies by itself (`fail()`, or a real device error surfacing as
  targets.gpu.executor.WorkerDied): `run_batch` raises `targets.gpu_pool.WorkerDied`,
  which the pool treats exactly like a kill.

A worker the pool has revived is recovered on its next batch. `slowdown`
(fault injection) stretches each batch to `slowdown` times its padded (or,
unpadded, measured) time.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from targets.gpu import executor as torch_executor
from targets.gpu.executor import TorchExecutor
from targets.gpu_pool import WorkerDied
from targets.protocol import Attempt

CostFn = Callable[[int, int], float]  # (batch size, longest input in tokens) -> seconds


class TorchGpu:
    """One GPU worker: a TorchExecutor behind the pool's executor interface."""

    def __init__(self, executor: TorchExecutor, cost: CostFn,
                 pad_s: Callable[[list[Attempt]], float] | None = None) -> None:
        self.executor = executor
        self.cost = cost
        self.pad_s = pad_s
        self.slowdown = 1.0
        self.overruns = 0  # padded batches whose own run already took longer than the pad
        # When the pool handed this worker its batch (GpuPool's Worker.started_s):
        # the batch task first runs a loop iteration later, after the previous
        # batch's answers, so holding from there would stretch every batch.
        self.dispatched_s: Callable[[], float] | None = None
        self._waker: asyncio.Future[None] | None = None

    def expected_s(self, batch: list[Attempt]) -> float:
        """Seconds the batch should take (the cost model's, times any slowdown)."""
        return self.cost(len(batch), max(a.size for a in batch)) * self.slowdown

    async def run_batch(self, batch: list[Attempt]) -> list[dict[str, Any]]:
        """One forward pass over the attempts' payloads; one answer per attempt, in order.

        Raises `targets.gpu_pool.WorkerDied` if the worker dies with the batch in flight.
        """
        ex = self.executor
        if ex.failed:
            ex.recover()  # the pool only runs batches on workers it considers alive
        loop = asyncio.get_running_loop()
        started = loop.time() if self.dispatched_s is None else min(loop.time(), self.dispatched_s())
        try:
            outputs = await ex.run_batch([a.payload for a in batch])
        except torch_executor.WorkerDied as exc:
            raise WorkerDied(str(exc)) from exc
        except asyncio.CancelledError:
            ex.fail()  # killed by the pool: void the thread's results
            raise
        target_s = self.pad_s(batch) if self.pad_s is not None else loop.time() - started
        hold = target_s * self.slowdown - (loop.time() - started)
        if hold <= 0 and self.pad_s is not None:
            self.overruns += 1
        if hold > 0:
            waker = self._waker = loop.create_future()
            timer = loop.call_later(hold, _wake, waker)
            try:
                await waker
            except asyncio.CancelledError:
                ex.fail()
                raise
            finally:
                timer.cancel()
                self._waker = None
            if ex.failed:
                raise WorkerDied("worker died while its batch was being held to the batch time")
        return outputs

    def fail(self) -> None:
        """The worker dies now (call on the loop): a batch in flight raises WorkerDied."""
        self.executor.fail()
        if self._waker is not None:
            _wake(self._waker)

    def close(self) -> None:
        self.executor.close()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def torch_gpus(count: int, model: str, cost: CostFn, device: str = "auto", pad_to_s: float | None = None,
               threads: int | None = 1, seed: int = 0, pad_to_cost: bool = False) -> list[TorchGpu]:
    """`count` workers, each with its own copy of `model` (same seeded weights).

    Each batch is held to `pad_to_s` seconds, or to the cost model's time with
    `pad_to_cost` (the doc's 100 ms under the constant model, longer for long
    inputs), or not at all; `threads` is torch's intra-op threads per worker.
    """
    pad: Callable[[list[Attempt]], float] | None = None
    if pad_to_cost:
        pad = lambda batch: cost(len(batch), max(a.size for a in batch))  # noqa: E731
    elif pad_to_s:
        pad = lambda batch: pad_to_s  # noqa: E731
    return [TorchGpu(TorchExecutor(model, device=device, threads=threads, seed=seed), cost, pad)
            for _ in range(count)]

