"""A bad day's faults, played on a live host at their times: GPUs down and back, a slowdown and its end.

Each fault is one task of the run (harness.live.run.LiveRun): it sleeps to its time on
the run's clock, asks the host (harness.live.host_process.HostProcess) to kill, revive or
slow its GPU workers, and records each step in the run's events. A fault the host cannot
carry out is an event too ("fault-failed"), never the run's end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from workloads.model import FaultKind

__all__ = ["inject_fault"]


async def inject_fault(host: Any, f: Any, t0: float, events: list[dict[str, Any]]) -> None:
    """Play fault ``f`` (a workloads.model fault) on ``host`` from ``t0 + f.at_s``, recording in ``events``."""
    try:
        await _play(host, f, t0, events)
    except (RuntimeError, OSError, asyncio.TimeoutError, ValueError) as exc:
        events.append({"t_s": asyncio.get_running_loop().time() - t0, "event": "fault-failed", "reason": str(exc)})


async def _play(host: Any, f: Any, t0: float, events: list[dict[str, Any]]) -> None:
    loop = asyncio.get_running_loop()
    assert host is not None  # faults only on a host this run started (no url)
    await asyncio.sleep(max(0.0, t0 + f.at_s - loop.time()))
    if f.kind is FaultKind.GPU_DOWN:
        down = (await host.request("kill", fraction=f.fraction))["gpus"]
        events.append({"t_s": loop.time() - t0, "event": "gpu-down", "gpus": len(down)})
        await asyncio.sleep(f.duration_s)
        await host.request("revive", gpus=down)
        events.append({"t_s": loop.time() - t0, "event": "gpu-up", "gpus": len(down)})
    else:
        await host.request("slowdown", factor=f.factor)
        events.append({"t_s": loop.time() - t0, "event": "slowdown", "factor": f.factor})
        await asyncio.sleep(f.duration_s)
        await host.request("slowdown", factor=1.0)
        events.append({"t_s": loop.time() - t0, "event": "slowdown-end"})
