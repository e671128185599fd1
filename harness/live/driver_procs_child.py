"""One process of `--driver-procs N`: its share of the schedule, driven as the 1-process driver drives it.

Started by harness.live.driver_procs_pool with multiprocessing's spawn (a fresh
interpreter: nothing of the parent's event loop, sockets or threads). It
builds each phase's schedule itself from the same workload and seed as the
parent (`build_schedule` is deterministic), keeps its units' requests
(harness.live.driver_procs.share_uids), opens its units' connections and then
answers the parent over one duplex pipe:

  parent -> child   ("drive", phase, t0, rid_prefix, seed)   drive that phase's share from loop time t0
                    ("stop",)                           end the drive now (the run was interrupted)
                    ("close",) or end of pipe           exit
  child -> parent   ("ready", info)                     connections open (or failed), before any drive
                    ("records", finishes, attempts)     what the sink saw, every FLUSH_S while driving
                    ("done", figures)                   the share has its final answers, or was stopped

`finishes` are the Recorder.finish calls (uid, status, done_s, tries) and
`attempts` its attempt calls (status, sent_s, latency_s), loop times on
time.monotonic (one clock for every process of the machine), which the parent
replays into the run's one Recorder. `figures` are the transport's stats, its
send-lag and write-lag HdrHistograms encoded, and the process's CPU seconds
over the drive. Each process takes the realtime class where it may
(harness.live.driver_loop.driver_priority) and gives it up when saturated. SIGINT is ignored: a Ctrl-C reaches the whole process group,
and the parent decides when the drive ends.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from harness.engine.driver import Driver
from harness.live.driver_loop import RealtimeGuard, driver_priority, new_loop, quiet_gc
from harness.live.driver_procs import Unit, share_uids, unit_connections
from harness.live.fd_limit import raise_fd_limit
from harness.live.http_transport import HttpTransport
from harness.live.payloads import Payloads
from targets.client import ClientPolicy
from harness.live.warmup import warmup_schedule
from workloads.arrivals import Schedule, build_schedule
from workloads.model import WorkloadConfig

__all__ = ["ChildSpec", "child_main"]

FLUSH_S = 0.1   # how often records go to the parent while driving


@dataclass(frozen=True)
class ChildSpec:
    """What one driver process needs; `phases`: name -> (workload, seed) of each schedule
    it may be asked to drive."""

    index: int
    units: tuple[Unit, ...]
    host: str
    port: int
    path: str
    payloads: Payloads
    policy: ClientPolicy
    phases: dict[str, tuple[WorkloadConfig, int]]


class _Stream:
    """The sink of this process's Client: every call kept as a tuple until sent."""

    def __init__(self) -> None:
        self.finishes: list[tuple[int, Any, float, int]] = []
        self.attempts: list[tuple[Any, float, float]] = []

    def attempt(self, status: Any, sent_s: float, latency_s: float) -> None:
        self.attempts.append((status, sent_s, latency_s))

    def finish(self, index: int, status: Any, done_s: float, tries: int) -> None:
        self.finishes.append((index, status, done_s, tries))

    def flush(self, pipe: Connection) -> None:
        if self.finishes or self.attempts:
            pipe.send(("records", self.finishes, self.attempts))
            self.finishes, self.attempts = [], []


def _share(schedule: Schedule, units: tuple[Unit, ...]) -> tuple[Schedule, list[int]]:
    uids = share_uids(schedule, units)
    part = replace(schedule, sched_s=schedule.sched_s[uids], tenant=schedule.tenant[uids],
                   content=schedule.content[uids], variant=schedule.variant[uids], size=schedule.size[uids])
    return part, uids.tolist()


def child_main(pipe: Connection, spec: ChildSpec) -> None:
    """The process's entry point (multiprocessing target)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise_fd_limit()
    with driver_priority() as priority, asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(_serve(pipe, spec, priority))


async def _serve(pipe: Connection, spec: ChildSpec, priority: str) -> None:
    loop = asyncio.get_running_loop()
    schedules = {name: (warmup_schedule if name == "warmup" else build_schedule)(wl, seed)
                 for name, (wl, seed) in spec.phases.items()}
    shares = {name: _share(s, spec.units) for name, s in schedules.items()}
    inbox: asyncio.Queue = asyncio.Queue()

    def readable() -> None:
        try:
            inbox.put_nowait(pipe.recv())
        except (EOFError, OSError):
            loop.remove_reader(pipe.fileno())
            inbox.put_nowait(("close",))

    tr = HttpTransport(spec.host, spec.port, spec.path, spec.payloads)
    any_phase = next(iter(schedules.values()))
    with quiet_gc():  # collected and frozen here, long before any drive's clock starts
        await tr.open(unit_connections(any_phase, spec.units))
        pipe.send(("ready", {"pid": os.getpid(), "open": tr.open_now, "connect_failures": tr.connect_failures,
                             "first_error": tr.first_connection_error,
                             "requests": {name: len(uids) for name, (_, uids) in shares.items()}}))
        loop.add_reader(pipe.fileno(), readable)
        guard = RealtimeGuard(loop)  # the parent's priority is inherited; a saturated process gives it up
        try:
            while (msg := await inbox.get())[0] != "close":
                if msg[0] == "drive":
                    _, phase, t0, prefix, seed = msg
                    part, uids = shares[phase]
                    rng = random.Random(seed * 1_000_003 + spec.index)  # one retry-jitter stream per process
                    figures = await _drive(tr, part, uids, schedules[phase], spec, t0, prefix, rng, inbox, pipe)
                    pipe.send(("done", {**figures, "priority": priority, "priority_dropped": guard.dropped}))
        finally:
            guard.cancel()
            tr.close()


async def _drive(tr: HttpTransport, part: Schedule, uids: list[int], whole: Schedule, spec: ChildSpec,
                 t0: float, prefix: str, rng: random.Random, inbox: asyncio.Queue, pipe: Connection
                 ) -> dict[str, Any]:
    """Drive one share to its last answer, or until the parent says stop; its figures."""
    loop = asyncio.get_running_loop()
    stream = _Stream()
    tr.rid_prefix = prefix
    tr.begin(t0, whole.sched_s.tolist())
    cpu0, wall0 = time.process_time(), loop.time()
    driving = loop.create_task(Driver(part, spec.policy, tr, stream, rng, uids=uids).run(t0=t0))
    stopped = False

    async def flusher() -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            stream.flush(pipe)

    flushing = loop.create_task(flusher())
    try:
        while not driving.done():
            listen = loop.create_task(inbox.get())
            await asyncio.wait({driving, listen}, return_when=asyncio.FIRST_COMPLETED)
            if listen.done():
                if listen.result()[0] in ("stop", "close"):
                    stopped = True
                    driving.cancel()
                    if listen.result()[0] == "close":
                        inbox.put_nowait(("close",))
            else:
                listen.cancel()
    finally:
        flushing.cancel()
        if not driving.done():
            driving.cancel()
    stream.flush(pipe)
    figures = {**tr.stats(), "lag_hdr": tr.lag_hist.encode(), "write_hdr": tr.write_hist.encode(),
               "index": spec.index, "pid": os.getpid(), "requests": len(uids), "stopped": stopped,
               "cpu_s": time.process_time() - cpu0, "drive_s": max(0.0, loop.time() - max(t0, wall0))}
    tr.rid_prefix = ""
    tr.reset_stats()
    return figures
