"""Measure a live front end's CPU per request: the figure the sim's `frontend_cost_s` knob wants.

Everything in front of the GPU workers (the layer-4 proxy, the API servers,
their JSON parsing, the target's policies) runs on one event loop, the host
process's main thread; GPU workers are other threads. So the front end's CPU
per request is that thread's CPU time over the requests it answered, read
from /proc/PID/task/PID/stat while `harness serve` is driven at a rate well
under saturation (a saturated loop also burns CPU on connections it cannot
serve). A warm-up run goes first and is not counted.

Linux only (/proc); `ValueError` elsewhere.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = ["FrontendCost", "main_thread_cpu_s", "profile_frontend", "serve_process"]

_READY = re.compile(r"serving \S+ at http://[^:]+:(\d+)/predict")


@dataclass(frozen=True)
class FrontendCost:
    """CPU seconds the host's event loop spent per answered request, and what it was measured on."""

    cost_s: float
    requests: int
    cpu_s: float
    rate_rps: float
    duration_s: float
    p99_s: float | None
    valid: bool


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


def profile_frontend(target: str = "hardened", rate_rps: float = 200.0, duration_s: float = 6.0,
                     model: str = "mlp", overrides: list[str] | None = None) -> FrontendCost:
    """Start `harness serve TARGET --pad-to-s 0`, warm it, drive it at ``rate_rps`` for
    ``duration_s`` and return its event loop's CPU per answered request."""
    from harness.live.plan import plan_live

    proc, port = serve_process(target, model, overrides or [])
    try:
        url = f"http://127.0.0.1:{port}/predict"
        plan_live(url, "steady", duration_s=2.0, rate_rps=rate_rps, model=model, warmup_s=0).run()  # warm-up
        before = main_thread_cpu_s(proc.pid)
        res = plan_live(url, "steady", duration_s=duration_s, rate_rps=rate_rps, model=model, warmup_s=0).run()
        cpu = main_thread_cpu_s(proc.pid) - before
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    s = res.summary
    n = max(1, s.requests.attempts)
    return FrontendCost(cost_s=cpu / n, requests=n, cpu_s=cpu, rate_rps=rate_rps, duration_s=duration_s,
                        p99_s=s.attempt_latency_ok_s.p99, valid=s.valid)
