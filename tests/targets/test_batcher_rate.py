"""The rate-aware batching policy: its measurement, its test, and the batcher
running it on the virtual clock (closed forms and hypothesis invariants)."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.engine.clock import run_virtual
from targets.batcher import Batcher, BatchPolicy
from targets.config import Batching
from targets.dispatch_policy import ArrivalRate, fill_wait_s, per_gpu_rps, worth_dispatching
from targets.executors import ModeledExecutor
from targets.gpu_pool import GpuPool
from targets.protocol import Attempt
from targets.queues import FifoQueue
from targets.slowness import Slowness

BATCH_S = 0.1


def att(uid: int) -> Attempt:
    return Attempt(uid=uid, tenant="t", conn=0, content=uid, variant=0, size=64, sent_s=0.0,
                   attempt_no=0, on_answer=lambda r: None)


def rate_policy(b: int, max_wait_s: float = 0.05, utilization: float = 0.9) -> BatchPolicy:
    return BatchPolicy(Batching.RATE, b, max_wait_s, per_gpu_rps=per_gpu_rps(lambda q: BATCH_S, b),
                       utilization=utilization, rate_horizon_s=BATCH_S)


# -- the arrival rate ---------------------------------------------------------------

def test_first_arrival_alone_reads_zero_then_even_arrivals_give_the_closed_form():
    meter, gap, h = ArrivalRate(0.1), 0.002, 0.1
    meter.observe(1.0)
    assert meter.rps(1.0) == 0.0
    n = 200
    for k in range(1, n):
        meter.observe(1.0 + k * gap)
    now = 1.0 + (n - 1) * gap
    # n arrivals `gap` apart: decayed count sum_k e^(-k gap/h), over the horizon seen
    count = -math.expm1(-n * gap / h) / -math.expm1(-gap / h)
    assert meter.rps(now) == pytest.approx(count / (h * -math.expm1(-(n - 1) * gap / h)), rel=1e-9)
    assert meter.rps(now) == pytest.approx(1 / gap, rel=0.05)   # 500/s, measured as about that


def test_a_lull_decays_the_rate_by_e_per_horizon():
    meter = ArrivalRate(0.1)
    for k in range(1000):
        meter.observe(k * 0.001)
    before = meter.rps(0.999)
    # long after the first arrival the warm-up correction is 1, so only the decay remains
    assert meter.rps(1.099) == pytest.approx(before * math.exp(-1), rel=1e-3)


@given(st.lists(st.floats(0, 0.05), min_size=1, max_size=50), st.floats(0.01, 1), st.floats(0, 1))
def test_rate_is_finite_non_negative_and_falls_in_silence(gaps, horizon, silence):
    meter, t = ArrivalRate(horizon), 0.0
    for g in gaps:
        t += g
        meter.observe(t)
    r = meter.rps(t)
    assert 0 <= r < math.inf
    if r > 0:  # (arrivals all at one instant say nothing of a rate yet: they read 0)
        assert meter.rps(t + silence) <= r * (1 + 1e-9)


# -- the test: is a partial batch of q affordable at this rate? ------------------------

@given(st.floats(1, 50_000), st.integers(1, 100), st.floats(0.3, 1), st.integers(1, 64))
def test_constant_cost_dispatches_exactly_from_rate_x_batch_time_over_fleet(rate, gpus, u, b):
    # closed form under a constant batch time T: q >= rate * T / (G * u)
    threshold = rate * BATCH_S / (gpus * u)
    table = per_gpu_rps(lambda q: BATCH_S, b)
    for q in range(1, b + 1):
        assume(abs(q - threshold) > 1e-6)
        assert worth_dispatching(q, rate, gpus, u, table) is (q > threshold)


def test_affine_cost_needs_bigger_batches_as_the_fixed_part_grows():
    # t(q) = t0 + k q: G u q / (t0 + k q) >= rate  <=>  q >= rate t0 / (G u - rate k)
    t0, k, g, u, rate = 0.02, 0.0025, 10, 1.0, 2000.0
    table = per_gpu_rps(lambda q: t0 + k * q, 32)
    smallest = next(q for q in range(1, 33) if worth_dispatching(q, rate, g, u, table))
    assert smallest == math.ceil(rate * t0 / (g * u - rate * k))  # 40 / 5 = 8


def test_policy_keeps_full_batches_on_a_tight_fleet_and_goes_at_once_when_quiet():
    p = rate_policy(32, utilization=0.9)
    # 10,000/s on 33 GPUs at 100 ms needs 30.3 per batch: at u=0.9 only B will do
    assert p.decide(31, 0.0, True, 1, rate_rps=10_000, gpus=33).take == 0
    assert p.decide(32, 0.0, True, 1, rate_rps=10_000, gpus=33).take == 32
    # 10,000/s on 41 GPUs needs 24.4 per batch: 28 is affordable at u=0.9, 27 is not
    assert p.decide(28, 0.0, True, 1, rate_rps=10_000, gpus=41).take == 28
    assert p.decide(27, 0.0, True, 1, rate_rps=10_000, gpus=41).take == 0
    # 20/s: one request is a batch worth sending
    assert p.decide(1, 0.0, True, 40, rate_rps=20, gpus=41).take == 1
    # no free GPU: wait for one; slack gone: send what is queued
    assert p.decide(31, 0.0, False, 0, rate_rps=20, gpus=41).take == 0
    assert p.decide(5, 0.05, True, 1, rate_rps=10_000, gpus=33).take == 5


def test_rate_policy_needs_its_table():
    with pytest.raises(ValueError, match="per_gpu_rps"):
        BatchPolicy(Batching.RATE, 8, 0.05)


# -- the batcher running it, on the virtual clock ------------------------------------------

def _constant(slowness: float) -> Slowness:
    """A slowdown that stays `slowness` (an infinite fading time)."""
    s = Slowness(tau_s=math.inf)
    s.level = slowness
    return s


def _run(policy: BatchPolicy, arrivals: list[float], gpus: int,
         slowness: float | None = None) -> list[tuple[float, list[int]]]:
    """(start time, uids) of every batch, in start order."""
    log: list[tuple[float, list[int]]] = []

    async def main():
        loop = asyncio.get_running_loop()
        done = lambda batch, out, secs: log.append((loop.time() - secs, [a.uid for a in batch]))
        pool = GpuPool(gpus, lambda i: ModeledExecutor(lambda b, L: BATCH_S), on_done=done)
        batcher = Batcher(FifoQueue(), policy, pool, pull=True,
                          slowness=None if slowness is None else _constant(slowness))
        for uid, t in enumerate(arrivals):
            loop.call_at(t, batcher.enqueue, att(uid))
        await asyncio.sleep(max(arrivals) + 10)

    run_virtual(main())
    return sorted(log)


# distinct times: asyncio runs timers due at one instant in heap order, not FIFO
arrival_times = st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=60, unique=True).map(sorted)


@settings(max_examples=25, deadline=None)
@given(arrival_times, st.integers(1, 16), st.integers(1, 6), st.floats(0.3, 1))
def test_batches_never_over_b_and_nothing_lost_or_duplicated(arrivals, b, gpus, u):
    log = _run(rate_policy(b, utilization=u), arrivals, gpus)
    uids = [uid for _, batch in log for uid in batch]
    assert all(1 <= len(batch) <= b for _, batch in log)
    assert sorted(uids) == list(range(len(arrivals)))   # each request exactly once
    assert uids == sorted(uids)                          # FIFO


@settings(max_examples=25, deadline=None)
@given(arrival_times, st.integers(1, 16), st.floats(0.3, 1))
def test_with_a_gpu_always_free_no_request_waits_past_max_wait(arrivals, b, u):
    max_wait = 0.05
    log = _run(rate_policy(b, max_wait_s=max_wait, utilization=u), arrivals, gpus=len(arrivals))
    for start, batch in log:
        assert all(start - arrivals[uid] <= max_wait + 1e-9 for uid in batch)


def test_the_first_request_goes_at_once_then_a_measured_peak_waits_for_full_batches():
    # 65 requests 0.1 ms apart on 2 GPUs. The first alone says nothing of the
    # rate, so it goes at once; the rest measure 10,000/s, at which 2 GPUs need
    # full batches: one fills at 3.2 ms, the next waits for the first GPU back.
    log = _run(rate_policy(32), [k * 1e-4 for k in range(65)], gpus=2)
    assert [(round(t, 6), len(b)) for t, b in log] == [(0.0, 1), (0.0032, 32), (0.1, 32)]


def test_a_measured_slowdown_makes_partial_batches_dearer():
    # 50/s on 8 GPUs at 100 ms: one request is worth a batch (50 * 0.1 / (8 * 0.9) = 0.7);
    # with batches taking twice as long the fleet is worth 4 GPUs, and a batch needs 2
    # (past the first 0.2 s, while the measured rate settles)
    arrivals = [k * 0.02 for k in range(60)]
    assert {len(b) for t, b in _run(rate_policy(8), arrivals, gpus=8) if t > 0.2} == {1}
    assert {len(b) for t, b in _run(rate_policy(8), arrivals, gpus=8, slowness=2.0) if t > 0.2} == {2}


# -- the fill wait admission predicts (admission_fill = rate) ----------------------

def test_fill_wait_is_the_time_to_the_size_the_policy_lets_go():
    # Constant 100 ms batches, 3 GPUs at u = 0.7, 250 req/s: a batch goes from q* = ceil(250 x 0.1 /
    # (3 x 0.7)) = 12; a newcomer to an empty queue waits for 11 more arrivals, 44 ms.
    table = per_gpu_rps(lambda q: BATCH_S, 32)
    assert fill_wait_s(1, 250.0, 3.0, 0.7, table, 0.1) == pytest.approx(11 / 250)
    assert fill_wait_s(12, 250.0, 3.0, 0.7, table, 0.1) == 0.0            # already worth a batch
    assert fill_wait_s(1, 0.0, 3.0, 0.7, table, 0.1) == 0.0               # no measured rate: at once
    assert fill_wait_s(1, 250.0, 0.0, 0.7, table, 0.1) == 0.1             # no GPU: the whole max wait
    # Half the fleet (a 2x slowdown): q* = 24; capped by the max wait at a low enough rate.
    assert fill_wait_s(1, 250.0, 1.5, 0.7, table, 0.1) == pytest.approx(23 / 250)
    assert fill_wait_s(1, 250.0, 1.5, 0.7, table, 0.05) == 0.05
    # A tight fleet: no partial batch is worth it, so the queue waits for B (or the max wait).
    assert fill_wait_s(1, 1000.0, 1.0, 0.7, table, 1.0) == pytest.approx(31 / 1000)
    # A GPU count so small that gpus x utilization underflows to 0 (hypothesis found 5e-324): no capacity.
    assert fill_wait_s(1, 1.0, 5e-324, 0.5, table, 1.0) == 1.0


@given(st.integers(1, 32), st.floats(0, 50_000), st.floats(0, 64), st.floats(0.3, 1), st.floats(0.001, 1))
def test_fill_wait_is_bounded_and_shrinks_as_the_queue_grows(queued, rate, gpus, u, cap):
    table = per_gpu_rps(lambda q: BATCH_S + 0.001 * q, 32)
    w = fill_wait_s(queued, rate, gpus, u, table, cap)
    assert 0.0 <= w <= cap
    if queued < 32:
        assert fill_wait_s(queued + 1, rate, gpus, u, table, cap) <= w + 1e-12
    if rate > 0 and gpus > 0 and w < cap and w > 0:
        # it is exactly the arrivals to the first size the policy's own test passes
        q = queued + round(w * rate)
        assert q == 32 or worth_dispatching(q, rate, gpus, u, table)
        assert q - 1 < queued or not worth_dispatching(q - 1, rate, gpus, u, table)
