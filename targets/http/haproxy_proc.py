"""HAProxy run in front of a live target's API servers: a child process on loopback, and its stats.

`HaproxyBalancer(policy, backends).start()` writes the configuration
(targets.http.haproxy) and its 503 errorfile into a temporary folder (named by
this process: the next host removes the folder of one killed before it could,
targets.http.tempdirs), starts
``haproxy -db`` (foreground, one process) listening on a free loopback port,
and waits until it accepts connections. `stats()` reads ``show stat`` from its
stats socket (the CSV every HAProxy tool reads) into plain figures;
`stop()` terminates it (then kills it) and removes the folder. The child asks
Linux to SIGTERM it when its parent dies (``setpriv --pdeathsig``, util-linux),
so no HAProxy outlives the host that started it. `haproxy_path()` is None where
HAProxy is not installed (Debian: ``apt-get install haproxy``).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from targets.http.haproxy import HaproxyPolicy, haproxy_config, refusal_503
from targets.http.limits import check_exposure
from targets.http.tempdirs import owned_tempdir

__all__ = ["HaproxyBalancer", "haproxy_path", "haproxy_version", "parse_stat_csv", "stat_figures"]

START_S = 10.0
TEMP_PREFIX = "harness-haproxy-"  # its folder: harness-haproxy-<the host's pid>-<random>


def haproxy_path() -> str | None:
    """The haproxy binary (PATH, then Debian's /usr/sbin), or None."""
    found = shutil.which("haproxy")
    if found:
        return found
    return "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None


def haproxy_version(path: str) -> str:
    """'2.6.12-1+deb12u4' from `haproxy -v`."""
    first = subprocess.run([path, "-v"], capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
    parts = first.split()
    return parts[2] if len(parts) > 2 else first


def _free_port(host: str) -> int:
    # HAProxy cannot bind port 0 and say which port it got: take a free one first (a race another
    # process could win; `start` retries with another port when the bind fails).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_stat_csv(text: str) -> list[dict[str, str]]:
    """`show stat`'s CSV: one dict per row (pxname, svname, scur, stot, hrsp_5xx, ...)."""
    lines = text.strip().splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError("not HAProxy `show stat` output")
    lines[0] = lines[0][2:]
    return [row for row in csv.DictReader(io.StringIO("\n".join(lines)))]


def _n(row: dict[str, str], key: str) -> int:
    v = row.get(key) or ""
    return int(v) if v.lstrip("-").isdigit() else 0


def stat_figures(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The figures a result keeps, counters first (a run differences them against its start):
    connections and requests at the frontend, 5xx answers in all and those HAProxy made itself
    (its 503s: the frontend's 5xx less those the API servers sent), queue-timeout failures,
    peaks of the queue and of the sessions; per API server its sessions (mode tcp: connections;
    mode http: requests relayed) and 5xx."""
    fe = next((r for r in rows if r["pxname"] == "api" and r["svname"] == "FRONTEND"), {})
    be = next((r for r in rows if r["pxname"] == "api" and r["svname"] == "BACKEND"), {})
    servers = [r for r in rows if r["pxname"] == "api" and r["svname"] not in ("FRONTEND", "BACKEND")]
    server_5xx = sum(_n(r, "hrsp_5xx") for r in servers)
    return {
        "connections": _n(fe, "stot"),
        "requests": _n(fe, "req_tot"),
        "denied_connections": _n(fe, "dcon"),
        "responses_5xx": _n(fe, "hrsp_5xx"),
        "own_5xx": max(0, _n(fe, "hrsp_5xx") - server_5xx),
        "queue_timeouts": _n(be, "econ"),
        "bytes_in": _n(fe, "bin"),
        "bytes_out": _n(fe, "bout"),
        "per_api_server": [_n(r, "stot") for r in servers],
        "per_api_server_5xx": [_n(r, "hrsp_5xx") for r in servers],
        "sessions_now": _n(fe, "scur"),
        "queue_now": _n(be, "qcur"),
        "queue_max": _n(be, "qmax"),
        "queue_time_ms": _n(be, "qtime"),  # HAProxy's average over its last 1024 requests
        "sessions_max": _n(fe, "smax"),
    }


class HaproxyBalancer:
    """HAProxy in a child process in front of `backends` ((host, port), loopback), listening on
    `host`:`port` (0: a free port)."""

    def __init__(self, policy: HaproxyPolicy, backends: list[tuple[str, int]], host: str = "127.0.0.1",
                 port: int = 0, expose: bool = False, name: str = "target", path: str | None = None) -> None:
        self.exposed = check_exposure(host, expose)
        self.policy = policy
        self.backends = list(backends)
        self.host = host
        self.port = port
        self.name = name
        self.path = path or haproxy_path()
        self.proc: subprocess.Popen | None = None
        self.dir: Path | None = None
        self.version = ""

    @property
    def socket_path(self) -> Path:
        assert self.dir is not None
        return self.dir / "stats.sock"

    def _command(self, cfg: Path) -> list[str]:
        setpriv = shutil.which("setpriv")
        assert self.path is not None
        base = [self.path, "-db", "-f", str(cfg)]
        return [setpriv, "--pdeathsig", "TERM", *base] if setpriv else base

    def start(self) -> int:
        """Start HAProxy and wait until it accepts; returns its port. RuntimeError (with HAProxy's
        own words) when it is missing or does not start."""
        if self.path is None:
            raise RuntimeError("haproxy is not installed (Debian: apt-get install haproxy)")
        self.version = haproxy_version(self.path)
        self.dir = owned_tempdir(TEMP_PREFIX)  # and the folders of hosts killed before they removed theirs
        errorfile = self.dir / "503.http"
        errorfile.write_bytes(refusal_503(self.policy))
        last = ""
        for _ in range(3):
            port = self.port or _free_port(self.host)
            cfg = self.dir / "haproxy.cfg"
            cfg.write_text(haproxy_config(self.policy, (self.host, port), self.backends, str(self.socket_path),
                                          str(errorfile) if self.policy.mode == "http" else None, self.name))
            log = open(self.dir / "haproxy.log", "wb")
            self.proc = subprocess.Popen(self._command(cfg), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            if self._wait_ready(port):
                self.port = port
                return port
            last = (self.dir / "haproxy.log").read_text(errors="replace").strip()
            self._terminate()
            if self.port:  # a port the caller chose: no other to try
                break
        self.stop()
        raise RuntimeError(f"haproxy did not start: {last[-500:] or 'no output'}")

    def _wait_ready(self, port: int) -> bool:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            if self.socket_path.exists():  # listeners are bound before the stats socket answers
                try:
                    self.show_stat(timeout_s=0.5)
                    return True
                except (OSError, ValueError):
                    pass
            time.sleep(0.02)
        return False

    @property
    def pid(self) -> int | None:
        """HAProxy's own process id (setpriv execs it, so it is the child's)."""
        return self.proc.pid if self.proc is not None else None

    def show_stat(self, timeout_s: float = 2.0) -> list[dict[str, str]]:
        """`show stat` from the stats socket, parsed."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(self.socket_path))
            s.sendall(b"show stat\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return parse_stat_csv(b"".join(chunks).decode())

    def stats(self) -> dict[str, Any]:
        """The result's `live.balancer` block: what ran, and its figures (`stat_figures`); an
        `error` in place of the figures when the socket does not answer."""
        head: dict[str, Any] = {"kind": "haproxy", "version": self.version, "pid": self.pid,
                                "config": str(self.dir / "haproxy.cfg") if self.dir else None,
                                "policy": self.policy.figures()}
        try:
            return {**head, **stat_figures(self.show_stat())}
        except (OSError, ValueError) as exc:
            return {**head, "error": f"{type(exc).__name__}: {exc}"}

    def _terminate(self, timeout_s: float = 3.0) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = None

    def stop(self) -> None:
        """Terminate HAProxy (then kill it) and remove its folder. Idempotent."""
        self._terminate()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
