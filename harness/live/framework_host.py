"""A framework target's live host: a real framework server in a subprocess, on loopback.

`FrameworkSpec` is what a live run of a framework target (targets.frameworks)
needs: the framework, its knobs, the workers and batch size at the run's scale,
the model and the pad. `FrameworkProcess` answers what a live run asks of a
host (harness.live.host_process.HostProcess's `start`, `request`, `stop`, `kill`), so a
`LiveRun` drives it as it drives the harness's own:

- `start()`: a control folder of its own, a free port on 127.0.0.1, the server
  started as `python -m MODULE FOLDER/spec.json` in a session of its own (its
  output in FOLDER/server.log); ready once a /predict answers 200 (the server's
  own workers are up), then warmed with a batch per worker at once. The ready
  message says the framework's installed version.
- `request("sample" | "stats")`: read from the books its processes keep
  (targets.frameworks.books): requests inside the server, batches, busy seconds;
  `stats` as a target snapshot, so GPU utilisation and batch fill are reported.
- `request("slowdown", factor=F)`: every worker's batches take F times as long.
- `request("kill" | "revive")`: RuntimeError: a framework target takes no
  GPU-down fault (the run records it as a failed fault).
- `stop()`: SIGTERM, a grace period, then SIGKILL to its whole process group
  (LitServe's API servers and Ray's agents outlive their parent otherwise);
  `kill()` the same at once. The control folder goes with it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.live.host import HostSpec
from harness.live.host_process import HostProcess
from harness.live.host_warmup import warm_http
from harness.live.payloads import Payloads
from targets.config import TargetConfig
from targets.frameworks.books import Field, read_books, write_slowdown
from targets.frameworks.registry import get_framework, installed_version
from targets.frameworks.server_spec import ServerSpec
from targets.frameworks.spec import FrameworkTarget
from targets.snapshot import PoolSnapshot, TargetSnapshot, WastedSnapshot

__all__ = ["FrameworkProcess", "FrameworkSpec", "framework_spec", "host_process"]

READY_TIMEOUT_S = 240.0   # Ray on a busy 2-core machine took 20-60 s
STOP_GRACE_S = 10.0
_WARM_CONTENT = 1 << 30   # content ids far above the workloads' (no cache to hit anyway)


@dataclass(frozen=True)
class FrameworkSpec:
    """A framework server for one live run (plain data): `workers` model workers, batches of
    up to `batch_size`, each held to `pad_to_s` seconds (None: not padded)."""

    framework: str
    knobs: dict[str, Any]
    workers: int
    batch_size: int
    pad_to_s: float | None
    model: str = "mlp"
    seed: int = 0
    threads: int = 1
    flaws: list[str] = field(default_factory=list)
    tenants: list[str] | None = None
    changed: dict[str, Any] = field(default_factory=dict)  # the knobs set off the framework's defaults

    def effective_pad_s(self, cfg: TargetConfig) -> float | None:
        return self.pad_to_s

    def describe(self) -> str:
        knobs = ", ".join(f"{k}={v}" for k, v in self.changed.items()) or "its defaults"
        return f"{self.framework} ({knobs}): {self.workers} worker(s), batches up to {self.batch_size}"


def framework_spec(target: FrameworkTarget, cfg: TargetConfig, model: str, seed: int,
                   tenants: list[str] | None = None) -> FrameworkSpec:
    """The server a live run of `target` starts, for the design `cfg` scaled to the run."""
    return FrameworkSpec(framework=target.framework.name, knobs=target.knobs.model_dump(mode="json"),
                         workers=target.workers(cfg), batch_size=target.batch_size(), pad_to_s=target.pad_s(),
                         model=model, seed=seed, threads=target.knobs.torch_threads, flaws=target.flaws(),
                         tenants=tenants, changed=target.knobs.model_dump(mode="json", exclude_defaults=True))


def host_process(spec: HostSpec | FrameworkSpec) -> HostProcess | FrameworkProcess:
    """The process a live run starts for `spec`: the harness's own host, or a framework's server."""
    return FrameworkProcess(spec) if isinstance(spec, FrameworkSpec) else HostProcess(spec)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, theirs, ...), from /proc; [] where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _until_gone(pids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


class FrameworkProcess:
    """A framework server in a child process (see the module docstring)."""

    def __init__(self, spec: FrameworkSpec) -> None:
        self.spec = spec
        self.framework = get_framework(spec.framework)
        self.proc: subprocess.Popen | None = None
        self.folder: Path | None = None
        self.ready: dict[str, Any] = {}

    async def start(self, timeout_s: float = READY_TIMEOUT_S) -> dict[str, Any]:
        fw, spec = self.framework, self.spec
        version = installed_version(fw)
        if version is None:
            raise RuntimeError(f"{fw.name} is not installed: pip install -e '.[frameworks]'")
        started = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="hfw-"))
        port = free_port()
        server = ServerSpec(framework=fw.name, port=port, control_dir=str(self.folder), workers=spec.workers,
                            batch_size=spec.batch_size, knobs=spec.knobs, model=spec.model, seed=spec.seed,
                            pad_to_s=spec.pad_to_s, threads=spec.threads)
        server.write(self.folder / "spec.json")
        log = open(self.folder / "server.log", "wb")
        try:
            # A session of its own: its process group is stopped whole, and a terminal's Ctrl-C
            # reaches only the harness, which stops it.
            self.proc = subprocess.Popen([sys.executable, "-m", fw.module, str(self.folder / "spec.json")],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        finally:
            log.close()
        payloads = Payloads(spec.model, seed=spec.seed)
        tenant = spec.tenants[0] if spec.tenants else "warmup"
        body = payloads.body(tenant, _WARM_CONTENT, 64, "warmup-ready", None)
        await self._until_ready(port, body, timeout_s)
        up_s = time.perf_counter() - started
        bodies = [payloads.body(tenant, _WARM_CONTENT + i, 64, f"warmup-{i}", None)
                  for i in range(spec.batch_size * spec.workers)]
        warmed = await warm_http(port, bodies)
        warmed.update({"start_s": up_s, "total_s": time.perf_counter() - started})
        self.ready = {"ready": True, "proxy_port": port, "api_ports": [], "gpus": spec.workers, "device": "cpu",
                      "model": spec.model, "pad_to_s": spec.pad_to_s, "pid": self.proc.pid, "warmup": warmed,
                      "framework": {"name": fw.name, "version": version, "knobs": spec.knobs,
                                    "workers": spec.workers, "batch_size": spec.batch_size, "flaws": spec.flaws}}
        return self.ready

    async def _until_ready(self, port: int, body: bytes, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc is None or self.proc.poll() is not None:
                tail = self.log_tail()
                self.kill()
                raise RuntimeError(f"{self.framework.name} server exited during start: {tail}")
            answers = await warm_http(port, [body], timeout_s=2.0)
            if answers["http_status"].get("200"):
                return
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.kill()
                raise RuntimeError(f"{self.framework.name} server not ready after {timeout_s:.0f} s: {tail}")
            await asyncio.sleep(0.5)

    def log_tail(self, chars: int = 600) -> str:
        if self.folder is None:
            return "(no log)"
        try:
            text = (self.folder / "server.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text[-chars:].strip().splitlines()[-6:]) or "(empty log)"

    # -- what a live run asks -------------------------------------------------------------------
    async def request(self, op: str, timeout_s: float = 10.0, **kw: Any) -> dict[str, Any]:
        if self.folder is None:
            raise RuntimeError("framework server not started")
        if op == "sample":
            b = read_books(self.folder)
            return {"queue_depth": int(b[Field.RECEIVED] - b[Field.ANSWERED]), "busy_gpu_s": b[Field.BUSY_S],
                    "alive": int(b[Field.WORKERS])}
        if op == "stats":
            return {"snapshot": self.snapshot().to_dict(), "proxy": None, "executors": None}
        if op == "slowdown":
            write_slowdown(self.folder, float(kw["factor"]))
            return {"factor": float(kw["factor"])}
        if op in ("kill", "revive"):
            raise RuntimeError(f"a framework target ({self.framework.name}) takes no GPU-down fault")
        return {"error": f"unknown op {op!r}"}

    def snapshot(self) -> TargetSnapshot:
        b = read_books(self.folder)  # type: ignore[arg-type]
        pool = PoolSnapshot(gpus=self.spec.workers, alive=int(b[Field.WORKERS]), batches=int(b[Field.BATCHES]),
                            items=int(b[Field.ITEMS]), largest_batch=int(b[Field.LARGEST]),
                            busy_gpu_s=b[Field.BUSY_S], finished_busy_s=b[Field.BUSY_S],
                            last_done_s=b[Field.LAST_DONE_S])
        return TargetSnapshot(pool=pool, wasted=WastedSnapshot(), received=int(b[Field.RECEIVED]))

    async def stop(self, timeout_s: float = STOP_GRACE_S) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while p.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        self.kill()

    def kill(self) -> None:
        """Synchronous and certain: the child, its process group and every process it started
        (Ray's actors run in sessions of their own) killed, the child reaped, the folder gone."""
        p = self.proc
        if p is not None:
            family = descendants(p.pid)  # before anyone dies: orphans lose their parent link
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(2.0)
                except subprocess.TimeoutExpired:
                    pass
            for pid in family:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # what is left of its session: workers, agents
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(5.0)
            except subprocess.TimeoutExpired:
                pass
            _until_gone(family, timeout_s=5.0)  # a SIGKILL lands, the process ends a moment later
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
