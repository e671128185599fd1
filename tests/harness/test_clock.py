import asyncio
import socket
import time

import pytest

from harness.engine.clock import SimulationError, SimulationStalled, VirtualTimeLoop, run_virtual


def test_sleep_advances_virtual_time_exactly_and_costs_no_wall_time():
    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.sleep(3600)
        return loop.time() - t0

    wall = time.perf_counter()
    assert run_virtual(main()) == 3600
    assert time.perf_counter() - wall < 1.0


def test_timers_fire_in_time_order_with_exact_log():
    log = []

    async def worker(name, delay):
        await asyncio.sleep(delay)
        log.append((name, asyncio.get_running_loop().time()))

    async def main():
        await asyncio.gather(worker("c", 0.3), worker("a", 0.1), worker("b", 0.2))

    run_virtual(main())
    assert log == [("a", 0.1), ("b", 0.2), ("c", 0.3)]


def test_stall_is_loud():
    async def main():
        await asyncio.get_running_loop().create_future()  # nobody resolves it

    with pytest.raises(SimulationStalled, match="stalled at t="):
        run_virtual(main())


def test_queue_nobody_feeds_stalls():
    async def main():
        await asyncio.sleep(2)
        await asyncio.Queue().get()

    with pytest.raises(SimulationStalled, match="t=2.0"):
        run_virtual(main())


@pytest.mark.parametrize(
    "op",
    [
        lambda loop: loop.run_in_executor(None, time.sleep, 0),
        lambda loop: asyncio.to_thread(time.sleep, 0),
        lambda loop: loop.create_connection(asyncio.Protocol, "127.0.0.1", 9),
        lambda loop: loop.getaddrinfo("localhost", 80),
        lambda loop: asyncio.create_subprocess_exec("true"),
    ],
)
def test_threads_sockets_processes_are_forbidden(op):
    async def main():
        loop = asyncio.get_running_loop()
        result = op(loop)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            await result

    with pytest.raises(SimulationError, match="not allowed in sim mode"):
        run_virtual(main())


def test_add_reader_forbidden():
    loop = VirtualTimeLoop()
    a, b = socket.socketpair()
    try:
        with pytest.raises(SimulationError):
            loop.add_reader(a.fileno(), lambda: None)
    finally:
        a.close()
        b.close()
        loop.close()


def test_pending_tasks_are_cancelled_at_the_end():
    cancelled = []

    async def forever():
        try:
            await asyncio.sleep(1e9)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main():
        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(1)
        return "done"

    assert run_virtual(main()) == "done"
    assert cancelled == [True]


def test_feed_runs_among_timers_as_a_call_at_made_then_would():
    """The feed slot keeps call_at's order: equal times run in the order scheduled,
    and times within the clock's resolution run in one iteration, in (time, seq) order."""
    log = []

    async def main():
        loop = asyncio.get_running_loop()
        loop.call_at(1.0, log.append, "timer before")
        loop.feed_at(1.0, lambda: log.append(("feed", loop.time())))
        loop.call_at(1.0, log.append, "timer after")
        loop.call_at(2.0 + 5e-10, log.append, "timer within resolution")
        await asyncio.sleep(1.5)
        loop.feed_at(2.0, lambda: log.append(("feed", loop.time())))
        loop.call_at(3.0, log.append, "last")
        await asyncio.sleep(2.0)

    run_virtual(main())
    assert log == ["timer before", ("feed", 1.0), "timer after", ("feed", 2.0), "timer within resolution", "last"]


def test_a_pending_feed_keeps_the_loop_from_stalling():
    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        loop.feed_at(5.0, lambda: done.set_result(loop.time()))
        return await done

    assert run_virtual(main()) == 5.0


def test_fewer_collections_restores_the_thresholds():
    import gc

    from harness.engine.collector import SIM_GC_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(SIM_GC_THRESHOLD, before[0])
    assert gc.get_threshold() == before
