"""A real Prometheus beside a live bad day: it scrapes the target with the generated rules loaded,
and the alerts it reports firing sit beside the project's evaluator's, rule by rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis.alerts.live import agreement
from harness.cli import app
from harness.ops.prometheus import PrometheusServer, firing_intervals, prometheus_path
from harness.ops.rules import build_rules
from harness.results import load_result
from harness.results.alerts import RuleFiring
from targets.spec import resolve_target

needs_prometheus = pytest.mark.skipif(prometheus_path() is None, reason="prometheus is not installed (Debian's "
                                      "`prometheus` package; .ci/run installs it)")


def test_evaluation_times_become_firing_intervals() -> None:
    # 1 s evaluations: a gap over 1.5 s ends an interval
    assert firing_intervals([10.0, 11.0, 12.0, 15.0, 16.0], 1.0) == [(10.0, 12.0), (15.0, 16.0)]
    assert firing_intervals([3.0], 1.0) == [(3.0, 3.0)]
    assert firing_intervals([], 1.0) == []


def test_agreement_sets_each_rules_first_firing_both_ways() -> None:
    rules = build_rules(resolve_target("hardened"))
    ours = [RuleFiring(rule="GpuCapacityLost", first_s=15.0, intervals=[(15.0, 20.0)]),
            RuleFiring(rule="SheddingLoad", first_s=4.0, intervals=[(4.0, 5.0), (16.0, 18.0)])]
    theirs = [RuleFiring(rule="GpuCapacityLost", first_s=16.2, intervals=[(16.2, 21.0)])]
    rows = {a.rule: a for a in agreement(rules, ours, theirs, tolerance_s=2.0)}
    lost, shed = rows["GpuCapacityLost"], rows["SheddingLoad"]
    assert (lost.evaluator_s, lost.prometheus_s, lost.difference_s, lost.within) == (15.0, 16.2, 1.2, True)
    assert (shed.evaluator_s, shed.prometheus_s, shed.within) == (4.0, None, False)  # fired one way only
    assert rows["RetryRateHigh"].within  # neither fired: they agree
    assert len(rows) == len(rules)


def test_prometheus_intervals_are_bounded() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        PrometheusServer("127.0.0.1:1", "groups: []\n", interval_s=0.01)


# A GPU outage, short: at 16 s its fault keeps its shape (a quarter of the GPUs down from 5.3 s to
# 10.7 s); with the workbook's hour played by 24 s, GpuCapacityLost holds for 2 s before it fires.
@needs_prometheus
@pytest.mark.live
def test_a_live_bad_day_with_prometheus_scraping_fires_what_the_evaluator_fires(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["alerts", "hardened", "--mode", "live", "-w", "gpu-outage", "--duration", "16",
                                   "--hour-s", "24", "--prometheus", "--device", "cpu", "--warmup", "1",
                                   "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.output
    result = load_result(tmp_path / "hardened-alerts-live-result.json")
    assert result.mode == "live" and len(result.scenarios) == 1
    day = result.scenarios[0]
    assert day.prometheus is not None and day.prometheus.error is None, day.prometheus
    assert day.prometheus.version.startswith("2.") and day.prometheus.scraped.startswith("127.0.0.1:")
    assert day.prometheus.scrapes >= 10 and day.prometheus.scrapes_ok >= 0.8 * day.prometheus.scrapes
    rows = {a.rule: a for a in day.agreement}
    lost = rows["GpuCapacityLost"]
    assert lost.evaluator_s is not None and lost.prometheus_s is not None, day
    assert abs(lost.difference_s) <= 2 * 1.0 + 1.0  # within a scrape, an evaluation and the evaluator's window
    assert (tmp_path / "hardened-alerts.yaml").is_file()  # the rules Prometheus loaded: the live fleet's


@needs_prometheus
@pytest.mark.live
def test_prometheus_forgets_what_it_scraped_before_the_runs_clock(tmp_path: Path) -> None:
    # The sidecar's start at t0: the warm-up's samples (a cold host's slow answers) are deleted, so
    # every window starts at the run's clock, as the evaluator's do.
    import http.server
    import threading
    import time

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"x_total 1\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    served = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    server = PrometheusServer(f"127.0.0.1:{served.server_address[1]}", "groups: []\n", interval_s=0.2)
    try:
        server.start()
        deadline = time.time() + 20
        while server.scrapes(time.time() - 30, time.time())[1] < 3 and time.time() < deadline:
            time.sleep(0.2)
        t0 = time.time()
        assert server.scrapes(t0 - 30, t0)[1] >= 3
        server.forget_before(t0)
        assert server.scrapes(t0 - 30, t0) == (0, 0)  # nothing before t0 is left
        time.sleep(0.6)
        assert server.scrapes(t0, time.time())[1] >= 1  # it scrapes on
    finally:
        server.stop()
        served.shutdown()
