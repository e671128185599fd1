"""Locust as a driver: a headless master and N workers in subprocesses, read back into a run result.

Importing locust monkey-patches sockets, select and threading (gevent), so the
harness never imports it: it writes a locustfile (harness.live.locust_file),
starts `python -m locust` as a headless master expecting ``workers`` workers
(Locust's own distributed mode, the one that spans machines with
`--master-host`), waits for the shape to end, then reads the per-process
request records the locustfile's event hook wrote and replays them into the
same Recorder the built-in driver uses, so the result is the same document
(`kind: run`, mode live) with `live.driver = "locust"`.

A Locust user's latency runs from the moment it actually sent, so each
request's "scheduled" start here is its send time: the coordinated omission
the built-in open-loop driver avoids, kept visible rather than corrected.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from harness.engine.recorder import Recorder
from harness.engine.summary import build_document
from harness.live.locust_file import LIMITS_TEXT, PER_USER_RPS, locustfile_text
from harness.results.run import RunResult
from targets.config import TargetConfig
from targets.protocol import Status
from workloads.model import WorkloadConfig

__all__ = ["run_locust", "run_locust_hosted", "records_to_result", "status_of"]

_GRACE_S = 60.0


def status_of(http: int, latency_s: float, timeout_s: float) -> Status:
    """The client outcome of one Locust record (http 0: no HTTP answer; a timeout if it took the timeout)."""
    if http == 200:
        return Status.OK
    if http == 429:
        return Status.TOO_MANY
    if http == 503:
        return Status.UNAVAILABLE
    if http == 0 and latency_s >= 0.99 * timeout_s:
        return Status.TIMEOUT
    return Status.ERROR


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records_to_result(records: list[list[Any]], config: TargetConfig, workload: WorkloadConfig, seed: int,
                      wall_s: float, live: dict[str, Any]) -> RunResult:
    """A run result from Locust records [start_epoch_s, latency_s, http_status, tenant]."""
    records = sorted(records, key=lambda r: r[0])
    tenants = tuple(t.name for t in workload.tenants)
    index = {name: i for i, name in enumerate(tenants)}
    t0 = records[0][0] if records else 0.0
    sched = np.array([r[0] - t0 for r in records], dtype=float)
    tenant = np.array([index.get(r[3], 0) for r in records], dtype=np.int16)
    rec = Recorder(sched, tenant, tenants, config.slo_s, workload.duration_s, workload.window_s)
    statuses: dict[str, int] = {}
    for i, (_, lat, http, _t) in enumerate(records):
        st = status_of(int(http), float(lat), config.client_timeout_s)
        statuses[str(http)] = statuses.get(str(http), 0) + 1
        rec.attempt(st, sched[i], float(lat))
        rec.finish(i, st, sched[i] + float(lat), 1)
    end_s = float(max((s + r[1] for s, r in zip(sched, records)), default=0.0))
    block = {**live, "http_status": statuses, "requests_recorded": len(records)}
    return build_document(rec, config, workload, None, seed, "live", end_s, wall_s, False, [],
                          extra={"live": block})


def _locust(folder: Path, workload: WorkloadConfig, timeout_s: float, url: str, workers: int, model: str = "mlp",
            template: str | None = None) -> tuple[subprocess.Popen, list[subprocess.Popen]]:
    """Start a headless Locust master and its ``workers`` (its shape starts once all have joined),
    posting ``model``'s input (or ``template`` filled in) to ``url``'s path."""
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lf = folder / "locustfile.py"
    lf.write_text(locustfile_text(workload, timeout_s, model, template, path))
    env = {**os.environ, "HARNESS_LOCUST_OUT": str(folder)}
    port = _free_port()
    common = [sys.executable, "-m", "locust", "-f", str(lf), "--loglevel", "WARNING", "--skip-log-setup"]
    master = subprocess.Popen(common + ["--headless", "--master", "--master-bind-host", "127.0.0.1",
                                        "--master-bind-port", str(port), "--expect-workers", str(workers),
                                        "--host", f"{parts.scheme}://{parts.netloc}", "--only-summary"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    procs = [subprocess.Popen(common + ["--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(workers)]
    return master, procs


def _finish(master: subprocess.Popen, procs: list[subprocess.Popen], folder: Path, timeout_s: float
            ) -> list[list[Any]]:
    """Wait for the master, stop the workers, and read every record they wrote."""
    try:
        _, err = master.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        master.kill()
        _, err = master.communicate()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    records: list[list[Any]] = []
    for f in folder.glob("records-*.jsonl"):
        records += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    if not records:
        raise RuntimeError(f"Locust recorded no request (master said: {(err or '').strip()[-300:]})")
    return records


def _live_block(url: str | None, workers: int, model: str, template: bool) -> dict[str, Any]:
    return {"driver": "locust", "locust_workers": workers, "locust_per_user_rps": PER_USER_RPS,
            "locust_limits": LIMITS_TEXT, "external_url": url, "model": model, "body_template": template}


def run_locust(url: str, workload: WorkloadConfig, config: TargetConfig, workers: int = 2, seed: int = 1,
               model: str = "mlp", template: str | None = None) -> RunResult:
    """Drive ``url`` (http://HOST:PORT/PATH) with Locust, master + ``workers`` worker processes, each
    request ``model``'s input or ``template`` filled in (harness.live.locust_file)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-locust-") as tmp:
        master, procs = _locust(Path(tmp), workload, config.client_timeout_s, url, workers, model, template)
        records = _finish(master, procs, Path(tmp), workload.duration_s + _GRACE_S)
    return records_to_result(records, config, workload, seed, time.perf_counter() - started,
                             _live_block(url, workers, model, template is not None))


def run_locust_hosted(plan: Any, workers: int = 2) -> RunResult:
    """Start ``plan``'s target host (harness.live.plan.LivePlan), drive it with Locust and inject
    the workload's faults (slowdowns, GPUs down) on its schedule, as the built-in driver's runs do.

    The fault clock starts when the master starts; Locust's shape starts once its workers
    join (about a second later), so faults land up to that much early in Locust's time."""
    import asyncio

    from harness.live.host_process import HostProcess
    from workloads.model import FaultKind

    async def main(folder: Path) -> list[list[Any]]:
        host = HostProcess(plan.spec)
        try:
            ready = await host.start()
            url = f"http://127.0.0.1:{ready['proxy_port']}/predict"
            master, procs = _locust(folder, plan.workload, plan.config.client_timeout_s, url, workers,
                                    plan.payloads.model)
            loop = asyncio.get_running_loop()
            t0 = loop.time()

            async def fault(f: Any) -> None:
                await asyncio.sleep(max(0.0, t0 + f.at_s - loop.time()))
                if f.kind is FaultKind.GPU_DOWN:
                    down = (await host.request("kill", fraction=f.fraction))["gpus"]
                    await asyncio.sleep(f.duration_s)
                    await host.request("revive", gpus=down)
                else:
                    await host.request("slowdown", factor=f.factor)
                    await asyncio.sleep(f.duration_s)
                    await host.request("slowdown", factor=1.0)

            tasks = [loop.create_task(fault(f)) for f in plan.workload.faults]
            records = await asyncio.to_thread(_finish, master, procs, folder, plan.workload.duration_s + _GRACE_S)
            for t in tasks:
                t.cancel()
            return records
        finally:
            await host.stop()

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-locust-") as tmp:
        records = asyncio.run(main(Path(tmp)))
    return records_to_result(records, plan.config, plan.workload, plan.seed, time.perf_counter() - started,
                             _live_block(None, workers, plan.payloads.model, False))
