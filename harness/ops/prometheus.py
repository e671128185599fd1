"""A real Prometheus beside a live run: it scrapes the target's `/metrics`, evaluates the generated
rules, and says which alerts fired and when.

`PrometheusServer` runs Debian's `prometheus` (2.42 here) on loopback: a
temporary folder for its configuration, the rule file and its TSDB
(``--storage.tsdb.path``; named by this process, so the next run removes it
when this one was killed: targets.http.tempdirs), a free port, scrapes and
rule evaluations every `interval_s`, one scrape target. `firing(start, end)`
reads the ``ALERTS`` series (``alertstate="firing"``) over that span from its
HTTP API: the raw samples, one per rule evaluation that found the alert
firing, so each alert's firing intervals are exact to the evaluation.

`PrometheusSidecar` is the live run's hook (harness.live.sidecar.Sidecar): it
starts Prometheus once the host is ready, scraping the first API server
directly (the balancer in front may queue or refuse a scrape under overload,
and every API server serves the same registry), learns the wall-clock time of
the run's t0 and has Prometheus delete every sample up to it (the TSDB admin
API), so its windows start at the run's clock as the evaluator's do: the
warm-up's traffic, which a cold host answers slower (the front door's latency
shows it), fires nothing the evaluator cannot see. Once the drive ended it
waits for two more evaluations, then gives the firing intervals on the run's
clock (seconds since t0), so they sit beside the project's evaluator's
(harness.analysis.alerts). The child asks Linux to SIGTERM it if its parent
dies (``setpriv --pdeathsig``), so none outlives its run.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from targets.http.tempdirs import owned_tempdir

__all__ = ["PrometheusServer", "PrometheusSidecar", "firing_intervals", "prometheus_path"]

START_S = 30.0
TEMP_PREFIX = "harness-prometheus-"  # its folder: harness-prometheus-<the run's pid>-<random>


def prometheus_path() -> str | None:
    """The prometheus binary, or None (Debian: apt-get install prometheus)."""
    return shutil.which("prometheus")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def firing_intervals(times_s: list[float], interval_s: float) -> list[tuple[float, float]]:
    """Evaluation times at which an alert was firing -> its firing intervals: a gap of more than
    1.5 evaluation intervals between two samples ends one. Each interval runs from its first
    sample to its last."""
    out: list[tuple[float, float]] = []
    for t in sorted(times_s):
        if out and t - out[-1][1] <= 1.5 * interval_s:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


class PrometheusServer:
    """Prometheus on 127.0.0.1 (a free port), scraping `target` ("host:port") every `interval_s`
    and evaluating `rules_yaml` as often."""

    def __init__(self, target: str, rules_yaml: str, interval_s: float = 1.0, path: str | None = None) -> None:
        if not 0.1 <= interval_s <= 60:
            raise ValueError(f"interval_s must be within [0.1, 60] s, got {interval_s}")
        self.target = target
        self.rules_yaml = rules_yaml
        self.interval_s = interval_s
        self.path = path or prometheus_path()
        self.proc: subprocess.Popen | None = None
        self.dir: Path | None = None
        self.port = 0
        self.version = ""

    def config(self) -> dict[str, Any]:
        every = f"{round(self.interval_s * 1000)}ms"
        return {"global": {"scrape_interval": every, "evaluation_interval": every, "scrape_timeout": every},
                "rule_files": ["rules.yaml"],
                "scrape_configs": [{"job_name": "harness", "static_configs": [{"targets": [self.target]}]}]}

    def start(self) -> int:
        """Start it and wait until it is ready; returns its port. RuntimeError with its own words."""
        if self.path is None:
            raise RuntimeError("prometheus is not installed (Debian: apt-get install prometheus)")
        self.dir = owned_tempdir(TEMP_PREFIX)  # and those of runs killed before they removed theirs
        (self.dir / "rules.yaml").write_text(self.rules_yaml)
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(self.config(), sort_keys=False))
        self.port = _free_port()
        cmd = [self.path, f"--config.file={self.dir / 'prometheus.yml'}", f"--storage.tsdb.path={self.dir / 'data'}",
               f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d",
               "--log.level=warn", "--web.enable-admin-api"]  # the admin API: `forget_before`
        setpriv = shutil.which("setpriv")
        if setpriv:
            cmd = [setpriv, "--pdeathsig", "TERM", *cmd]
        log = open(self.dir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=self.dir)
        log.close()
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1.0) as r:
                    if r.status == 200:
                        self.version = self._version()
                        return self.port
            except OSError:
                pass
            time.sleep(0.1)
        said = (self.dir / "prometheus.log").read_text(errors="replace").strip()[-500:]
        self.stop()
        raise RuntimeError(f"prometheus did not start: {said or 'no output'}")

    def _get(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=10.0) as r:
            doc = json.loads(r.read())
        if doc.get("status") != "success":
            raise RuntimeError(f"prometheus {path}: {doc.get('error', doc)}")
        return doc["data"]

    def _version(self) -> str:
        try:
            return str(self._get("/api/v1/status/buildinfo").get("version", ""))
        except (OSError, RuntimeError, ValueError):
            return ""

    def forget_before(self, wall_s: float) -> None:
        """Delete every sample it holds up to `wall_s` (wall clock, s), its own ALERTS included (the
        TSDB admin API's delete_series): every window from then on starts at `wall_s`. A scrape
        that began before `wall_s` is stored up to one interval later under its start's time
        (seen once in CI: one sample left just before `wall_s`), so once that interval has passed
        the delete is made again. Blocks for up to one interval: call it off the run's loop."""
        self._delete_before(wall_s)
        settle_s = wall_s + self.interval_s + 0.1 - time.time()
        if settle_s > 0:
            time.sleep(settle_s)
            self._delete_before(wall_s)

    def _delete_before(self, wall_s: float) -> None:
        params = urllib.parse.urlencode({"match[]": '{__name__=~".+"}', "end": f"{wall_s:.3f}"})
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/v1/admin/tsdb/delete_series?{params}",
                                     method="POST")
        with urllib.request.urlopen(req, timeout=5.0) as r:
            if r.status != 204:
                raise RuntimeError(f"prometheus delete_series: HTTP {r.status}")

    def firing(self, start_s: float, end_s: float) -> dict[str, list[float]]:
        """{alert name: wall-clock times (s) of the evaluations that found it firing} in [start_s, end_s]."""
        span = max(1, int(end_s - start_s) + 1)
        data = self._get("/api/v1/query", query=f'ALERTS{{alertstate="firing"}}[{span}s]', time=f"{end_s:.3f}")
        out: dict[str, list[float]] = {}
        for series in data.get("result", []):
            name = series["metric"].get("alertname", "?")
            out.setdefault(name, []).extend(float(t) for t, _ in series.get("values", []) if float(t) >= start_s)
        return out

    def scrapes(self, start_s: float, end_s: float) -> tuple[int, int]:
        """Scrapes of the target in [start_s, end_s] (wall clock), and how many it answered (`up` 1):
        a scrape the target did not answer within the interval leaves a gap in every series."""
        span = max(1, int(end_s - start_s) + 1)
        data = self._get("/api/v1/query", query=f"up[{span}s]", time=f"{end_s:.3f}")
        ups = [float(v) for r in data.get("result", []) for t, v in r.get("values", []) if float(t) >= start_s]
        return len(ups), int(sum(ups))

    def stop(self) -> None:
        """Terminate it (then kill it) and remove its folder. Idempotent."""
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(5.0)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class PrometheusSidecar:
    """A live run's Prometheus (harness.live.sidecar.Sidecar): the rules loaded, the host scraped."""

    name = "prometheus"

    def __init__(self, rules_yaml: str, interval_s: float = 1.0) -> None:
        self.rules_yaml = rules_yaml
        self.interval_s = interval_s
        self.server: PrometheusServer | None = None
        self.t0_wall_s: float | None = None
        self._forget: threading.Thread | None = None
        self.forget_error: str | None = None  # the warm-up's samples could not be deleted: said in the figures

    def start(self, ready: dict[str, Any]) -> None:
        target = f"127.0.0.1:{ready['api_ports'][0]}"
        self.server = PrometheusServer(target, self.rules_yaml, self.interval_s)
        self.server.start()

    def clock(self, t0_wall_s: float) -> None:
        """The run's clock starts: Prometheus forgets what it scraped before (the warm-up), on a
        thread of its own (the run's loop is about to drive)."""
        self.t0_wall_s = t0_wall_s
        assert self.server is not None
        self._forget = threading.Thread(target=self._forget_warmup, args=(self.server, t0_wall_s), daemon=True)
        self._forget.start()

    def _forget_warmup(self, server: PrometheusServer, t0_wall_s: float) -> None:
        try:
            server.forget_before(t0_wall_s)
        except (OSError, RuntimeError) as exc:
            self.forget_error = f"{type(exc).__name__}: {exc}"

    def finish(self, end_s: float) -> dict[str, Any]:
        """Two more evaluations after the end, then each alert's firing intervals on the run's clock."""
        assert self.server is not None and self.t0_wall_s is not None
        if self._forget is not None:
            self._forget.join(5.0)
        time.sleep(2 * self.interval_s + 0.2)
        t0 = self.t0_wall_s
        times = self.server.firing(t0, t0 + end_s + 2 * self.interval_s)
        fired = {name: [[round(a - t0, 3), round(b - t0, 3)] for a, b in firing_intervals(ts, self.interval_s)]
                 for name, ts in sorted(times.items())}
        scrapes, answered = self.server.scrapes(t0, t0 + end_s)
        out = {"version": self.server.version, "interval_s": self.interval_s, "scraped": self.server.target,
               "scrapes": scrapes, "scrapes_ok": answered, "fired": fired,
               "first_s": {name: iv[0][0] for name, iv in fired.items() if iv}}
        if self.forget_error is not None:
            out["warmup_kept"] = self.forget_error
        return out

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
