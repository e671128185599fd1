"""GPU workers that die by themselves: the pool's WorkerDied path, in sim and on torch."""

from __future__ import annotations

import asyncio

import pytest

from harness.engine.clock import run_virtual
from targets.gpu.worker import TorchGpu, torch_gpus
from targets.gpu_pool import GpuPool, WorkerDied
from targets.protocol import Attempt


def _batch(n: int, payload=None) -> list[Attempt]:
    return [Attempt(uid=i, tenant="t", conn=0, content=i, variant=0, size=64, sent_s=0.0, attempt_no=0,
                    payload=payload) for i in range(n)]


class _DiesOnce:
    """Dies 50 ms into its first batch; runs later ones in 100 ms."""

    def __init__(self) -> None:
        self.calls = 0

    def expected_s(self, batch: list[Attempt]) -> float:
        return 0.1

    async def run_batch(self, batch: list[Attempt]) -> None:
        self.calls += 1
        if self.calls == 1:
            await asyncio.sleep(0.05)
            raise WorkerDied("lost the device")
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("failure_handling", [False, True])
def test_worker_death_is_handled_like_kill(failure_handling: bool) -> None:
    log: list[tuple[float, str, int]] = []

    async def main() -> GpuPool:
        loop = asyncio.get_running_loop()
        ex = _DiesOnce()
        pool: GpuPool

        def redispatch(batch: list[Attempt]) -> None:
            log.append((loop.time(), "redispatch", len(batch)))
            pool.revive()
            pool.submit(batch)

        pool = GpuPool(1, lambda i: ex, on_done=lambda b, o, s: log.append((loop.time(), "done", len(b))),
                       failure_handling=failure_handling, batch_timeout_factor=2.0, redispatch=redispatch,
                       on_lost=lambda a: log.append((loop.time(), "lost", a.uid)))
        pool.submit(_batch(3))
        await asyncio.sleep(0.05 + 1e-9)
        assert pool.alive_gpus() == 0 and pool.free_gpus() == 0  # down, as after kill()
        await asyncio.sleep(1.0)
        return pool

    pool = run_virtual(main())
    assert pool.stats.killed_batches == 1
    if failure_handling:
        # Noticed by the batch timeout (2 x 100 ms), re-run once on the revived worker.
        assert [(round(t, 6), e, n) for t, e, n in log] == [(0.25, "redispatch", 3), (0.35, "done", 3)]
        assert pool.stats.redispatched == 3 and pool.stats.lost_attempts == 0
    else:
        assert [(round(t, 6), e, n) for t, e, n in log] == [(0.05, "lost", 0), (0.05, "lost", 1), (0.05, "lost", 2)]
        assert pool.stats.lost_attempts == 3 and pool.stats.busy_s == pytest.approx(0.05)


@pytest.fixture(scope="module")
def gpu() -> TorchGpu:
    (g,) = torch_gpus(1, "mlp", cost=lambda b, length: 0.3, device="cpu", pad_to_s=0.3)
    yield g
    g.close()


@pytest.mark.live
async def test_torch_worker_death_reaches_the_pool(gpu: TorchGpu) -> None:
    lost: list[Attempt] = []
    done: list[int] = []
    pool = GpuPool(1, lambda i: gpu, on_done=lambda b, o, s: done.append(len(o)), on_lost=lost.append)
    batch = _batch(4, payload=[0.1] * 512)
    pool.submit(batch)
    await asyncio.sleep(0.05)
    gpu.fail()  # the device dies mid-batch, 250 ms before the padded batch would end
    await asyncio.sleep(0.05)
    assert lost == batch and pool.alive_gpus() == 0 and done == []
    pool.revive()
    pool.submit(_batch(2, payload=[0.2] * 512))  # the revived worker recovers and runs it
    for _ in range(100):
        if done:
            break
        await asyncio.sleep(0.02)
    assert done == [2] and not gpu.executor.failed


@pytest.mark.live
async def test_pool_kill_voids_the_torch_batch(gpu: TorchGpu) -> None:
    done: list[list] = []
    pool = GpuPool(1, lambda i: gpu, on_done=lambda b, o, s: done.append(o), on_lost=lambda a: None)
    pool.submit(_batch(3, payload=[0.3] * 512))
    await asyncio.sleep(0.05)
    assert pool.kill(1) == [0]
    await asyncio.sleep(0)
    assert gpu.executor.failed and pool.stats.killed_batches == 1
    pool.revive()
    pool.submit(_batch(1, payload=[0.4] * 512))
    for _ in range(100):
        if done:
            break
        await asyncio.sleep(0.02)
    assert len(done) == 1 and len(done[0]) == 1 and set(done[0][0]) == {"label", "score", "logits"}
    assert gpu.expected_s(_batch(5)) == 0.3
