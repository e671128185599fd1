"""The parent's handle on a live target host in a child process (`python -m harness.live.host`).

The child's side (and the JSON-lines protocol both speak) is harness.live.host: the HostSpec as
the first line, one ready line, then one answer per request carrying its id.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import asdict
from typing import Any

from harness.live.host import HostSpec

__all__ = ["HostProcess"]


class HostProcess:
    """A target host in a child process, spoken to over its stdin/stdout (JSON lines)."""

    def __init__(self, spec: HostSpec) -> None:
        self.spec = spec
        self.proc: subprocess.Popen | None = None
        self.ready: dict[str, Any] = {}
        self._reader: asyncio.StreamReader | None = None
        self._lock = asyncio.Lock()
        self._seq = 0

    async def start(self, timeout_s: float = 120.0) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        # A new session: a terminal's Ctrl-C reaches only the parent, which stops the host.
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.live.host"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True)
        reader = self._reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.proc.stdout)
        self._write({k: v for k, v in asdict(self.spec).items()})
        line = await asyncio.wait_for(self._reader.readline(), timeout_s)
        self.ready = json.loads(line) if line else {"ready": False, "error": "host exited during start"}
        if not self.ready.get("ready"):
            self.kill()
            raise RuntimeError(f"live target host failed to start: {self.ready.get('error')}")
        return self.ready

    def _write(self, obj: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    async def request(self, op: str, timeout_s: float = 10.0, **kw: Any) -> dict[str, Any]:
        """Send one request and return its answer. Answers carry the request's id, so
        the answer to a request whose caller was cancelled is skipped, not misread."""
        async with self._lock:
            self._seq += 1
            self._write({"op": op, "id": self._seq, **kw})
            while True:
                line = await asyncio.wait_for(self._reader.readline(), timeout_s)  # type: ignore[union-attr]  # set by start()
                if not line:
                    raise RuntimeError("live target host has exited")
                answer = json.loads(line)
                if answer.get("id") == self._seq:
                    return answer

    async def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            await self.request("stop", timeout_s=2.0)
            self.proc.stdin.close()  # type: ignore[union-attr]  # Popen(stdin=PIPE)
        except (RuntimeError, OSError, asyncio.TimeoutError, ValueError):
            pass
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.kill()

    def kill(self) -> None:
        """Synchronous and certain: terminate, then kill, and reap."""
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(3.0)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for stream in (p.stdin, p.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
