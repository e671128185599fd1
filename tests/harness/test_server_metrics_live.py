"""`--server-metrics` end to end: `harness serve llm-continuous` scraped during `harness run URL`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness.analysis.llm import LlmSweep
from harness.analysis.llm.url import url_run
from harness.cli import app
from harness.live.openai import UrlTarget
from harness.results import load_result
from tests.harness.fake_openai import FakeOpenAI, serve
from tests.harness.test_llm_url import _served

runner = CliRunner()
pytestmark = pytest.mark.live


def test_the_served_engines_series_are_in_the_result_beside_the_clients_in_flight(tmp_path):
    proc, url = _served("llm-continuous")
    try:
        # Fixed concurrency, not a rate: a Poisson stream at a few requests a second leaves the
        # server idle at every one of four scrapes often enough to fail CI (it did, once).
        res = runner.invoke(app, ["run", url, "--server-metrics", "--concurrency", "2", "--duration", "4", "--set",
                                  "timeout_s=10", "--out", str(tmp_path / "r.json")])
    finally:
        proc.terminate()
        proc.wait(20)
    assert res.exit_code == 0, res.output
    assert "server (vllm names)" in " ".join(res.output.split())
    result = load_result(tmp_path / "r.json")
    m = result.runs[0].server_metrics
    assert m is not None and m.flavor == "vllm" and m.failures == 0 and m.scrapes >= 4
    assert m.url == url.replace("/v1/completions", "/metrics")
    assert len(m.t_s) == len(m.running) == len(m.client_in_flight) == m.scrapes
    assert all(r is not None and r <= c for r, c in zip(m.running, m.client_in_flight))  # the server saw only ours
    assert (m.client_in_flight_max or 0) >= 1 and (m.running_max or 0) >= 1 and all(k is not None and 0 <= k <= 1 for k in m.kv_cache_usage)
    assert m.preemptions[0] == 0 and any(v is not None for v in m.client_ttft_p50_s)

    from reports.llm import sections

    charts = [s for s in sections(result) if s.title.startswith("Server metrics")]
    assert len(charts) == 1 and charts[0].figure is not None
    names = {t.name for t in charts[0].figure.data}
    assert {"TTFT p50 (client, ms)", "running (server)", "waiting (server)", "in flight (client)"} <= names


def test_a_server_without_metrics_is_reported_and_the_run_still_counts():
    with serve(FakeOpenAI(ttft_s=0.02)) as url:   # it has no /metrics: every scrape is a 404
        target = UrlTarget.parse(url)
        from dataclasses import replace

        target = replace(target, server_metrics_url=target.metrics_url)
        result = url_run(target, LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(8.0,),
                                          duration_s=1.5))
    run = result.runs[0]
    assert run.finished == run.requests > 0
    m = run.server_metrics
    assert m is not None and m.scrapes == 0 and m.failures >= 1 and "HTTP 404" in (m.first_error or "")
