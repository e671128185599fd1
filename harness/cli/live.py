"""Live-mode commands: `run --mode live`, `compare --mode live`, `serve` and `profile`.

Only parsing, printing and calling the library (harness.live.run, harness.live.host,
harness.live.profile) live here.
"""

from __future__ import annotations

import asyncio
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional
from urllib.parse import urlsplit

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.cli.common import err, fail, out
from harness.engine.jobs import SimJob
from harness.results import CompareResult
from workloads.loader import ConfigError, load_workload


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


def _parse_url(text: str, allow_remote: bool) -> tuple[str, int, str]:
    from harness.live.run import is_loopback

    u = urlsplit(text)
    if u.scheme != "http" or not u.hostname:
        fail(f"target URL '{text}': only http://HOST:PORT/PATH is supported")
    if not allow_remote and not is_loopback(u.hostname):
        fail(f"target URL '{text}' is outside loopback; pass --allow-remote to load-test another host")
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    return u.hostname, u.port or 80, path


def _live_run(target: str, workload: str, seed: int, overrides: dict[str, Any], duration_s: float | None,
              rate_rps: float | None, scale: float | None, model: str, device: str, pad_to_s: float | None,
              template: Path | None, allow_remote: bool, quiet: bool, scale_from: Any = None) -> dict[str, Any]:
    from harness.live.http_transport import Payloads
    from harness.live.run import LiveRun, default_scale, fmt_lag, scale_for_live, snap_scale
    from harness.live.host import HostSpec
    from targets.spec import resolve_target

    try:
        wl = load_workload(workload)
        if duration_s:
            wl = wl.scaled(1.0, duration_s)
        asked = scale or (rate_rps / wl.peak_rps if rate_rps and wl.peak_rps else default_scale(wl))
        payloads = Payloads(model, template.read_text() if template else None, seed)
        if "://" in target:
            url = _parse_url(target, allow_remote)
            cfg = resolve_target("naive", {**overrides, "name": target})
            wl = wl.scaled(asked)
            plan = f"live: {target} on {wl.name}, scale {asked:.4g}: {wl.peak_rps:,.0f} req/s peak"
            run = LiveRun(cfg, wl, seed, None, url=url, payloads=payloads)
        else:
            design = resolve_target(target, overrides)
            eff = snap_scale(scale_from or design, asked)
            cfg, info = scale_for_live(design, eff)
            from dataclasses import replace

            info = replace(info, requested=asked)
            wl = wl.scaled(eff)
            spec = HostSpec(config=cfg.model_dump(mode="json"), model=model, device=device, pad_to_s=pad_to_s,
                            tenants=[t.name for t in wl.tenants], seed=seed)
            pad = spec.effective_pad_s(cfg)
            plan = (f"live: {target} on {wl.name}, scale {eff:.4g} (asked {asked:.4g}): {wl.peak_rps:,.0f} req/s peak\n"
                    f"  {cfg.api_servers} API server(s), {cfg.fleet_gpus} GPU worker(s) running {model}"
                    f"{f' padded to {pad * 1000:.0f} ms' if pad else ''}\n"
                    f"  per GPU {info.per_gpu_rps_live:,.0f} req/s (design {info.per_gpu_rps_design:,.0f}); "
                    f"per API server {info.per_server_rps_live:,.0f} (design {info.per_server_rps_design:,.0f})")
            run = LiveRun(cfg, wl, seed, spec, scaling=info, payloads=payloads)
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))
    if not quiet:
        err.print(plan, highlight=False, soft_wrap=True)
    with _progress(enabled=not quiet and err.is_terminal) as progress:
        run.progress = progress
        try:
            doc = run.run()
        except RuntimeError as exc:
            fail(str(exc), code=1)
    if not quiet:
        err.print(fmt_lag(doc["summary"]["live"]), highlight=False, soft_wrap=True)
        if doc["summary"]["partial"]:
            err.print("[bold red]interrupted[/]: the result covers the part that ran", highlight=False)
    return doc


def run_live(job: SimJob, mode: str, quiet: bool, *, scale: float | None = None, model: str = "mlp",
             device: str = "auto", pad_to_s: float | None = None, template: Path | None = None,
             allow_remote: bool = False) -> dict[str, Any]:
    """`harness run --mode live`: one live run; returns its result document."""
    if mode != "live":
        fail(f"unknown mode '{mode}': valid are sim, live")
    return _live_run(job.target, job.workload, job.seed, job.overrides, job.duration_s, job.rate_rps, scale,
                     model, device, pad_to_s, template, allow_remote, quiet)


def compare_live(a: str, b: str, workloads: list[str], seed: int, overrides: dict[str, Any],
                 duration_s: float | None, rate_rps: float | None, scale: float | None, mode: str,
                 quiet: bool, model: str = "mlp", device: str = "auto") -> dict[str, Any]:
    """`harness compare --mode live`: each workload on A then B, one at a time
    (both need the machine), at one scale snapped from A; the sim's document shape."""
    from targets.spec import resolve_target

    if mode != "live":
        fail(f"unknown mode '{mode}': valid are sim, live")
    try:
        base = resolve_target(a, overrides)
    except ConfigError as exc:
        fail(str(exc))
    label_b = b if b != a else f"{b} (B)"
    scenarios: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    for w in workloads:
        for target, side in ((a, a), (b, label_b)):
            doc = _live_run(target, w, seed, overrides, duration_s, rate_rps, scale, model, device, None, None,
                            False, quiet, scale_from=base)
            scenarios.setdefault(w, {})[side] = doc["summary"]
            runs.setdefault(w, {})[side] = doc
            if doc["summary"]["partial"]:
                break
        if any(s["partial"] for s in scenarios[w].values()):
            break
    return CompareResult(a=a, b=label_b, seed=seed, mode="live", scenarios=scenarios, runs=runs)


def serve(
    target: str = typer.Argument(..., help="Target spec (naive, hardened, ...) or TOML file."),
    port: int = typer.Option(8000, "--port", help="Port of the layer-4 proxy, the target's front door (0: any free)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address the proxy binds (API servers stay on loopback)."),
    model: str = typer.Option("mlp", "--model", help="Torch model the GPU workers run: mlp, cnn or transformer."),
    device: str = typer.Option("auto", "--device", help="auto (cuda when present), cpu or cuda."),
    pad_to_s: Optional[float] = typer.Option(None, "--pad-to-s", help="Pad each forward pass to this many s (default: the design's batch time; 0: off)."),
    scale: Optional[float] = typer.Option(None, "--scale", help="Shrink the fleet (default: one GPU's worth at the design's per-GPU rate)."),
    tenant: Optional[List[str]] = typer.Option(None, "--tenant", help="Accept only these tenants (repeatable; default: any)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Target knob KEY=VALUE (repeatable)."),
) -> None:
    """Start a target for real (proxy, API servers, GPU workers) until Ctrl-C."""
    from harness.live.run import DEFAULT_PEAK_RPS, scale_for_live, snap_scale
    from harness.live.host import HostSpec, TargetHost
    from targets.spec import parse_overrides, resolve_target

    try:
        design = resolve_target(target, parse_overrides(set_ or []))
    except ConfigError as exc:
        fail(str(exc))
    cfg, info = scale_for_live(design, snap_scale(design, scale or DEFAULT_PEAK_RPS / design.peak_qps))
    spec = HostSpec(config=cfg.model_dump(mode="json"), model=model, device=device, pad_to_s=pad_to_s,
                    proxy_host=host, proxy_port=port, tenants=list(tenant) if tenant else None)

    async def main() -> None:
        th = TargetHost(spec)
        try:
            ready = await th.start()
        except (OSError, ValueError, RuntimeError) as exc:
            await th.stop()
            fail(str(exc), code=1)
        pad = ready["pad_to_s"]
        servers = ", ".join(str(p) for p in ready["api_ports"])
        out.print(f"serving {target} at http://{host}:{ready['proxy_port']}/predict (and /healthz, /metrics)\n"
                  f"  {cfg.api_servers} API server(s) on port(s) {servers}; {ready['gpus']} GPU worker(s): "
                  f"{model} on {ready['device']}{f', padded to {pad * 1000:.0f} ms' if pad else ''}\n"
                  f"  scale {info.effective:.4g} of the design: {cfg.peak_qps:,.0f} req/s peak\n"
                  '  body: {"tenant", "request_id"?, "deadline_ms"?, "input"}; Ctrl-C stops',
                  highlight=False, soft_wrap=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await th.stop()
        out.print("stopped", highlight=False)

    from harness.live.http_transport import new_loop

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())


def profile(
    model: str = typer.Argument(..., help="mlp, cnn or transformer."),
    device: str = typer.Option("auto", "--device", help="auto (cuda when present), cpu or cuda."),
    out_path: Optional[Path] = typer.Option(None, "--out", help="Cost table file (default: runs/costs-MODEL-DEVICE.json)."),
    batch_sizes: str = typer.Option("1,2,4,8,16,32,64", "--batch-sizes", help="Comma-separated batch sizes."),
    lengths: Optional[str] = typer.Option(None, "--lengths", help="Comma-separated input lengths (sequence models)."),
    repeats: int = typer.Option(5, "--repeats", help="Timed batches per point (the median is kept)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch intra-op threads (default: torch's)."),
) -> None:
    """Measure batch time against batch size on this machine; write a cost table for sim."""
    from harness.live.profile import profile_model

    try:
        sizes = tuple(int(x) for x in batch_sizes.split(",") if x)
        lens = tuple(int(x) for x in lengths.split(",") if x) if lengths else None
        shown = err.is_terminal

        def point(pt) -> None:
            if shown:
                err.print(f"  batch {pt.batch}{'' if pt.length is None else f' x {pt.length} tokens'}: "
                          f"{pt.seconds * 1000:.2f} ms", highlight=False)

        table = profile_model(model, device, sizes, lens, repeats, threads=threads, progress=point)
    except (ValueError, RuntimeError) as exc:
        fail(str(exc))
    path = out_path or Path("runs") / f"costs-{model}-{table.device.split(' ')[0].replace(':', '')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_json(path)
    out.print(f"{model} on {table.device}: torch {table.torch}, {table.threads} threads; median of {repeats}",
              highlight=False)
    t = Table(header_style="bold")
    for col in ("batch", "length", "batch ms", "req/s"):
        t.add_column(col, justify="right")
    for p in table.points:
        t.add_row(str(p.batch), "-" if p.length is None else str(p.length), f"{p.seconds * 1000:.2f}",
                  f"{p.batch / p.seconds:,.0f}" if p.seconds else "-")
    out.print(t)
    out.print(f"cost table: {path}\nuse it in sim:\n  harness run naive --set cost_model=table "
              f"--set cost_table={path}", highlight=False, soft_wrap=True)
