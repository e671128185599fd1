"""`--driver-procs N --driver-executor ray`: a run's conversations over N Ray actors, merged exactly.

The same split as `procs` (share i of N of the plan, built where it is driven; the parts merged by
`procs.merge_parts`), with Ray actors in place of spawned processes, so the shares can sit on other
machines of a cluster: load past what one machine's driver keeps on time. The cluster is the one at
RAY_ADDRESS, else a new local instance with a CPU per share (`harness.engine.ray_jobs`, the sim's
`--executor ray`: a joined cluster gets this project as its working_dir). Each actor takes one CPU.

One start for all: the parent gives a wall-clock instant (`time.time()`, START_AHEAD_S after the last
actor said it was ready) and each actor turns it into its own monotonic clock's reading; every time
a part carries is relative to that start, so parts from several machines merge as from one. On one
machine that is exact; across machines it is as good as their clocks agree (NTP: a millisecond or
so), which moves when requests start, not what their latencies read (each is timed on one clock).

Bounds as in `procs`: an actor not ready within START_TIMEOUT_S or not done by `duration_s` + 2
`timeout_s` + DONE_SLACK_S after the start, or one that fails, fails the run (`run.ProbeFailed`
naming the actor), and every actor is killed on the way out. Ray is an optional extra
(`pip install -e '.[ray]'`); only `send_traffic` imports this module, and only when asked.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError

from harness.engine.ray_jobs import connect
from harness.live.openai.load import check_procs
from harness.live.openai.procs import (DONE_SLACK_S, START_AHEAD_S, START_TIMEOUT_S, ChildSpec, Part, drive_share,
                                       merge_parts, plan_share)
from harness.live.openai.run import Prepared, ProbeFailed
from harness.live.openai.sessions import SessionsDriven
from harness.live.openai.target import UrlTarget

__all__ = ["drive_over_ray"]


@ray.remote(num_cpus=1)
class ShareDriver:
    """One share of the run: planned when made, driven from the start it is given."""

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.plan = plan_share(spec)

    def ready(self) -> int:
        return self.spec.index

    def drive(self, start_wall_s: float) -> Part:
        start_at = time.monotonic() + (start_wall_s - time.time())   # the start on this machine's clock
        return drive_share(self.spec, self.plan, start_at)


def _get(refs: list[Any], what: str, timeout_s: float) -> list[Any]:
    """`ray.get` of one ref per actor within `timeout_s`; ProbeFailed naming the first actor that failed."""
    try:
        return list(ray.get(refs, timeout=timeout_s))
    except GetTimeoutError:
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        raise ProbeFailed(f"{len(refs) - len(done)} driver actor(s) not {what} after {timeout_s:g} s") from None
    except RayError as exc:
        for i, ref in enumerate(refs):
            try:
                ray.get(ref, timeout=0)
            except RayError as one:
                cause = getattr(one, "cause", None) or one
                raise ProbeFailed(f"driver actor {i}: {type(cause).__name__}: {str(cause).splitlines()[-1]}") from None
            except GetTimeoutError:
                continue
        raise ProbeFailed(f"a driver actor failed: {type(exc).__name__}") from None


async def drive_over_ray(target: UrlTarget, prepared: Prepared, traffic: Any, mix: str, duration_s: float,
                         seed: int, timeout_s: float, procs: int) -> SessionsDriven:
    """The run's traffic over `procs` Ray actors (see the module doc); LoadError when its users or slots
    are fewer than `procs`."""
    check_procs(traffic.load, procs)
    connect(procs, None)
    bare = replace(prepared, tokenizer=None)
    actors = [ShareDriver.remote(ChildSpec(i, procs, target, bare, traffic, mix, duration_s, seed, timeout_s))  # type: ignore[attr-defined]
              for i in range(procs)]
    try:
        await asyncio.to_thread(_get, [a.ready.remote() for a in actors], "ready", START_TIMEOUT_S)
        start_wall = time.time() + START_AHEAD_S
        t0 = time.monotonic() + START_AHEAD_S
        parts = await asyncio.to_thread(_get, [a.drive.remote(start_wall) for a in actors], "done",
                                        START_AHEAD_S + duration_s + 2 * timeout_s + DONE_SLACK_S)
    finally:
        for a in actors:
            ray.kill(a)
    return merge_parts(parts, duration_s, t0)
