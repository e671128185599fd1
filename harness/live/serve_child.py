"""A fresh `harness serve TARGET --port 0` in a child process, for checks that need a server
that has served nothing yet (its first run's figures against its second's, a figure's spread
over fresh servers: benchmarks/live_repeat.py, tests/harness/test_warm_first_run_live.py).

The child binds 127.0.0.1 only (serve's default); `start_serve` returns once it prints the
address it serves, and `stop_serve` ends it (SIGINT, as Ctrl-C: it stops its host cleanly),
bounded in time both ways.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import IO
from pathlib import Path

__all__ = ["start_serve", "stop_child", "stop_serve"]

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"serving \S+ at http://127\.0\.0\.1:(\d+)(/\S*)")


def start_serve(target: str, extra: list[str] | None = None, ready_s: float = 180.0) -> tuple[subprocess.Popen, str]:
    """`harness serve TARGET --port 0 EXTRA...`; the child and its URL once it serves.
    RuntimeError (with its last output) when it does not start within `ready_s`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli import app; app()", "serve", target,
                             "--port", "0", *(extra or [])], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen: list[str] = []
    t_end = time.monotonic() + ready_s
    while time.monotonic() < t_end:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        m = READY.search(line)
        if m:
            # read the rest as it comes, so a chatty server never blocks on a full pipe
            threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
            return proc, f"http://127.0.0.1:{m.group(1)}{m.group(2)}"
    stop_serve(proc)
    raise RuntimeError(f"`harness serve {target}` did not start within {ready_s:g} s: " + " | ".join(seen[-3:]))


def _drain(stream: IO[str]) -> None:
    try:
        for _ in stream:
            pass
    except (OSError, ValueError):  # closed by stop_serve
        pass


def stop_serve(proc: subprocess.Popen, within_s: float = 20.0) -> None:
    """Ctrl-C the child, then kill it if it is still there after `within_s`."""
    stop_child(proc, signal.SIGINT, within_s)


def stop_child(proc: subprocess.Popen, sig: int = signal.SIGTERM, within_s: float = 10.0) -> None:
    """Send a child process `sig`, then kill it if it is still there after `within_s`."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(within_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
