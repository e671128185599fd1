"""Front-end shedding: the pure lag rule, and the lag monitor on a real (wall-clock) loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from targets.server_overload import LagGuard, LoopLag


@pytest.mark.parametrize("lag_s, expected", [
    (0.0, None),        # an idle loop admits
    (0.025, None),      # at the limit: admit (strictly over sheds)
    (0.026, 0.05),      # just over: shed, ask back after the floor
    (0.4, 0.4),         # far behind: ask back after the lag itself
])
def test_guard_sheds_only_over_its_limit(lag_s: float, expected: float | None) -> None:
    assert LagGuard(0.025, retry_after_s=0.05).decide(lag_s) == expected


def test_one_late_tick_is_a_hiccup_a_run_of_them_is_a_backlog() -> None:
    lag = LoopLag(window=3)
    for late in (0.0, 0.2, 0.0):          # descheduled once: no sustained lag
        lag.observe(late)
    assert lag.lag_s == 0.0 and lag.peak_s == 0.2
    for late in (0.04, 0.05, 0.03):       # every tick late: a backlog of ready work
        lag.observe(late)
    assert lag.lag_s == 0.03
    lag.observe(0.0)                      # and it clears as soon as a tick is on time
    assert lag.lag_s == 0.0


@pytest.mark.live
def test_monitor_sees_a_blocked_loop() -> None:
    async def main() -> float:
        lag = LoopLag(tick_s=0.005)
        lag.start()
        await asyncio.sleep(0.05)
        time.sleep(0.1)          # block the loop: the next tick fires ~100 ms late
        await asyncio.sleep(0.02)
        lag.stop()
        return lag.peak_s

    assert asyncio.run(main()) >= 0.08
