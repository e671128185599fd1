"""Sim mode: one seeded run of a target under a workload, on virtual time."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Callable

from harness.engine.clock import run_virtual
from harness.engine.collector import fewer_collections
from harness.engine.driver import Driver
from harness.engine.recorder import Recorder
from harness.engine.summary import build_document
from harness.engine.transports import InProcessTransport
from harness.results.run import RunResult
from targets.client import ClientPolicy
from targets.config import TargetConfig
from targets.target import ServingTarget
from workloads.arrivals import Schedule, schedule_of
from workloads.model import FaultKind, WorkloadConfig

Progress = Callable[[dict[str, Any]], None]


def _seeds(seed: int) -> tuple[int, int, int]:
    """Independent streams for arrivals, the target and the clients."""
    ss = random.Random(seed)
    return seed, ss.randrange(2**31), ss.randrange(2**31)


class SimRun:
    """Holds a run's parts so an interrupted run can still be summarised."""

    def __init__(self, target: TargetConfig, workload: WorkloadConfig, seed: int, progress: Progress | None = None) -> None:
        self.config = target
        self.workload = workload
        self.seed = seed
        self.progress = progress
        _, self.target_seed, self.client_seed = _seeds(seed)
        self.schedule: Schedule = schedule_of(workload, seed)
        self.recorder = Recorder(
            self.schedule.sched_s, self.schedule.tenant, self.schedule.tenants,
            target.slo_s, workload.duration_s, workload.window_s,
        )
        self.target: ServingTarget | None = None
        self.transport: InProcessTransport | None = None
        self.events: list[dict[str, Any]] = []
        self.end_s = 0.0
        self.partial = False
        self.wall_s = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _main(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        target = self.target = ServingTarget(self.config, random.Random(self.target_seed))
        self._schedule_faults(loop, target)
        self._sample(loop, target)
        self.transport = InProcessTransport(target)
        driver = Driver(
            self.schedule, ClientPolicy.from_target(self.config), self.transport,
            self.recorder, random.Random(self.client_seed),
        )
        await driver.run(t0=0.0)
        self.end_s = loop.time()

    def _schedule_faults(self, loop: asyncio.AbstractEventLoop, target: ServingTarget) -> None:
        for f in self.workload.faults:
            if f.kind is FaultKind.GPU_DOWN:
                def down(f=f) -> None:
                    idx = target.kill_gpus(f.fraction)
                    self.events.append({"t_s": loop.time(), "event": "gpu-down", "gpus": len(idx)})
                    loop.call_later(f.duration_s, up, idx)

                def up(idx: list[int]) -> None:
                    target.revive_gpus(idx)
                    self.events.append({"t_s": loop.time(), "event": "gpu-up", "gpus": len(idx)})
                loop.call_at(f.at_s, down)
            else:
                def slow(f=f) -> None:
                    target.set_slowdown(f.factor)
                    self.events.append({"t_s": loop.time(), "event": "slowdown", "factor": f.factor})
                    loop.call_later(f.duration_s, normal)

                def normal() -> None:
                    target.set_slowdown(1.0)
                    self.events.append({"t_s": loop.time(), "event": "slowdown-end"})
                loop.call_at(f.at_s, slow)

    def _sample(self, loop: asyncio.AbstractEventLoop, target: ServingTarget) -> None:
        w = self.workload.window_s
        horizon = self.workload.duration_s + (self.config.client_retries + 1) * self.config.client_timeout_s * 4 + 10

        def tick() -> None:
            now = loop.time()
            rec = self.recorder
            rec.sample(now, target.queue_depth(), target.pool.busy_gpu_seconds(), target.pool.alive_gpus())
            if self.progress is not None:
                self.progress({"t_s": now, "duration_s": self.workload.duration_s, "finished": rec.finished,
                               "attempts": rec.attempts, "queue_depth": target.queue_depth(),
                               "unique": len(self.schedule)})
            if now + w <= horizon:
                loop.call_at(now + w, tick)

        loop.call_at(w, tick)

    def run(self) -> RunResult:
        # The collector stays held off until the target has let go of what is left at the
        # horizon: restored earlier, its first young pass would walk every request still
        # parked in an overloaded backlog (a tenth of an overloaded naive run's CPU).
        with fewer_collections():
            started = time.perf_counter()
            try:
                run_virtual(self._main())
            except KeyboardInterrupt:
                # The figures then cover the requests scheduled before this instant.
                self.partial = True
                self.end_s = self._loop.time() if self._loop is not None else 0.0
                if self._loop is not None:  # the task it passed through must not log it again
                    self._loop.set_exception_handler(_quiet_about_interrupts)
            self.wall_s = time.perf_counter() - started
            result = self.document()
            # What is left at the horizon (requests parked in an overloaded backlog, pending
            # timeouts) is freed now by reference counting: left in the target's reference
            # cycles, it would cost a collection that walks every one of them, seconds after
            # an overloaded run.
            if self.target is not None:
                self.target.clear()
            if self.transport is not None:
                self.transport.clear()
        return result

    def document(self) -> RunResult:
        snap = self.target.snapshot() if self.target is not None else None
        return build_document(
            self.recorder, self.config, self.workload, snap, self.seed, "sim",
            self.end_s, self.wall_s, self.partial, self.events,
        )


def _quiet_about_interrupts(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An interrupted run's loop handler: the KeyboardInterrupt a task ended with was handled
    (the run is summarised as partial), so 'Task exception was never retrieved' is not said;
    anything else is reported as usual."""
    if not isinstance(context.get("exception"), KeyboardInterrupt):
        loop.default_exception_handler(context)


def run_sim(target: TargetConfig, workload: WorkloadConfig, seed: int = 1, progress: Progress | None = None) -> RunResult:
    """One seeded sim run; returns its result (not yet written)."""
    return SimRun(target, workload, seed, progress).run()
