"""Live-mode commands: `run --mode live`, `compare --mode live`, `serve` and `profile`.

Only parsing, printing and calling the library (harness.live.plan, harness.live.host,
harness.live.profile) live here.
"""

from __future__ import annotations

import asyncio
import gc
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.cli.common import (DEVICE, LIVE_SCALE, MODEL, MODELS, bounded, err, fail, int_list, one_of, out,
                                served_notice, until_stopped, writable_file)
from harness.engine.jobs import SimJob
from harness.results import CompareResult, RunResult
from workloads.loader import ConfigError

if TYPE_CHECKING:
    from harness.live.plan import LivePlan

WARMUP = typer.Option(None, "--warmup", help="live: seconds of traffic at the workload's opening rate sent before "
                      "the measured run and left out of its figures (default 10; 0: a cold run).",
                      callback=bounded("--warmup", ge=0, unit=" s"))

BALANCER = typer.Option("python", "--balancer", help="live: what runs in front of the API servers: python (the "
                        "project's layer-4 proxy) or haproxy (HAProxy, Debian's `haproxy`; naive: mode tcp, "
                        "round robin; hardened: mode http with a capped queue answering 503).",
                        callback=one_of("--balancer", ("python", "haproxy")))

DRIVER_PROCS = typer.Option(1, "--driver-procs", help="live: driver processes the schedule's tenants and connections "
                            "are split over (their latency histograms merged exactly; 1: this process); an LLM URL "
                            "(run, compare, sweep): its conversations, and a closed loop's users or a cap's slots.",
                            callback=bounded("--driver-procs", ge=1, le=64))


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A progress bar fed by LiveRun's once-a-window samples (None when disabled)."""
    if not enabled:
        yield None
        return
    cols = (TextColumn("[bold]live[/] {task.fields[t]:>6.1f}/{task.total:g} s"), BarColumn(),
            TextColumn("{task.fields[done]:>8,} answered  queue {task.fields[queue]:>6,}"), TimeElapsedColumn())
    with Progress(*cols, console=err, transient=True) as bar:
        task = None

        def update(p: dict[str, Any]) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task("live", total=p["duration_s"], t=0.0, done=0, queue=0)
            bar.update(task, completed=min(p["t_s"], p["duration_s"]), t=p["t_s"], done=p["finished"],
                       queue=p["queue_depth"])

        yield update


def _plan_text(plan: LivePlan) -> str:
    from harness.live.framework_host import FrameworkSpec
    from harness.live.warmup import opening_rps

    wl, cfg, info = plan.workload, plan.config, plan.scaling
    warm = (f"\n  warm-up first: {plan.warmup_s:g} s ramping to {opening_rps(wl):,.0f} req/s, left out of the figures"
            if plan.warmup_s else "\n  cold run (--warmup 0): the figures include the fresh server's first seconds")
    if info is None:  # an external server: only the traffic is scaled
        return f"live: {plan.target} on {wl.name}, scale {plan.scale:.4g}: {wl.peak_rps:,.0f} req/s peak" + warm
    if isinstance(plan.spec, FrameworkSpec):  # a real framework's server (harness.live.framework_host)
        return (f"live: {plan.target} on {wl.name}, scale {plan.scale:.4g}: {wl.peak_rps:,.0f} req/s peak\n"
                f"  {plan.spec.describe()}, {plan.payloads.model}"
                f"{f' padded to {plan.pad_s * 1000:.0f} ms' if plan.pad_s else ''}" + warm)
    pad = plan.pad_s
    return (f"live: {plan.target} on {wl.name}, scale {plan.scale:.4g} (asked {plan.asked_scale:.4g}): "
            f"{wl.peak_rps:,.0f} req/s peak\n"
            f"  {cfg.api_servers} API server(s), {cfg.fleet_gpus} GPU worker(s) running {plan.payloads.model}"
            f"{f' padded to {pad * 1000:.0f} ms' if pad else ''}\n"
            f"  per GPU {info.per_gpu_rps_live:,.0f} req/s (design {info.per_gpu_rps_design:,.0f}); "
            f"per API server {info.per_server_rps_live:,.0f} (design {info.per_server_rps_design:,.0f})" + warm)


def _shown_run(quiet: bool, driver_procs: int = 1) -> Callable[[LivePlan], RunResult]:
    """Runs a plan over `driver_procs` driver processes, showing the plan, a progress bar and
    the driver's lag unless `quiet`."""
    from dataclasses import replace

    from reports.run import lag_text

    def run_one(plan: LivePlan) -> RunResult:
        plan = replace(plan, driver_procs=driver_procs)
        if not quiet:
            err.print(_plan_text(plan), highlight=False, soft_wrap=True)
        with _progress(enabled=not quiet and err.is_terminal) as progress:
            try:
                res = plan.run(progress)
            except RuntimeError as exc:
                fail(str(exc), code=1)
        if not quiet:
            err.print(lag_text(res.summary), highlight=False, soft_wrap=True)
            err.print(_status_text(res.summary.live or {}), highlight=False, soft_wrap=True)
            if res.summary.partial:
                err.print("[bold red]interrupted[/]: the result covers the part that ran", highlight=False)
        invalid_line(res)
        return res

    return run_one


def _status_text(live: dict[str, Any]) -> str:
    """'HTTP 200 x757, 503 x804 (overloaded: ...); connection errors 0' from the live block."""
    statuses = live.get("http_status") or {}
    reasons = live.get("http_errors") or {}
    codes = ", ".join(f"{code} x{n:,}" + (f" ({reasons[code]})" if code in reasons else "")
                      for code, n in statuses.items()) or "no response"
    conn = live.get("connection_errors") or {}
    errors = f"connection errors {conn.get('count', 0):,}" + (f" (first: {conn['first']})" if conn.get("first") else "")
    return f"  HTTP {codes}; {errors}"


def invalid_line(res: RunResult) -> None:
    """An invalid run says so on stderr, with its reasons, whatever else is shown."""
    s = res.summary
    judged = (s.live or {}).get("validity") or {}
    if not s.valid:
        err.print(f"[bold red]INVALID[/] live run of {s.target} on {s.workload}: these figures are not the "
                  "target's; `harness gate` will not judge it (exit 2)\n"
                  + "\n".join(f"  - {r}" for r in s.invalid_reasons)
                  + "".join(f"\n  for a valid run: {r}" for r in judged.get("remedies") or []),
                  highlight=False, soft_wrap=True)
    for finding in judged.get("target_findings") or []:  # the target's own overload, valid or not
        err.print(f"[bold yellow]TARGET[/] {s.target} on {s.workload}: {finding}", highlight=False, soft_wrap=True)


def nothing_succeeded(res: RunResult) -> None:
    """Exit 1 with the first error's text when a live run answered nothing successfully."""
    from harness.live.validity import first_error

    r = res.summary.requests
    if r.unique and not r.succeeded:
        why = first_error(res.summary.live or {}) or f"all {r.unique:,} requests timed out or were shed"
        fail(f"nothing succeeded: {why}", code=1)


def _require_live(mode: str) -> None:
    if mode != "live":
        fail(f"unknown mode '{mode}': valid are sim, live")


def run_live(job: SimJob, mode: str, quiet: bool, *, scale: float | None = None, model: str = "mlp",
             device: str = "auto", pad_to_s: float | None = None, template: Path | None = None,
             allow_remote: bool = False, warmup_s: float | None = None, driver_procs: int = 1,
             balancer: str = "python") -> RunResult:
    """`harness run --mode live`: plan, show and run one live run; returns its result."""
    from harness.live.plan import plan_live

    _require_live(mode)
    text = None
    if template is not None:
        from harness.live.payloads import Payloads

        try:
            text = template.read_text()
            Payloads(model, text)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            fail(f"--template {template}: {exc}")
    try:
        plan = plan_live(job.target, job.workload, job.seed, job.overrides, job.duration_s, job.rate_rps, scale,
                         model, device, pad_to_s, text, allow_remote, warmup_s=warmup_s, balancer=balancer)
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))
    return _shown_run(quiet, driver_procs)(plan)


def compare_live(a: str, b: str, workloads: list[str], seed: int, overrides: dict[str, Any],
                 duration_s: float | None, rate_rps: float | None, scale: float | None, mode: str,
                 quiet: bool, model: str = "mlp", device: str = "auto",
                 warmup_s: float | None = None, driver_procs: int = 1, balancer: str = "python") -> CompareResult:
    """`harness compare --mode live`: harness.analysis.compare.compare_live, each run shown."""
    from harness.analysis.compare import compare_live as run_compare_live

    _require_live(mode)
    try:
        return run_compare_live(a, b, workloads, seed, overrides, duration_s, rate_rps, scale, model, device,
                                run_one=_shown_run(quiet, driver_procs), warmup_s=warmup_s, balancer=balancer)
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))


def serve(
    target: str = typer.Argument(..., help="Target spec (naive, hardened, ...) or TOML file; or an LLM policy "
                                 "(llm-static, llm-dynamic, llm-continuous): the tiny decoder behind an "
                                 "OpenAI-compatible /v1/completions; or llm-fleet:router=R,replicas=N: "
                                 "replicas behind a router (R a sim router, sglang:POLICY or vllm:POLICY)."),
    port: int = typer.Option(8000, "--port", help="Port of the layer-4 proxy, the target's front door (0: any free).",
                             callback=bounded("--port", ge=0, le=65535)),
    host: str = typer.Option("127.0.0.1", "--host", help="Address the proxy binds (API servers stay on loopback)."),
    model: str = MODEL,
    device: str = DEVICE,
    pad_to_s: Optional[float] = typer.Option(None, "--pad-to-s", help="Pad each forward pass to this many s (default: the design's batch time; 0: off).",
                                             callback=bounded("--pad-to-s", ge=0, unit=" s")),
    scale: Optional[float] = LIVE_SCALE,
    tenant: Optional[List[str]] = typer.Option(None, "--tenant", help="Accept only these tenants (repeatable; default: any)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Target knob KEY=VALUE (repeatable; LLM: engine "
                                             "knobs and tenant limits, as `compare llm-A llm-B`)."),
    expose: bool = typer.Option(False, "--expose", help="Allow --host beyond loopback (serves every interface it names)."),
    token: Optional[str] = typer.Option(None, "--token", envvar="HARNESS_TOKEN",
                                        help="Bearer token /predict and /metrics require (LLM: every /v1/ path)."),
    balancer: str = BALANCER,
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="LLM policy: count usage's tokens with this "
                                            "local tokenizer.json (or its folder); the decoder keeps its bytes."),
) -> None:
    """Start a target for real (proxy, API servers, GPU workers; an LLM policy: the tiny decoder) until Ctrl-C.

    An LLM policy (llm-static, llm-dynamic, llm-continuous) is served behind an OpenAI-compatible
    /v1/completions (streaming with "stream": true) with the same binding, --token and --set flags."""
    from harness.cli.llm import is_llm
    from targets.llm.fleet import is_fleet

    if is_fleet(target):
        from harness.cli.llm_fleet_serve import serve_fleet_cmd

        unused = [flag for flag, given in (("--model", model != "mlp"), ("--device", device != "auto"),
                                           ("--pad-to-s", pad_to_s is not None), ("--scale", scale is not None),
                                           ("--tenant", bool(tenant)), ("--balancer", balancer != "python"))
                  if given]
        return serve_fleet_cmd(target, port, host, expose, token, set_ or [], unused)
    if is_llm(target):
        from harness.cli.llm import serve_llm_cmd

        unused = [flag for flag, given in (("--model", model != "mlp"), ("--device", device != "auto"),
                                           ("--pad-to-s", pad_to_s is not None), ("--scale", scale is not None),
                                           ("--tenant", bool(tenant)), ("--balancer", balancer != "python"))
                  if given]
        return serve_llm_cmd(target, port, host, expose, token, set_ or [], unused, tokenizer)
    if tokenizer is not None:
        fail("--tokenizer: only an LLM policy (llm-static, llm-dynamic, llm-continuous) counts tokens")
    from harness.live.scaling import shrink
    from harness.live.host import GC_THRESHOLDS, HostSpec, TargetHost
    from targets.frameworks import framework_name
    from targets.http.limits import check_exposure
    from targets.spec import parse_overrides, resolve_target

    if framework_name(target):
        fail(f"'{target}' is a real serving framework: a live run starts and stops it itself "
             f"(`harness run {target} --mode live`); serve it with its own command to keep it up")

    try:
        design = resolve_target(target, parse_overrides(set_ or []))
        exposed = check_exposure(host, expose)
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    cfg, info = shrink(design, scale)
    spec = HostSpec(config=cfg.model_dump(mode="json"), model=model, device=device, pad_to_s=pad_to_s,
                    proxy_host=host, proxy_port=port, tenants=list(tenant) if tenant else None,
                    expose=expose, token=token or None, balancer=balancer)

    async def main() -> None:
        th = TargetHost(spec)
        try:
            ready = await th.start()
        except (OSError, ValueError, RuntimeError) as exc:
            await th.stop()
            fail(str(exc), code=1)
        gc.collect()
        gc.freeze()  # as a live run's host does: full collections never scan the models and the app
        gc.set_threshold(*GC_THRESHOLDS)  # and its collections as rare as the host's (harness.live.host)
        pad = ready["pad_to_s"]
        servers = ", ".join(str(p) for p in ready["api_ports"])
        front = ready["balancer"]
        front_text = (f"HAProxy {front['version']} (pid {front['pid']}, mode {front['policy']['mode']}, "
                      f"balance {front['policy']['balance']})" if front["kind"] == "haproxy" else "the layer-4 proxy")
        out.print(f"serving {target} at http://{host}:{ready['proxy_port']}/predict (and /healthz, /metrics)"
                  f" behind {front_text}\n"
                  f"  {cfg.api_servers} API server(s) on port(s) {servers}; {ready['gpus']} GPU worker(s): "
                  f"{model} on {ready['device']}{f', padded to {pad * 1000:.0f} ms' if pad else ''}\n"
                  f"  scale {info.effective:.4g} of the design: {cfg.peak_qps:,.0f} req/s peak\n"
                  '  body: {"tenant", "request_id"?, "deadline_ms"?, "input"}; Ctrl-C stops',
                  highlight=False, soft_wrap=True)
        served_notice(exposed, host, ready["proxy_port"], "/predict, /healthz and /metrics", "/predict and /metrics",
                      token)
        await until_stopped()
        await th.stop()
        out.print("stopped", highlight=False)

    from harness.live.driver_loop import new_loop

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())


def profile(
    model: str = typer.Argument(..., help="mlp, cnn, transformer, llm (the tiny decoder's step cost) or frontend (CPU per request)."),
    device: str = DEVICE,
    out_path: Optional[Path] = typer.Option(None, "--out", help="Cost table file (default: runs/costs-MODEL-DEVICE.json).",
                                            callback=writable_file("--out")),
    batch_sizes: str = typer.Option("1,2,4,8,16,32,64", "--batch-sizes", help="Comma-separated batch sizes."),
    lengths: Optional[str] = typer.Option(None, "--lengths", help="Comma-separated input lengths (sequence models)."),
    repeats: int = typer.Option(5, "--repeats", help="Timed batches per round (the median of all rounds is kept).",
                                callback=bounded("--repeats", ge=1)),
    max_rounds: int = typer.Option(5, "--max-rounds", help="Rounds per point at most, until its median moves < 5%.",
                                   callback=bounded("--max-rounds", ge=1)),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch intra-op threads (default: torch's).",
                                          callback=bounded("--threads", ge=1)),
    profiles: int = typer.Option(3, "--profiles", help="frontend: fresh hosts profiled one after another; their "
                                 "median is printed (profiles minutes apart differ by +-20% here).",
                                 callback=bounded("--profiles", ge=1, le=20)),
    scale: Optional[float] = typer.Option(None, "--scale", help="frontend: profile the live host of this scale, "
                                          "batches padded as a live run pads them, and print the sim knobs for "
                                          "its fleet (default: the default fleet, unpadded).",
                                          callback=bounded("--scale", gt=0, le=1)),
) -> None:
    """Measure batch time against batch size on this machine; write a cost table for sim."""
    if model == "frontend":  # the live front end's CPU per request (harness.cli.frontend)
        from harness.cli.frontend import profile_frontend_cmd

        return profile_frontend_cmd(profiles=profiles, scale=scale)
    if model == "llm":  # the tiny decoder: step cost, not batch time (harness.cli.llm)
        from harness.cli.llm import profile_llm_cmd

        return profile_llm_cmd(out_path, repeats, threads)
    if model not in MODELS:
        fail(f"MODEL '{model}': valid are {', '.join(MODELS)}")
    sizes = int_list("--batch-sizes", batch_sizes)
    lens = int_list("--lengths", lengths) if lengths else None
    from harness.live.profile import profile as run_profile

    shown = err.is_terminal

    def point(pt) -> None:
        if shown:
            err.print(f"  batch {pt.batch}{'' if pt.length is None else f' x {pt.length} tokens'}: "
                      f"{pt.seconds * 1000:.2f} ms", highlight=False)

    try:
        prof = run_profile(model, device, sizes, lens, repeats, threads=threads, progress=point,
                           max_rounds=max_rounds)
    except (ValueError, RuntimeError) as exc:
        fail(str(exc))
    table = prof.table
    path = out_path or Path("runs") / f"costs-{model}-{table.device.split(' ')[0].replace(':', '')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_json(path)
    rounds = sorted(set(prof.rounds.values()))
    out.print(f"{model} on {table.device}: torch {table.torch}, {table.threads} threads; median of "
              f"{rounds[0]}-{rounds[-1]} rounds of {repeats} batches (until it moved < 5%)"
              if len(rounds) > 1 else
              f"{model} on {table.device}: torch {table.torch}, {table.threads} threads; median of "
              f"{rounds[0]} round(s) of {repeats} batches", highlight=False)
    t = Table(header_style="bold")
    for col in ("batch", "length", "batch ms", "req/s", "rounds"):
        t.add_column(col, justify="right")
    for p in table.points:
        t.add_row(str(p.batch), "-" if p.length is None else str(p.length), f"{p.seconds * 1000:.2f}",
                  f"{p.batch / p.seconds:,.0f}" if p.seconds else "-", str(prof.rounds[(p.batch, p.length)]))
    out.print(t)
    for line in prof.unstable + prof.warnings:
        err.print(f"[bold yellow]warning:[/] {line}", highlight=False, soft_wrap=True)
    out.print(f"cost table: {path}\nuse it in sim:\n  harness run naive --set cost_model=table "
              f"--set cost_table={path}", highlight=False, soft_wrap=True)
