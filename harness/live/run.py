"""Live mode: one run of a real target on the wall clock, driven over HTTP.

A run starts a target host in a child process (harness.live.host: a layer-4
proxy, N aiohttp API servers, GPU workers on real torch models, the same
ServingTarget as sim), drives the workload at it with the same Driver, Client
and Recorder as sim through the HTTP transport, injects the workload's faults
on schedule, stops the host and builds the same result document as sim
(harness.engine.summary.build_document, mode "live") plus a `live` block: the
driver's send lag, connections, the scale and the host's figures.

Scale: `harness.live.scaling` shrinks the design's rates and fleet together so a 2-core
machine can carry them; the result's `live.scale` block reports how.

Validity: the document's summary says whether the figures are the target's
(`valid`, `invalid_reasons`; harness.live.validity judges the driver's send
lag, its waits for connections, its CPU during the drive, and whether it
reached the target). A target that refuses every connection before the drive
starts raises `Unreachable` (no traffic is sent).

Warm-up: before its clock starts, a run sends `warmup_s` seconds of traffic
ramping to the workload's opening rate (harness.live.warmup), recorded by a recorder of its
own and left out of the summary; the host's counters are taken as a baseline
after it (harness.live.baseline). The `live` block keeps the warm-up's own
figures (`warmup`), the cold-start p50 / p99 (`cold_start`: the warm-up's, or a
cold run's first seconds) and `cold` (true with `warmup_s` 0: the summary
then includes the fresh host's first seconds).

Driver processes: `driver_procs` N > 1 splits the schedule's tenants and
connections over N processes (harness.live.driver_procs_pool), each driving
its share on the same clock; their records go into the run's one recorder and
their send-lag histograms are merged exactly. The `live.driver_procs` block says
how many processes ran on how many cores and, per process, its send lag p99,
its CPU and whether it fell behind. N = 1 (the default) drives in this process.

Sidecar: what watches the host beside the run (harness.live.sidecar, e.g. a
real Prometheus); its figures go in the `live` block under its `name`.

Teardown is certain: Ctrl-C or SIGTERM ends the drive early, the host's
figures are still collected, and the document is marked partial; the host
process is always stopped (terminated, then killed) before `run` returns.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from contextlib import ExitStack
from dataclasses import asdict
from typing import Any, Callable

from harness.engine.driver import Driver
from harness.live.driver_loop import RealtimeGuard, driver_priority, new_loop, quiet_gc
from harness.live.driver_procs_pool import DriverPool
from harness.live.http_transport import HttpTransport
from harness.live.payloads import Payloads
from harness.live.faults import inject_fault
from harness.live.fd_limit import raise_fd_limit
from harness.live.baseline import stats_since
from harness.live.framework_host import FrameworkProcess, FrameworkSpec, host_process
from harness.live.host import HostSpec
from harness.live.sidecar import Sidecar
from harness.live.host_process import HostProcess
from harness.live.scaling import Scaling
from harness.live.warmup import (DEFAULT_WARMUP_S, cold_start_figures, opening_rps, warmup_figures, warmup_schedule,
                                 warmup_workload)
from harness.live.validity import LIMITS, cpu_count, cpu_ticks, judge, machine_busy
from harness.engine.recorder import Recorder
from harness.engine.summary import build_document
from harness.results.run import RunResult
from targets.client import ClientPolicy
from targets.config import TargetConfig
from targets.snapshot import TargetSnapshot
from workloads.arrivals import Schedule, build_schedule
from workloads.model import WorkloadConfig

Progress = Callable[[dict[str, Any]], None]
LAG_WARN_S = LIMITS.send_lag_p99_s  # a p99 send lag above this means the driver fell behind


class Unreachable(RuntimeError):
    """The target refused every connection the driver opened before the drive."""


class LiveRun:
    """One live run. `url` set: drive that server (no host is started, no faults)."""

    def __init__(self, config: TargetConfig, workload: WorkloadConfig, seed: int,
                 spec: HostSpec | FrameworkSpec | None,
                 scaling: Scaling | None = None, url: tuple[str, int, str] | None = None,
                 payloads: Payloads | None = None, progress: Progress | None = None,
                 warmup_s: float = DEFAULT_WARMUP_S, driver_procs: int = 1,
                 sidecar: Sidecar | None = None) -> None:
        if driver_procs < 1:
            raise ValueError(f"--driver-procs must be >= 1, got {driver_procs}")
        self.config = config
        self.driver_procs = driver_procs
        self.sidecar = sidecar
        self.sidecar_block: dict[str, Any] | None = None
        self.workload = workload
        self.seed = seed
        self.spec = spec
        self.scaling = scaling
        self.url = url
        self.payloads = payloads or Payloads(spec.model if spec else "mlp", seed=seed)
        if url is not None:
            # A server that outlives this run may still cache an earlier run's answers: the
            # same seed gives the same contents, and a second run against one `harness serve`
            # was answered from the first run's cache entries (p50 3.3 ms against 72 ms, 0
            # GPU-seconds by the third run). Each run against a URL moves its contents apart.
            self.payloads = self.payloads.salted(random.Random())
        self.progress = progress
        rng = random.Random(seed)
        self.client_seed = rng.randrange(2**31)
        self.schedule = build_schedule(workload, seed)
        self.warmup_load = warmup_workload(workload, warmup_s)
        self.warmup: Recorder | None = None          # the warm-up's own recorder, once it ran
        self.warmup_block: dict[str, Any] | None = None
        self.recorder = Recorder(self.schedule.sched_s, self.schedule.tenant, self.schedule.tenants,
                                 config.slo_s, workload.duration_s, workload.window_s)
        self.host: HostProcess | FrameworkProcess | None = None
        self.transport: HttpTransport | None = None
        self.pool: DriverPool | None = None            # the driver processes, when driver_procs > 1
        self.pool_cpu_s = 0.0                          # their CPU over every drive (warm-up and run)
        self.drive_stats: dict[str, Any] | None = None  # the transport's figures when the drive ended
        self.host_stats: dict[str, Any] | None = None   # the host's `stats`, counted from the run's start
        self._proxy_base: dict[str, Any] = {}          # `stats` before the driver connected
        self._base: dict[str, Any] | None = None        # `stats` just before the run's clock started
        self.snapshot: TargetSnapshot | None = None     # the target's, on the run's clock
        self.ready: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.partial = False
        self.end_s = 0.0
        self.wall_s = 0.0
        self.driver_cpu_s = 0.0
        self.drive_cpu_s: float | None = None      # the driver process's CPU between t0 and the end
        self.machine_busy: float | None = None     # the whole machine's busy share over the drive
        self.driver_priority: str | None = None    # the driver's CPU priority (harness.live.driver_loop)

    # -- running ---------------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Run to the end (or to Ctrl-C / SIGTERM) and return the result document."""
        raise_fd_limit()
        started, cpu = time.perf_counter(), time.process_time()
        try:
            with asyncio.Runner(loop_factory=new_loop) as runner:
                runner.run(self._main())
        except KeyboardInterrupt:
            self.partial = True
        finally:
            if self.host is not None:
                self.host.kill()
        self.wall_s = time.perf_counter() - started
        self.driver_cpu_s = time.process_time() - cpu
        return self.document()

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        assert me is not None  # a coroutine run by the loop
        previous_sigterm = signal.getsignal(signal.SIGTERM)  # a caller's (a compare's), put back after
        loop.add_signal_handler(signal.SIGTERM, me.cancel)
        t0: float | None = None
        helpers: list[asyncio.Task] = []
        priority = ExitStack()
        guard: RealtimeGuard | None = None
        try:
            if self.url is None:
                self.host = host_process(self.spec)  # type: ignore[arg-type]  # a spec unless a url is driven
                self.ready = await self.host.start()
                self._proxy_base = await self.host.request("stats")
                if self.sidecar is not None:
                    self.sidecar.start(self.ready)
                host, port, path = "127.0.0.1", self.ready["proxy_port"], "/predict"
            else:
                host, port, path = self.url
            # After the host started (it must not inherit it). With driver processes, they take
            # the realtime class themselves: this process only gathers their records, and a busy
            # realtime gatherer would hold a core they wait for (SCHED_RR slices are 100 ms).
            self.driver_priority = priority.enter_context(driver_priority(realtime=self.driver_procs == 1))
            guard = RealtimeGuard(loop)
            priority.callback(guard.cancel)
            reach = await self._connect(host, port, path)
            if reach.open_now == 0 and reach.connect_failures:
                where = f"http://{host}:{port}{path}" if self.url else "the target host's proxy"
                raise Unreachable(f"{reach.first_connection_error} (target {where}); no request was sent")
            if self.warmup_load is not None:
                await self._warm_up()
            if self.host is not None:
                self._base = await self.host.request("stats")
                at = await self.host.request("sample")
            # Collected before the clock starts: a full pass over a loaded process takes 0.1-1 s,
            # which, once t0 was fixed, made the run's first requests that late.
            with quiet_gc():
                t0 = loop.time() + 0.2
                if self.sidecar is not None:
                    self.sidecar.clock(time.time() + (t0 - loop.time()))
                if self.host is not None:  # the GPU-busy baseline of the first window
                    self.recorder.sample(t0, at["queue_depth"], at["busy_gpu_s"], at["alive"])
                cpu0, ticks0 = time.process_time(), cpu_ticks()
                self.recorder.t0 = t0
                if self.host is not None:
                    helpers.append(loop.create_task(self._sampler(t0)))
                    helpers += [loop.create_task(inject_fault(self.host, f, t0, self.events)) for f in self.workload.faults]
                elif self.workload.faults:
                    self.events.append({"t_s": 0.0, "event": "faults-skipped", "reason": "external target"})
                await self._drive("run", self.schedule, self.recorder, t0, "", self.client_seed)
        except asyncio.CancelledError:
            self.partial = True
        finally:
            self.end_s = (loop.time() - t0) if t0 is not None else 0.0
            # The drive's figures as it ended: after an interruption, retries still pending
            # would otherwise count connects refused by the host being stopped below.
            self.drive_stats = self._transport_stats()
            if t0 is not None and self.end_s > 0:
                self.drive_cpu_s = time.process_time() - cpu0
                self.machine_busy = machine_busy(ticks0, cpu_ticks())
            for task in helpers:
                task.cancel()
            if self.host is not None:
                try:
                    stats = await self.host.request("stats", timeout_s=5.0)
                    if "error" not in stats and self._base is not None:
                        self.host_stats = stats_since(self._base, stats, self._proxy_base)
                        self.snapshot = TargetSnapshot.from_dict(self.host_stats["snapshot"]).since(self.recorder.t0)
                except (RuntimeError, OSError, asyncio.TimeoutError, ValueError):
                    pass
            if self.transport is not None:
                self.transport.close()
            if self.pool is not None:
                self.pool.close()
            if self.sidecar is not None:
                try:
                    if t0 is not None:
                        self.sidecar_block = await asyncio.to_thread(self.sidecar.finish, self.end_s)
                except Exception as exc:  # noqa: BLE001 - a sidecar must not sink the run's figures
                    self.sidecar_block = {"error": f"{type(exc).__name__}: {exc}"}
                finally:
                    self.sidecar.close()
            if self.host is not None:
                await self.host.stop()
            if guard is not None and guard.dropped:
                self.driver_priority = "realtime, dropped: over half a core"
            priority.close()
            loop.remove_signal_handler(signal.SIGTERM)  # it leaves SIGTERM at its default: ends the process
            if previous_sigterm is not None:
                signal.signal(signal.SIGTERM, previous_sigterm)

    async def _connect(self, host: str, port: int, path: str) -> HttpTransport | DriverPool:
        """Open the driver's connections: here, or in each driver process (their share)."""
        if self.driver_procs == 1:
            tr = self.transport = HttpTransport(host, port, path, self.payloads)
            await tr.open({t.name: t.connections for t in self.workload.tenants})
            return tr
        phases = {"run": (self.workload, self.seed)}
        if self.warmup_load is not None:
            phases["warmup"] = (self.warmup_load, self.seed + 1)
        pool = self.pool = DriverPool(self.driver_procs, host, port, path, self.payloads,
                                      ClientPolicy.from_target(self.config), phases, self.schedule)
        await pool.start()
        return pool

    async def _drive(self, phase: str, sched: Schedule, rec: Recorder, t0: float, rid_prefix: str,
                     seed: int) -> None:
        """Drive `sched` from loop time t0 to its last answer, into `rec`: in this process, or
        over the driver processes (`phase` names the schedule they built for themselves)."""
        if self.pool is not None:
            try:
                await self.pool.drive(phase, t0, rec, rid_prefix, seed)
            finally:
                self.pool_cpu_s += sum(f["cpu_s"] for f in self.pool.figures)
            return
        tr = self.transport
        assert tr is not None
        tr.rid_prefix = rid_prefix
        tr.begin(t0, sched.sched_s.tolist())
        try:
            await Driver(sched, ClientPolicy.from_target(self.config), tr, rec, random.Random(seed)).run(t0=t0)
        finally:
            tr.rid_prefix = ""

    def _transport_stats(self) -> dict[str, Any]:
        """The drive's transport figures (merged over the driver processes); {} before any."""
        if self.pool is not None:
            return self.pool.stats() if self.pool.figures else {}
        return self.transport.stats() if self.transport is not None else {}

    async def _warm_up(self) -> None:
        """Drive the warm-up workload to its last answer on its own recorder, with its own
        request IDs and arrivals; then start the transport's figures afresh."""
        loop = asyncio.get_running_loop()
        wl = self.warmup_load
        assert wl is not None
        sched = warmup_schedule(wl, self.seed + 1)
        rec = self.warmup = Recorder(sched.sched_s, sched.tenant, sched.tenants, self.config.slo_s,
                                     wl.duration_s, wl.window_s)
        with quiet_gc():  # before the warm-up's clock starts (see _main)
            t0 = rec.t0 = loop.time() + 0.2
            try:
                await self._drive("warmup", sched, rec, t0, "warmup-", self.client_seed + 1)
            finally:
                self.warmup_block = {**warmup_figures(rec, opening_rps(self.workload),
                                                      max(0.0, loop.time() - t0 - wl.duration_s)),
                                     "send_lag_p99_s": (self._transport_stats().get("send_lag_s") or {}).get("p99")}
                if self.transport is not None:
                    self.transport.reset_stats()

    async def _sampler(self, t0: float) -> None:
        loop = asyncio.get_running_loop()
        w, k, rec = self.workload.window_s, 1, self.recorder
        while True:
            await asyncio.sleep(max(0.0, t0 + k * w - loop.time()))
            try:
                s = await self.host.request("sample")  # type: ignore[union-attr]  # sampled only with a host
            except (RuntimeError, OSError, asyncio.TimeoutError, ValueError) as exc:
                self.events.append({"t_s": loop.time() - t0, "event": "host-unreachable", "reason": str(exc)})
                return
            rec.sample(loop.time(), s["queue_depth"], s["busy_gpu_s"], s["alive"])
            if self.progress is not None:
                self.progress({"t_s": loop.time() - t0, "duration_s": self.workload.duration_s,
                               "finished": rec.finished, "attempts": rec.attempts,
                               "queue_depth": s["queue_depth"], "unique": len(self.schedule)})
            k += 1

    # -- the result ------------------------------------------------------------------------------
    def live_block(self) -> dict[str, Any]:
        tr = self.drive_stats if self.drive_stats is not None else self._transport_stats()
        lag = (tr.get("send_lag_s") or {}).get("p99")
        sent = max(1, self.recorder.attempts)
        share = self.drive_cpu_s / self.end_s if self.drive_cpu_s is not None and self.end_s > 0 else None
        procs = self._procs_block()
        if procs is not None:  # the busiest driver process is the one that runs out of core first
            share = max((p["cpu_share"] or 0.0 for p in procs["per_process"]), default=share)
        block: dict[str, Any] = {
            **tr,
            "driver_behind": bool(lag is not None and lag > LAG_WARN_S)
                             or any(p["behind"] for p in (procs or {}).get("per_process", [])),
            "driver_cpu_us_per_attempt": 1e6 * (self.driver_cpu_s + self.pool_cpu_s) / sent,
            "driver_cpu_share": share,
            "driver_procs": procs,
            "driver_priority": self.driver_priority,
            "machine_cpu_busy": self.machine_busy,
            "machine_cpus": cpu_count(),
            "scale": asdict(self.scaling) if self.scaling else None,
            "external_url": None if self.url is None else f"http://{self.url[0]}:{self.url[1]}{self.url[2]}",
            "content_offset": self.payloads.content_offset,
            "host": {k: self.ready.get(k) for k in ("device", "model", "pad_to_s", "gpus", "api_ports", "warmup")},
            "cold": self.warmup is None,
            "warmup": self.warmup_block,
            "cold_start": cold_start_figures(self.warmup, self.recorder),
        }
        if self.ready.get("framework"):  # a framework target (harness.live.framework_host): its version, knobs
            block["framework"] = self.ready["framework"]
        if self.sidecar is not None:
            block[self.sidecar.name] = self.sidecar_block
        if self.host_stats is not None and self.snapshot is not None:
            block["proxy"] = self.host_stats.get("proxy")
            block["balancer"] = self.host_stats.get("balancer")
            block["executors"] = self.host_stats.get("executors")
            pool = self.snapshot.pool
            # Batch time as the pool saw it (hand-offs included), against the cost model's.
            block["batch_s_mean"] = pool.finished_busy_s / pool.batches if pool.batches else None
        return block

    def _procs_block(self) -> dict[str, Any] | None:
        """How many driver processes ran on how many cores, and each one's figures (None: one,
        this process)."""
        if self.pool is None:
            return None
        per = self.pool.processes(LAG_WARN_S) if self.pool.figures else []
        return {"procs": self.pool.size, "asked": self.driver_procs, "cores": cpu_count(),
                "cores_used": sum(p["cpu_share"] or 0.0 for p in per), "per_process": per,
                "any_behind": any(p["behind"] for p in per)}

    def document(self) -> RunResult:
        """The result, its summary marked invalid (with reasons) when the driver's figures say so;
        `live.validity` says who is at fault (harness.live.validity.judge): the driver, the target
        (overloaded: a finding in a valid run), both, or none."""
        live = self.live_block()
        res = build_document(self.recorder, self.config, self.workload, self.snapshot, self.seed, "live",
                             self.end_s, self.wall_s, self.partial, self.events, extra={"live": live})
        r = res.summary.requests
        judged = judge(live, r.attempts, r.succeeded, r.unique)
        update: dict[str, Any] = {"live": {**(res.summary.live or {}), "validity": judged.to_json()}}
        if not judged.valid:
            update.update(valid=False, invalid_reasons=judged.invalid_reasons)
        if "framework" in live:  # a framework's flaws are declared, not read from the design's knobs
            update["flaws"] = live["framework"]["flaws"]
        return res.model_copy(update={"summary": res.summary.model_copy(update=update)})
