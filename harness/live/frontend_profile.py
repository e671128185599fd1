"""Measure a live front end's time per request: the figures the sim's front-end knobs want.

Everything in front of the GPU workers (the layer-4 proxy, the API servers,
their JSON parsing, the target's policies) runs on one event loop, the host
process's main thread; GPU workers are other threads; the driver is another
process on the same cores. The loop saturates when it is never idle, so what
sets its capacity is its wall-clock occupancy per request, not its CPU time
alone: the CPU time plus the time it was runnable but waiting for a core while
the driver, the GPU threads and anything else on the machine had theirs. Linux
counts both per thread (/proc/PID/task/TID/schedstat: time on a CPU, time
waiting on a run queue). On the shared 2-core machine this was written on
(load 8-11), the wait was two to four times the CPU time, which is why a sim
fed the CPU time alone predicted three times the rate the live host sustained.

`profile_frontend` starts `harness serve TARGET --pad-to-s 0` (the GPU's real
compute, no padding: the front end is the bottleneck) and drives it in steps
(each warmed first, the warm-up not counted), each next rate aimed at the loop
85% busy, because the wait per request depends on the load: far below
saturation each request pays a whole wake-up's wait for a core, which a busy
loop shares among many. The model's terms:

- ``cost_s`` (the sim's frontend_cost_s): the loop's occupancy per request,
  CPU plus run-queue wait, at the busiest step (at most 95% busy); the loop
  saturates near 1 / cost_s.
- frontend_cores = 1: the proxy and every API server share the one loop.
- ``shed_cost_s`` (frontend_shed_cost_s): the occupancy per refusal, measured
  on a second short host whose age limit of almost zero refuses nearly all.
- ``proxy_shed_cost_s`` (frontend_proxy_shed_cost_s): the same for a refusal
  the L4 proxy answers itself, on a third host whose proxy budget of zero
  (frontend_proxy_share = 0) refuses every request.
- the GPUs at the measured batch time (batch_time_s), the batcher's wait kept
  as live's (max_wait_s).

`FrontendCost.sim_knobs` writes them for the profiled host's fleet, so that
`harness sweep` in sim predicts its live knee. (A straight line fitted to the
occupancy at two loads, to extrapolate to 100% busy, was tried: on a machine
at load 8-11 the two points' noise made it miss by 1.8x where the busiest
step missed by 15-30%.)

Terms not modeled: the wait for the GIL (GPU threads hold it to build their
input tensors and read outputs back; a thread waiting for it sleeps, so neither
figure counts it; `workers_cpu_s` bounds it from above), and a machine whose
other load changes between the profile and the run it predicts.

Linux only (/proc); `ValueError` elsewhere.
"""

from __future__ import annotations

import glob
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field, replace
from typing import Any

from harness.live.serve_child import stop_child

__all__ = ["FrontendCost", "FrontendStep", "ThreadTimes", "main_thread_cpu_s", "median_cost", "profile_frontend",
           "serve_process", "thread_times"]

_READY = re.compile(r"serving \S+ at http://[^:]+:(\d+)/predict")
_SHED_SHARE = 1e-4  # an age limit of 30 us of a 300 ms SLO: nearly every request is refused


@dataclass(frozen=True)
class ThreadTimes:
    """One thread's seconds on a CPU and seconds runnable but waiting for one (schedstat)."""

    name: str
    cpu_s: float
    wait_s: float


@dataclass(frozen=True)
class FrontendStep:
    """One profiling step: the loop's time per answered attempt at ``rate_rps``, split into CPU and
    run-queue wait, beside the GPU threads' and the driver's CPU per attempt and the run's figures."""

    rate_rps: float
    achieved_rps: float    # attempts over the measured wall time
    attempts: int
    shed: int
    loop_cpu_s: float
    loop_wait_s: float
    workers_cpu_s: float
    driver_cpu_s: float
    busy: float            # share of the step's wall time the loop was on a CPU or waiting for one
    p99_s: float | None
    valid: bool
    load_1m: float         # the machine's load average as the step ended

    @property
    def cost_s(self) -> float:
        """The loop's occupancy per attempt: what one request takes of its capacity."""
        return self.loop_cpu_s + self.loop_wait_s


@dataclass(frozen=True)
class FrontendCost:
    """The front end's figures and the steps they come from.

    ``cost_s`` is the loop's occupancy per request (CPU plus run-queue wait) at the busiest step
    under the cap, the figure a sim CPU serving requests one at a time needs to saturate where the
    loop would; ``cpu_s`` is its CPU part alone."""

    cost_s: float
    cpu_s: float
    shed_cost_s: float | None
    batch_s: float | None          # mean GPU batch time (real compute, no padding)
    steps: list[FrontendStep] = field(default_factory=list)
    shed_step: FrontendStep | None = None
    proxy_shed_cost_s: float | None = None
    proxy_shed_step: FrontendStep | None = None
    profiles_s: tuple[float, ...] = ()  # each profile's cost_s, when this is their median (median_cost)

    @property
    def saturation_rps(self) -> float:
        """The rate at which the loop would be busy all the time."""
        return 1.0 / self.cost_s

    def sim_knobs(self, live_config: Any) -> dict[str, Any]:
        """Knobs that make a sim target model the profiled live host: its scaled fleet (``live_config``,
        e.g. harness.live.scaling.scale_for_live's), its GPUs at the measured batch time (the batcher's
        wait kept as live's), and its front end: one CPU for every API server at ``cost_s``."""
        knobs: dict[str, Any] = {"peak_qps": live_config.peak_qps, "api_servers": live_config.api_servers,
                                 "gpus": live_config.fleet_gpus,
                                 "max_wait_s": round(live_config.effective_max_wait_s, 6),
                                 "frontend_cost_s": round(self.cost_s, 7), "frontend_cores": 1}
        if self.batch_s:
            knobs["batch_time_s"] = round(self.batch_s, 6)
        if self.shed_cost_s is not None:
            knobs["frontend_shed_cost_s"] = round(self.shed_cost_s, 7)
        if self.proxy_shed_cost_s is not None:
            knobs["frontend_proxy_shed_cost_s"] = round(self.proxy_shed_cost_s, 7)
        return knobs


def thread_times(pid: int) -> dict[int, ThreadTimes]:
    """Every thread of process ``pid``: its name, CPU seconds and run-queue wait seconds."""
    out: dict[int, ThreadTimes] = {}
    tasks = glob.glob(f"/proc/{pid}/task/*")
    if not tasks:
        raise ValueError(f"cannot read the threads of pid {pid} (no /proc/{pid}/task)")
    for path in tasks:
        try:
            with open(f"{path}/stat") as f:
                name = f.read().split("(", 1)[1].rsplit(")", 1)[0]
            with open(f"{path}/schedstat") as f:
                run_ns, wait_ns = (int(x) for x in f.read().split()[:2])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
        out[int(path.rsplit("/", 1)[1])] = ThreadTimes(name, run_ns / 1e9, wait_ns / 1e9)
    return out


def main_thread_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid``'s main thread."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError as exc:
        raise ValueError(f"cannot read thread CPU of pid {pid}: {exc}") from None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_process(target: str, model: str, overrides: list[str], pad_to_s: float | None = 0.0,
                  scale: float | None = None) -> tuple[subprocess.Popen, int]:
    """`harness serve TARGET` in a child process, and its proxy's port once it says it serves."""
    args = [sys.executable, "-c", "from harness.cli import app; app()", "serve", target, "--port", "0",
            "--model", model] + ([] if pad_to_s is None else ["--pad-to-s", str(pad_to_s)]) \
        + ([] if scale is None else ["--scale", repr(scale)])
    for o in overrides:
        args += ["--set", o]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 180
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = _READY.search(line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise RuntimeError(f"`harness serve {target}` did not come up")


def _stop(proc: subprocess.Popen) -> None:
    stop_child(proc)


def _gpu_batches(port: int) -> tuple[float, float]:
    """(GPU busy seconds, batches run) from the host's /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    busy = batches = 0.0
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "harness_gpu_busy_seconds_total" or (s.name == "harness_gpu_busy_seconds" and not busy):
                busy = s.value
            elif s.name == "harness_batch_size_count":
                batches = s.value
    return busy, batches


def _step(pid: int, port: int, rate_rps: float, duration_s: float, model: str, warmup_s: float,
          seed: int) -> FrontendStep:
    """Drive the host at ``rate_rps`` and measure its threads over the measured part only. Each step
    of one host needs its own ``seed``: a step that repeated an earlier one's payloads would be
    answered from the response cache."""
    from harness.live.plan import plan_live
    from harness.live.run import LiveRun

    marks: dict[str, Any] = {}  # threads before and after the measured drive, and its wall seconds

    class _Measured(LiveRun):
        async def _drive(self, phase: str, *args: Any, **kw: Any) -> None:
            if phase != "run":
                return await super()._drive(phase, *args, **kw)
            marks["before"], t0 = thread_times(pid), time.monotonic()
            try:
                await super()._drive(phase, *args, **kw)
            finally:
                marks["after"], marks["wall"] = thread_times(pid), time.monotonic() - t0

    # No retries: each attempt is one offered request, refused or answered once.
    p = plan_live(f"http://127.0.0.1:{port}/predict", "steady", seed, duration_s=duration_s, rate_rps=rate_rps,
                  model=model, warmup_s=warmup_s, overrides={"client_retries": 0})
    run = _Measured(p.config, p.workload, p.seed, None, url=p.url, payloads=p.payloads, warmup_s=p.warmup_s)
    s = run.run().summary
    if "after" not in marks:
        raise RuntimeError(f"the step at {rate_rps:g} req/s did not run (partial: {s.partial})")
    before, after, wall = marks["before"], marks["after"], marks["wall"]
    n = max(1, s.requests.attempts)
    main_b, main_a = before.get(pid), after.get(pid)
    if main_a is None or main_b is None:
        raise RuntimeError("the host's main thread was not found")
    workers = sum(t.cpu_s - before[tid].cpu_s for tid, t in after.items() if tid != pid and tid in before)
    cpu, wait = main_a.cpu_s - main_b.cpu_s, main_a.wait_s - main_b.wait_s
    return FrontendStep(rate_rps=rate_rps, achieved_rps=n / wall if wall > 0 else 0.0, attempts=n,
                        shed=s.requests.shed, loop_cpu_s=cpu / n, loop_wait_s=wait / n, workers_cpu_s=workers / n, driver_cpu_s=(run.drive_cpu_s or 0.0) / n,
                        busy=(cpu + wait) / wall if wall > 0 else 0.0, p99_s=s.attempt_latency_ok_s.p99,
                        valid=s.valid, load_1m=os.getloadavg()[0])


def profile_frontend(target: str = "hardened", rate_rps: float = 150.0, duration_s: float = 5.0,
                     model: str = "mlp", overrides: list[str] | None = None, max_steps: int = 6,
                     busy_aim: float = 0.85, busy_stop: float = 0.75, busy_max: float = 0.95,
                     warmup_s: float = 2.0, shed: bool = True, pad_to_s: float | None = 0.0,
                     scale: float | None = None, profiles: int = 1) -> FrontendCost:
    """Profile `harness serve TARGET --pad-to-s 0` in up to ``max_steps`` steps from ``rate_rps``, each
    next rate aimed at the loop ``busy_aim`` busy (at most 3x the last), until one is ``busy_stop``
    busy; the figure is the busiest step's at most ``busy_max`` busy. The loop has a fixed cost
    (timers, samples, the GPU threads' batching) that a low rate spreads over few requests, so
    the figure must come from near saturation (measured at --scale 0.35, helpers paused:
    stopping at 450 req/s, 29-46% busy, four profiles gave 692-1,071 us a request; climbing to
    >= 75% busy, 1,333-1,670 req/s, two gave 494 and 620 us, whose sim knees, 1,874 and 1,509
    req/s, lie within 15% of the live knee, 1,719). Then, with ``shed``, the
    refusal's cost on a second host whose handlers refuse nearly everything, and on a third whose
    proxy refuses everything.

    ``pad_to_s`` and ``scale`` serve another host than the unpadded default fleet: to predict a
    live run, profile the host it runs (e.g. ``pad_to_s=None``, the design's padded batches,
    and its scale): the loop's time per request depends on what shares its cores (measured:
    0.66 ms unpadded on the default fleet, where tiny batches keep the GPU threads busy, and
    0.41 ms padded on 15 GPUs, where a sim with the latter predicted the live knee within 14%).

    ``profiles`` > 1 profiles that many fresh hosts one after another and returns their median
    (``median_cost``): profiles taken minutes apart on a quiet 2-core machine differed by +-20%,
    and a sim fed one of them predicted a past-the-knee run within 10 points with some and 11-16
    points out with others."""
    if profiles < 1:
        raise ValueError(f"profiles must be >= 1, got {profiles}")
    if profiles > 1:
        return median_cost([profile_frontend(target, rate_rps, duration_s, model, overrides, max_steps, busy_aim,
                                             busy_stop, busy_max, warmup_s, shed, pad_to_s, scale)
                            for _ in range(profiles)])
    overrides = list(overrides or [])
    steps: list[FrontendStep] = []
    proc, port = serve_process(target, model, overrides, pad_to_s, scale)
    try:
        busy0, batches0 = _gpu_batches(port)
        rate = rate_rps
        while len(steps) < max_steps:
            steps.append(_step(proc.pid, port, rate, duration_s, model, warmup_s, seed=1 + 10 * len(steps)))
            if steps[-1].busy >= busy_stop:
                break
            rate = round(rate * min(3.0, busy_aim / max(steps[-1].busy, 1e-3)), 1)
        busy1, batches1 = _gpu_batches(port)
    finally:
        _stop(proc)
    under = [s for s in steps if s.busy <= busy_max] or steps[:1]
    chosen = max(under, key=lambda s: s.busy)
    shed_step = proxy_step = None
    if shed:
        shed_step = _refusing(target, model, overrides + [f"frontend_age_share={_SHED_SHARE}"], chosen.rate_rps,
                              duration_s, pad_to_s, scale)
        proxy_step = _refusing(target, model, overrides + ["frontend_proxy_share=0"], chosen.rate_rps, duration_s,
                               pad_to_s, scale)
    batches = batches1 - batches0
    return FrontendCost(cost_s=chosen.cost_s, cpu_s=chosen.loop_cpu_s, shed_cost_s=_refusal_cost(shed_step),
                        batch_s=(busy1 - busy0) / batches if batches > 0 else None, steps=steps,
                        shed_step=shed_step, proxy_shed_cost_s=_refusal_cost(proxy_step), proxy_shed_step=proxy_step)


def median_cost(costs: list[FrontendCost]) -> FrontendCost:
    """Several profiles as one: the median of each figure (of those measured, for the refusal costs),
    the steps of the profile whose own cost is the median (the lower middle of an even count), and
    every profile's cost in ``profiles_s`` so the spread can be shown."""
    if not costs:
        raise ValueError("no profiles to take the median of")
    ranked = sorted(costs, key=lambda c: c.cost_s)
    middle = ranked[(len(ranked) - 1) // 2]

    def med(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    return replace(middle, cost_s=statistics.median(c.cost_s for c in costs),
                   cpu_s=statistics.median(c.cpu_s for c in costs),
                   shed_cost_s=med([c.shed_cost_s for c in costs]), batch_s=med([c.batch_s for c in costs]),
                   proxy_shed_cost_s=med([c.proxy_shed_cost_s for c in costs]),
                   profiles_s=tuple(c.cost_s for c in costs))


def _refusing(target: str, model: str, overrides: list[str], rate_rps: float, duration_s: float,
              pad_to_s: float | None = 0.0, scale: float | None = None) -> FrontendStep:
    """One short step on a host whose ``overrides`` make it refuse (nearly) every request."""
    proc, port = serve_process(target, model, overrides, pad_to_s, scale)
    try:
        return _step(proc.pid, port, rate_rps, min(duration_s, 3.0), model, warmup_s=1.0, seed=1)
    finally:
        _stop(proc)


def _refusal_cost(step: FrontendStep | None) -> float | None:
    """A refusing step's time per request, when nearly all it drove were refused."""
    return step.cost_s if step is not None and step.shed >= 0.9 * step.attempts else None
