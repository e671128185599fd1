"""Planning live runs: which scale, which fleet, which traffic; and live compares.

`plan_live(...)` turns what a user asked for (a target spec or an http URL, a
workload, `--rate` / `--scale` / `--duration`) into a `LivePlan`: the scaled
target config, the scaled workload, the host spec and the `Scaling` it
reports. `LivePlan.run(progress)` runs it and returns the typed result.
`compare_live(...)` runs each workload on A then B, one run at a time (both
need the machine), at one scale snapped from A, and returns the same
`CompareResult` a sim compare does. Nothing here prints: callers show a plan
and a run as they like through `run_one`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable
from urllib.parse import urlsplit

from harness.live.framework_host import FrameworkSpec, framework_spec
from harness.live.host import HostSpec
from harness.live.payloads import Payloads
from harness.live.run import LiveRun, Progress
from harness.live.sidecar import Sidecar
from harness.live.scaling import Scaling, default_scale, scale_for_live, snap_scale
from harness.live.warmup import DEFAULT_WARMUP_S
from harness.results import CompareResult, RunResult
from targets.config import TargetConfig
from targets.frameworks.spec import framework_target
from targets.http.haproxy import Balancer
from targets.http.limits import is_loopback
from targets.spec import resolve_target
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

__all__ = ["LivePlan", "compare_live", "parse_url", "plan_live"]


@dataclass(frozen=True)
class LivePlan:
    """One live run, planned. `url` set: an external server (no host, no scaling
    of a fleet: `spec` and `scaling` are None). Rates in requests/s; `warmup_s`:
    seconds of warm-up traffic before the run's clock starts (0: a cold run);
    `driver_procs`: driver processes the schedule is split over (harness.live.driver_procs);
    `sidecar`: something that watches the host beside the run (harness.live.sidecar.Sidecar: a real
    Prometheus)."""

    target: str
    config: TargetConfig
    workload: WorkloadConfig
    seed: int
    asked_scale: float
    scale: float
    payloads: Payloads
    spec: HostSpec | FrameworkSpec | None = None
    scaling: Scaling | None = None
    url: tuple[str, int, str] | None = None
    warmup_s: float = DEFAULT_WARMUP_S
    driver_procs: int = 1
    sidecar: Sidecar | None = None

    @property
    def pad_s(self) -> float | None:
        """Seconds each batch is held to on the host (None: not padded)."""
        return self.spec.effective_pad_s(self.config) if self.spec is not None else None

    def runner(self, progress: Progress | None = None) -> LiveRun:
        return LiveRun(self.config, self.workload, self.seed, self.spec, scaling=self.scaling, url=self.url,
                       payloads=self.payloads, progress=progress, warmup_s=self.warmup_s,
                       driver_procs=self.driver_procs, sidecar=self.sidecar)

    def run(self, progress: Progress | None = None) -> RunResult:
        """Run it to the end (or Ctrl-C / SIGTERM: a partial result). RuntimeError if the host fails."""
        return self.runner(progress).run()


def parse_url(text: str, allow_remote: bool) -> tuple[str, int, str]:
    """(host, port, path) of an http URL target; ValueError for other schemes,
    or for a host outside loopback unless `allow_remote`."""
    u = urlsplit(text)
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"target URL '{text}': only http://HOST:PORT/PATH is supported")
    if not allow_remote and not is_loopback(u.hostname):
        raise ValueError(f"target URL '{text}' is outside loopback; pass --allow-remote to load-test another host")
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    return u.hostname, u.port or 80, path


def plan_live(target: str, workload: str, seed: int = 1, overrides: dict[str, Any] | None = None,
              duration_s: float | None = None, rate_rps: float | None = None, scale: float | None = None,
              model: str = "mlp", device: str = "auto", pad_to_s: float | None = None,
              template: str | None = None, allow_remote: bool = False,
              scale_from: TargetConfig | None = None, warmup_s: float | None = None,
              driver_procs: int = 1, workload_config: WorkloadConfig | None = None,
              balancer: str = "python") -> LivePlan:
    """Plan one live run. The scale is `scale`, else the one that makes the peak
    `rate_rps`, else `default_scale`; with both, `scale` sizes the fleet and the
    workload's peak is `rate_rps` (the same fleet driven past its knee); for a built target it is snapped (from
    `scale_from`, default the target itself) to a whole number of GPUs at the
    design's per-GPU rate. `warmup_s` None: DEFAULT_WARMUP_S. `driver_procs`: driver
    processes (1: this one). `workload_config`: the workload itself (e.g. shortened), in place of
    loading `workload` by name. `balancer`: what the host runs in front of its API servers
    (targets.http.haproxy.Balancer: "python", the project's proxy, or "haproxy"). Raises ConfigError / ValueError / OSError naming the problem."""
    overrides = overrides or {}
    warmup_s = DEFAULT_WARMUP_S if warmup_s is None else warmup_s
    if warmup_s < 0:
        raise ValueError(f"--warmup must be >= 0 s, got {warmup_s:g}")
    if driver_procs < 1:
        raise ValueError(f"--driver-procs must be >= 1, got {driver_procs}")
    wl = (workload_config or load_workload(workload)).at_rate(None, duration_s)
    asked = scale or (wl.rate_factor(rate_rps) if rate_rps else default_scale(wl))
    payloads = Payloads(model, template, seed)
    Balancer.parse(balancer)
    if "://" in target:
        if balancer != Balancer.PYTHON:
            raise ValueError(f"--balancer {balancer} applies to a target the harness starts, not to a URL")
        url = parse_url(target, allow_remote)
        cfg = resolve_target("naive", {**overrides, "name": target})
        return LivePlan(target, cfg, wl.scaled(asked), seed, asked, asked, payloads, url=url, warmup_s=warmup_s,
                        driver_procs=driver_procs)
    framework = framework_target(target, overrides)
    design = framework.config if framework else resolve_target(target, overrides)
    eff = snap_scale(scale_from or design, asked)
    cfg, info = scale_for_live(design, eff)
    # --scale sizes the fleet; --rate with it drives that fleet at another peak (past its knee).
    wl = wl.scaled(wl.rate_factor(rate_rps)) if scale and rate_rps else wl.scaled(eff)
    tenants = [t.name for t in wl.tenants]
    spec: HostSpec | FrameworkSpec = (
        framework_spec(framework, cfg, model, seed, tenants) if framework else
        HostSpec(config=cfg.model_dump(mode="json"), model=model, device=device, pad_to_s=pad_to_s,
                 tenants=tenants, seed=seed, balancer=balancer))
    return LivePlan(target, cfg, wl, seed, asked, eff, payloads, spec=spec, scaling=replace(info, requested=asked),
                    warmup_s=warmup_s, driver_procs=driver_procs)


def compare_live(a: str, b: str, workloads: list[str], seed: int = 1, overrides: dict[str, Any] | None = None,
                 duration_s: float | None = None, rate_rps: float | None = None, scale: float | None = None,
                 model: str = "mlp", device: str = "auto",
                 run_one: Callable[[LivePlan], RunResult] | None = None,
                 warmup_s: float | None = None,
                 workload_of: Callable[[str], WorkloadConfig] | None = None,
                 balancer: str = "python") -> CompareResult:
    """Each workload on A then B at one scale snapped from A; stops after a partial run
    (Ctrl-C or SIGTERM during it) or a KeyboardInterrupt between runs, and returns what
    ran: then the last scenario may have one side, or a partial one (the caller decides
    what counts, harness.analysis.compare.run.finished_only).

    `run_one(plan)` runs a plan (default: `plan.run()`), so a caller can show
    the plan and a progress bar around each run. `workload_of(name)`: the workload to
    run for a name (e.g. shortened; default: the named file as it is).
    """
    run_one = run_one or (lambda plan: plan.run())
    base = resolve_target(a, overrides or {})
    label_b = b if b != a else f"{b} (B)"
    scenarios: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, RunResult]] = {}
    try:
        for w in workloads:
            for target, side in ((a, a), (b, label_b)):
                plan = plan_live(target, w, seed, overrides, duration_s, rate_rps, scale, model, device,
                                 scale_from=base, warmup_s=warmup_s,
                                 workload_config=None if workload_of is None else workload_of(w), balancer=balancer)
                res = run_one(plan)
                scenarios.setdefault(w, {})[side] = res.summary
                runs.setdefault(w, {})[side] = res
                if res.summary.partial:
                    raise KeyboardInterrupt  # that run was interrupted: so is the compare
    except KeyboardInterrupt:
        pass  # what ran is the result
    return CompareResult(a=a, b=label_b, seed=seed, mode="live", scenarios=scenarios, runs=runs)
