"""Components on the virtual clock, with exact event logs."""

from __future__ import annotations

import asyncio
import random

from harness.engine.clock import run_virtual
from targets.balancer import L4RoundRobin, LeastLoaded, PowerOfTwo
from targets.batcher import Batcher, BatchPolicy
from targets.config import Batching
from targets.delayline import DelayLine, DelayLines
from targets.executors import ModeledExecutor
from targets.gpu_pool import GpuPool
from targets.protocol import Attempt, DeadlineCheck, Response, Status
from targets.queues import FifoQueue


def att(uid: int) -> Attempt:
    return Attempt(uid=uid, tenant="t", conn=0, content=uid, variant=0, size=64, sent_s=0.0,
                   attempt_no=0, on_answer=lambda r: None)


def _run(policy: BatchPolicy, arrivals: list[float], gpus: int = 1, pull: bool = False):
    log = []

    async def main():
        loop = asyncio.get_running_loop()
        done = lambda batch, out, secs: log.append((round(loop.time(), 6), [a.uid for a in batch]))
        pool = GpuPool(gpus, lambda i: ModeledExecutor(lambda b, L: 0.1), on_done=done)
        batcher = Batcher(FifoQueue(), policy, pool, pull=pull)
        for uid, t in enumerate(arrivals):
            loop.call_at(t, batcher.enqueue, att(uid))
        await asyncio.sleep(10)

    run_virtual(main())
    return log


def test_full_batch_only_dispatches_exactly_at_b_and_strands_the_rest():
    log = _run(BatchPolicy(Batching.FULL, 3), [0.0, 0.01, 0.02, 0.03, 0.04])
    assert log == [(0.12, [0, 1, 2])]  # requests 3 and 4 wait forever


def test_dynamic_flushes_a_partial_batch_after_max_wait():
    log = _run(BatchPolicy(Batching.DYNAMIC, 3, max_wait_s=0.05), [0.0, 0.01, 0.02, 0.03, 0.04], pull=True)
    # B reached at 0.02 -> run 0.02..0.12; 3 and 4 wait for the GPU, then go together
    assert log == [(0.12, [0, 1, 2]), (0.22, [3, 4])]


def test_dynamic_timer_fires_for_a_lonely_request():
    log = _run(BatchPolicy(Batching.DYNAMIC, 8, max_wait_s=0.05), [1.0], pull=True)
    assert log == [(1.15, [0])]


def test_greedy_takes_whatever_is_queued_when_a_gpu_frees():
    log = _run(BatchPolicy(Batching.GREEDY, 8), [0.0, 0.01, 0.02, 0.05], pull=True)
    assert log == [(0.1, [0]), (0.2, [1, 2, 3])]


def test_pushed_batches_wait_in_the_pool_backlog_fifo():
    # (asyncio runs timers due at the same instant in heap order, not FIFO:
    # distinct arrival times keep this log exact.)
    log = _run(BatchPolicy(Batching.FULL, 1), [0.0, 0.001, 0.002], gpus=2)
    assert log == [(0.1, [0]), (0.101, [1]), (0.2, [2])]


def test_l4_round_robin_pins_connections_not_requests():
    lb = L4RoundRobin(servers=4)
    # tenant 'big' has 2 connections and sends 90 requests; 'small' 4 connections, 10 requests
    hits = [0] * 4
    for i in range(90):
        hits[lb.route("big", i % 2)] += 1
    for i in range(10):
        hits[lb.route("small", i % 4)] += 1
    assert sorted(hits, reverse=True)[:2] == [47, 47] or max(hits) >= 45
    assert lb.connections_per_server() == [2, 2, 1, 1]


def test_l7_policies_pick_the_least_loaded():
    assert LeastLoaded(3).route("t", 0, [5, 1, 3]) == 1
    p2c = PowerOfTwo(4, random.Random(1))
    loads = [0, 10, 10, 10]
    picks = [p2c.route("t", 0, loads) for _ in range(200)]
    assert picks.count(0) > 80  # chosen whenever it is one of the two drawn
    assert all(loads[p] <= 10 for p in picks)


def test_pool_kill_loses_in_flight_without_failure_handling_and_redispatches_with_it():
    for handling in (False, True):
        lost, rerun, done = [], [], []

        async def main():
            loop = asyncio.get_running_loop()
            pool = GpuPool(2, lambda i: ModeledExecutor(lambda b, L: 0.1),
                           on_done=lambda b, o, s: done.append([a.uid for a in b]),
                           failure_handling=handling, redispatch=lambda b: (rerun.append([a.uid for a in b]), pool.submit(b)),
                           on_lost=lambda a: lost.append(a.uid))
            pool.submit([att(0), att(1)])
            pool.submit([att(2)])
            loop.call_at(0.05, pool.kill, 1)
            await asyncio.sleep(1)

        run_virtual(main())
        if handling:
            assert lost == [] and rerun == [[0, 1]] and sorted(done) == [[0, 1], [2]]
        else:
            assert lost == [0, 1] and done == [[2]]


def test_adaptive_is_greedy_only_while_gpus_are_spare_also_in_push_mode():
    policy = BatchPolicy(Batching.ADAPTIVE, 4, max_wait_s=0.05, reserve_gpus=1)
    assert policy.decide(2, 0.0, gpu_free=True, free_gpus=3).take == 2       # plenty spare: go now
    assert policy.decide(2, 0.0, gpu_free=True, free_gpus=1).take == 0       # at the reserve: wait
    assert policy.decide(4, 0.0, gpu_free=True, free_gpus=0).take == 4       # push mode, full batch
    # push mode (per-server queues) with both GPUs busy: batches stay full
    log = _run(BatchPolicy(Batching.ADAPTIVE, 3, max_wait_s=0.05, reserve_gpus=0),
               [0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007], gpus=2, pull=False)
    assert [len(b) for _, b in log][:2] == [1, 1]  # the two idle GPUs take the first arrivals
    assert all(len(b) == 3 for _, b in log[2:4])   # then full batches while both are busy


def test_parked_batches_drop_expired_requests_before_they_reach_a_gpu():
    ran, dropped = [], []

    async def main():
        loop = asyncio.get_running_loop()
        pool = GpuPool(1, lambda i: ModeledExecutor(lambda b, L: 0.1),
                       on_done=lambda b, o, s: ran.append([a.uid for a in b]),
                       expired=DeadlineCheck(0.1),
                       on_drop=lambda a: dropped.append(a.uid))
        first, late, fine = att(0), att(1), att(2)
        late.deadline_s = 0.15   # would finish at 0.2: useless by then
        fine.deadline_s = 0.5
        pool.submit([first])
        pool.submit([late, fine])  # parked behind the first batch
        await asyncio.sleep(1)

    run_virtual(main())
    assert ran == [[0], [2]] and dropped == [1]


def _delay_log(pushes: list[tuple[float, int]], answered: dict[int, float], **line_kw) -> list[tuple[float, int]]:
    """(time, uid) of each `on_due` of one 0.1 s line; `pushes`: (time, uid); `answered`: uid -> time."""
    log: list[tuple[float, int]] = []

    async def main():
        loop = asyncio.get_running_loop()
        line = DelayLine(0.1, lambda a: log.append((round(loop.time(), 6), a.uid)), loop, **line_kw)
        attempts = {uid: att(uid) for _, uid in pushes}
        for t, uid in pushes:
            loop.call_at(t, line.push, attempts[uid])
        for uid, t in answered.items():
            loop.call_at(t, attempts[uid].answer, Response(Status.OK))
        await asyncio.sleep(10)

    run_virtual(main())
    return log


def test_a_delay_line_hands_each_attempt_on_its_delay_later_in_push_order():
    log = _delay_log([(0.0, 0), (0.02, 1), (0.02, 2), (0.5, 3)], {1: 0.05})
    assert log == [(0.1, 0), (0.12, 1), (0.12, 2), (0.6, 3)]  # an answered attempt still goes (a cache hop)


def test_a_timeout_line_skips_answered_attempts_and_groups_within_its_resolution():
    log = _delay_log([(0.0, 0), (0.0005, 1), (0.002, 2), (0.003, 3)], {2: 0.05},
                     resolution_s=0.001, pending_only=True)
    # 0 due at 0.1; 1 due at 0.1005, but the line wakes no sooner than 1 ms after its last
    # wake: 0.101; 2 was answered before its timeout (skipped, no call); 3 at 0.103
    assert log == [(0.1, 0), (0.101, 1), (0.103, 3)]


def test_a_timeout_line_lets_go_of_each_attempt_at_its_answer():
    # 3,000 attempts a millisecond apart on a line of 1 s timeouts, all answered 50 ms after they
    # are sent but every 100th: the line holds only those still waiting, across its drop of the
    # consumed front (at 2.024 s: 1,025 slots, while 1,975-2,024 wait for answers) and a
    # clear, and times out exactly them.
    log: list[int] = []
    held: list[tuple[float, int]] = []

    async def main():
        loop = asyncio.get_running_loop()
        line = DelayLine(1.0, lambda a: log.append(a.uid), loop, pending_only=True)
        for uid in range(3000):
            a = att(uid)
            loop.call_at(uid / 1000, line.push, a)
            if uid % 100:
                loop.call_at(uid / 1000 + 0.05, a.answer, Response(Status.OK))
        for t in (0.5005, 2.1005, 3.5005):
            loop.call_at(t, lambda t=t: held.append((t, line.held())))
        await asyncio.sleep(4.5)
        early, late = att(-1), att(-2)
        line.push(early)
        line.clear()
        line.push(late)
        early.answer(Response(Status.OK))  # pushed before the clear: its place is not `late`'s
        held.append((4.5, line.held()))
        await asyncio.sleep(2)

    run_virtual(main())
    # 0-500 sent, 451-500 and 5 of the 100ths waiting; 0-2,100 sent, 0-1,100 timed out, 2,051-2,100
    # and 9 of the 100ths waiting; 0-2,999 sent and answered, 0-2,500 timed out
    assert held == [(0.5005, 55), (2.1005, 59), (3.5005, 4), (4.5, 1)]
    assert log == [uid for uid in range(3000) if uid % 100 == 0] + [-2]


def test_delay_lines_make_one_line_per_delay_on_first_use():
    log: list[tuple[float, int]] = []

    async def main():
        loop = asyncio.get_running_loop()
        lines = DelayLines(lambda a: log.append((round(loop.time(), 6), a.uid)), loop)
        lines.push(0.3, att(0))
        lines.push(0.1, att(1))
        lines.push(0.3, att(2))
        await asyncio.sleep(1)
        lines.push(0.1, att(3))
        lines.clear()  # forgotten: never due
        await asyncio.sleep(1)

    run_virtual(main())
    assert log == [(0.1, 1), (0.3, 0), (0.3, 2)]
