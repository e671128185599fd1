"""The parent's side of `--driver-procs N`: start the driver processes, drive phases, merge what they saw.

A `DriverPool` spawns N processes (harness.live.driver_procs_child), each
with its units of the split (harness.live.driver_procs.split_units) and the
phases it may drive (the warm-up and the run). `drive(phase, t0, recorder,
...)` starts every process on the same scheduled clock (loop time t0 on
time.monotonic, which every process of the machine shares), replays the
records they stream into the run's one Recorder as they come (so a sweep's
early stop and the progress bar see the run as it goes), and returns when
every process has sent its figures. Cancelled (Ctrl-C, SIGTERM, a sweep step
that has certainly failed), it tells every process to stop and still collects
their figures. `stats()` merges the last drive's transport figures exactly
(harness.live.driver_procs.merge_transport_stats); `processes()` gives each
process's own send lag, CPU and whether it fell behind.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from harness.engine.recorder import Recorder
from harness.live.driver_procs import merge_histograms, merge_transport_stats, split_units
from harness.live.driver_procs_child import ChildSpec, child_main
from harness.live.http_transport import lag_figures
from harness.live.payloads import Payloads
from targets.client import ClientPolicy
from workloads.arrivals import Schedule
from workloads.model import WorkloadConfig

__all__ = ["DriverPool"]

START_TIMEOUT_S = 120.0   # a spawned interpreter imports the driver; slow on a loaded 2-core machine
STOP_TIMEOUT_S = 10.0


class DriverPool:
    """N driver processes for one live run (see the module docstring)."""

    def __init__(self, procs: int, host: str, port: int, path: str, payloads: Payloads, policy: ClientPolicy,
                 phases: dict[str, tuple[WorkloadConfig, int]], split_by: Schedule) -> None:
        self.units = split_units(split_by, procs)
        self.specs = [ChildSpec(i, tuple(u), host, port, path, payloads, policy, phases)
                      for i, u in enumerate(self.units)]
        self._procs: list[BaseProcess] = []  # spawn context's processes
        self._pipes: list[Connection] = []
        self._inbox: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.ready: list[dict[str, Any]] = []
        self.figures: list[dict[str, Any]] = []   # the last drive's, one per process

    @property
    def size(self) -> int:
        return len(self.specs)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn the processes and wait until each has opened its connections."""
        loop = self._loop = asyncio.get_running_loop()
        ctx = multiprocessing.get_context("spawn")
        inbox = self._inbox = asyncio.Queue()
        for spec in self.specs:
            mine, theirs = ctx.Pipe(duplex=True)
            proc = ctx.Process(target=child_main, args=(theirs, spec), name=f"harness-driver-{spec.index}",
                               daemon=True)
            proc.start()
            theirs.close()
            self._procs.append(proc)
            self._pipes.append(mine)
            loop.add_reader(mine.fileno(), self._readable, spec.index, mine, inbox)
        ready: dict[int, dict[str, Any]] = {}
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while len(ready) < self.size:
                    index, msg = await inbox.get()
                    if msg[0] == "exit":
                        raise RuntimeError(f"driver process {index} exited before it was ready")
                    if msg[0] == "ready":
                        ready[index] = msg[1]
        except TimeoutError:
            raise RuntimeError(f"{self.size - len(ready)} driver process(es) not ready after "
                               f"{START_TIMEOUT_S:g} s") from None
        self.ready = [ready[i] for i in range(self.size)]

    def _readable(self, index: int, pipe: Connection, inbox: asyncio.Queue) -> None:
        try:
            inbox.put_nowait((index, pipe.recv()))
        except (EOFError, OSError):
            self._loop.remove_reader(pipe.fileno())  # type: ignore[union-attr]  # start() set it, then the reader
            inbox.put_nowait((index, ("exit",)))

    def close(self) -> None:
        """Tell every process to exit, then make sure it did (terminate, then kill)."""
        for pipe in self._pipes:
            try:
                if self._loop is not None and not self._loop.is_closed():
                    self._loop.remove_reader(pipe.fileno())
                pipe.send(("close",))
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(timeout=5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=2.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for pipe in self._pipes:
            pipe.close()
        self._procs, self._pipes = [], []

    # -- connections ---------------------------------------------------------------------------
    @property
    def open_now(self) -> int:
        return sum(r["open"] for r in self.ready)

    @property
    def connect_failures(self) -> int:
        return sum(r["connect_failures"] for r in self.ready)

    @property
    def first_connection_error(self) -> str | None:
        return next((r["first_error"] for r in self.ready if r["first_error"]), None)

    # -- driving -------------------------------------------------------------------------------
    async def drive(self, phase: str, t0: float, recorder: Recorder, rid_prefix: str, seed: int) -> None:
        """Every process drives its share of `phase` from loop time `t0`; their records go into
        `recorder`. Returns once each process sent its figures (also when cancelled, then re-raised)."""
        inbox = self._inbox
        assert inbox is not None, "start() first"
        for pipe in self._pipes:
            pipe.send(("drive", phase, t0, rid_prefix, seed))
        done: dict[int, dict[str, Any]] = {}
        try:
            while len(done) < self.size:
                index, msg = await inbox.get()
                self._take(index, msg, recorder, done)
        except asyncio.CancelledError:
            for pipe in self._pipes:
                try:
                    pipe.send(("stop",))
                except OSError:
                    pass
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    while len(done) < self.size:
                        index, msg = await inbox.get()
                        self._take(index, msg, recorder, done)
            except TimeoutError:
                pass
            raise
        finally:
            self.figures = [done[i] for i in sorted(done)]

    @staticmethod
    def _take(index: int, msg: tuple, recorder: Recorder, done: dict[int, dict[str, Any]]) -> None:
        kind = msg[0]
        if kind == "records":
            finish, attempt = recorder.finish, recorder.attempt
            for uid, status, done_s, tries in msg[1]:
                finish(uid, status, done_s, tries)
            for status, sent_s, latency_s in msg[2]:
                attempt(status, sent_s, latency_s)
        elif kind == "done":
            done[index] = msg[1]
        elif kind == "exit":
            raise RuntimeError(f"driver process {index} exited during the drive")

    # -- figures -------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """The last drive's transport figures, as one HttpTransport.stats()."""
        lags = {"send_lag_s": merge_histograms(f["lag_hdr"] for f in self.figures),
                "write_lag_s": merge_histograms(f["write_hdr"] for f in self.figures)}
        return merge_transport_stats(self.figures, lags)

    def processes(self, lag_limit_s: float) -> list[dict[str, Any]]:
        """Each process of the last drive: its tenants and connections, requests, send lag,
        CPU, and whether it fell behind (send lag p99 over `lag_limit_s`)."""
        out = []
        for f in self.figures:
            hist = merge_histograms([f["lag_hdr"]])
            lag = lag_figures(hist)
            spec = self.specs[f["index"]]
            drive_s = f["drive_s"]
            out.append({"pid": f["pid"], "requests": f["requests"], "connections": len(spec.units),
                        "send_lag_p99_s": lag["p99"], "send_lag_max_s": lag["max"],
                        "behind": bool(lag["p99"] is not None and lag["p99"] > lag_limit_s),
                        "cpu_s": f["cpu_s"], "cpu_share": f["cpu_s"] / drive_s if drive_s > 0 else None,
                        "cpu_us_per_request": 1e6 * f["cpu_s"] / f["requests"] if f["requests"] else None,
                        "stopped": f["stopped"], "priority": f["priority"],
                        "priority_dropped": f["priority_dropped"]})
        return out
