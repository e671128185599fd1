"""targets.gpu.executor: off-loop execution, pad_to_s, fault injection, devices.

These are live-mode tests, so some run on the wall clock; their bounds are loose
(a 2-core CI machine can stall for tens of milliseconds).
"""

from __future__ import annotations

import asyncio
import random
import time

import pytest
import torch

from targets.gpu.executor import TorchExecutor, WorkerDied, resolve_device
from targets.gpu.models import create_model

pytestmark = pytest.mark.live  # real torch worker threads on the wall clock


def _inputs(model: str, n: int, length: int = 16) -> list:
    handle = create_model(model)
    rng = random.Random(0)
    return [handle.synthetic_input(rng, length) for _ in range(n)]


@pytest.fixture
def mlp():
    executor = TorchExecutor("mlp", device="cpu", threads=1)
    yield executor
    executor.close()


async def test_run_batch_matches_direct_model_and_records_timing(mlp) -> None:
    inputs = _inputs("mlp", 3)
    assert await mlp.run_batch(inputs) == create_model("mlp").run(inputs)
    timing = mlp.last_timing
    assert timing is not None and timing.size == 3 and timing.length is None
    assert 0 < timing.compute_s <= timing.busy_s
    assert mlp.last_compute_s == timing.compute_s
    assert mlp.busy_s == pytest.approx(timing.busy_s) and mlp.batches_run == 1


async def test_transformer_batches_record_padded_length() -> None:
    with TorchExecutor("transformer", device="cpu", threads=1) as executor:
        outputs = await executor.run_batch([[1, 2, 3, 4], [5]])
        assert len(outputs) == 2
        timing = executor.last_timing
        assert timing.length == 4 and timing.padding_fraction == pytest.approx(3 / 8)


async def test_event_loop_keeps_ticking_during_a_batch() -> None:
    pad_s = 0.3
    with TorchExecutor("transformer", device="cpu", threads=1, pad_to_s=pad_s) as executor:
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        await executor.run_batch(_inputs("transformer", 4, 32))
        task.cancel()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    # Run on the loop, the batch would block it for >= pad_s: no ticks at all meanwhile.
    assert len(ticks) >= 10
    assert max(gaps) < pad_s / 2


async def test_pad_to_s_pads_each_batch_and_accumulates_busy_time() -> None:
    pad_s = 0.15
    with TorchExecutor("mlp", device="cpu", threads=1, pad_to_s=pad_s) as executor:
        for _ in range(2):
            start = time.perf_counter()
            await executor.run_batch(_inputs("mlp", 2))
            assert time.perf_counter() - start >= 0.9 * pad_s
            timing = executor.last_timing
            assert timing.busy_s >= 0.9 * pad_s and timing.compute_s < timing.busy_s
            assert not timing.overran
        assert executor.busy_s >= 2 * 0.9 * pad_s and executor.overruns == 0


async def test_one_batch_at_a_time() -> None:
    pad_s = 0.1
    with TorchExecutor("mlp", device="cpu", threads=1, pad_to_s=pad_s) as executor:
        start = time.perf_counter()
        await asyncio.gather(*(executor.run_batch(_inputs("mlp", 1)) for _ in range(3)))
        assert time.perf_counter() - start >= 3 * 0.9 * pad_s
        assert executor.batches_run == 3


async def test_overrun_is_counted_when_compute_exceeds_pad() -> None:
    with TorchExecutor("mlp", device="cpu", threads=1, pad_to_s=0.0) as executor:
        await executor.run_batch(_inputs("mlp", 1))
        assert executor.overruns == 1 and executor.last_timing.overran


async def test_fail_kills_in_flight_and_later_batches_until_recover() -> None:
    pad_s = 1.0
    with TorchExecutor("mlp", device="cpu", threads=1, pad_to_s=pad_s) as executor:
        start = time.perf_counter()
        in_flight = asyncio.create_task(executor.run_batch(_inputs("mlp", 2)))
        await asyncio.sleep(0.05)
        executor.fail()
        assert executor.failed
        with pytest.raises(WorkerDied):
            await in_flight
        assert time.perf_counter() - start < pad_s / 2  # woken at once, not after the pad
        with pytest.raises(WorkerDied):
            await executor.run_batch(_inputs("mlp", 1))
        executor.recover()
        assert not executor.failed
        assert len(await executor.run_batch(_inputs("mlp", 1))) == 1
        # fail() also cut the abandoned batch's pad sleep short, so this one was not
        # queued behind a full second of dead padding.
        assert time.perf_counter() - start < 2 * pad_s


async def test_fail_from_another_thread_wakes_the_waiter() -> None:
    with TorchExecutor("mlp", device="cpu", threads=1, pad_to_s=1.0) as executor:
        in_flight = asyncio.create_task(executor.run_batch(_inputs("mlp", 1)))
        await asyncio.sleep(0.05)
        await asyncio.to_thread(executor.fail)
        with pytest.raises(WorkerDied):
            await asyncio.wait_for(in_flight, timeout=0.5)


async def test_bad_input_raises_value_error_and_worker_survives(mlp) -> None:
    with pytest.raises(ValueError, match="input 1: expected 512 numbers"):
        await mlp.run_batch([[0.0] * 512, [0.0] * 3])
    assert len(await mlp.run_batch([[0.0] * 512])) == 1


async def test_closed_executor_refuses_batches() -> None:
    executor = TorchExecutor("mlp", device="cpu")
    executor.close()
    executor.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await executor.run_batch([[0.0] * 512])


async def test_warm_up_is_not_counted(mlp) -> None:
    await mlp.warm_up(batch_size=2)
    assert mlp.batches_run == 0 and mlp.last_timing is None and mlp.busy_s == 0.0


def test_devices_and_arguments_are_validated() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert TorchExecutor("mlp", device="auto").device.type == expected
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="valid names"):
        TorchExecutor("nope", device="cpu")
    with pytest.raises(ValueError, match="pad_to_s"):
        TorchExecutor("mlp", device="cpu", pad_to_s=-1.0)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
            TorchExecutor("mlp", device="cuda")
