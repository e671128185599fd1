"""Every metric and label the generated rules and dashboard read is one a live `/metrics` serves.

A real aiohttp server in front of a ServingTarget (modeled 5 ms batches, a tenant
limit low enough to shed), behind the L4 proxy: a few answers, a retry and a 429,
then one scrape.
"""

from __future__ import annotations

import asyncio
import json
import random

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.ops.dashboard import dashboard, panel_queries
from harness.ops.prom import rule_groups, selectors
from harness.ops.rules import build_rules
from targets.config import TargetConfig
from targets.http.l4proxy import L4Proxy
from targets.gpu.models import create_model
from targets.http.api_servers import ApiServers
from targets.http.server import ApiMetrics, FrontDoor
from targets.target import ServingTarget

TENANTS = frozenset({"t0"})


async def _scrape() -> str:
    cfg = TargetConfig(name="live-check", batching="dynamic", max_wait_s=0.002, batch_time_s=0.005, batch_size=8,
                       cache="off", gpus=1, api_servers=1, tenant_limits=True, peak_qps=1000, tenant_burst_s=0.05,
                       tenant_limit_share=0.05)
    target = ServingTarget(cfg, random.Random(1))
    metrics = ApiMetrics(target, TENANTS)
    door = FrontDoor(target, 0, create_model("mlp").validate, lambda x: 64, metrics, TENANTS, 64 * 1024)
    servers = ApiServers([door])
    (api_port,) = await servers.start()
    proxy = L4Proxy([("127.0.0.1", api_port)])  # as `harness serve` runs it: the proxy's metrics are served too
    metrics.watch_proxy(proxy)
    url = f"http://127.0.0.1:{await proxy.start()}"
    try:
        async with aiohttp.ClientSession() as session:
            body = json.dumps({"tenant": "t0", "input": [0.5] * 512}).encode()

            async def send(i: int) -> int:
                headers = {"Content-Type": "application/json", "X-Harness-Uid": str(i),
                           "X-Harness-Attempt": str(i % 2)}
                async with session.post(f"{url}/predict", data=body, headers=headers) as r:
                    await r.read()
                    return r.status

            # At once: the bucket holds 2.5 tokens, so most are shed with 429.
            codes = await asyncio.gather(*(send(i) for i in range(20)))
            assert 200 in codes and 429 in codes
            async with session.get(f"{url}/metrics") as r:
                return await r.text()
    finally:
        await proxy.stop()
        await servers.stop()


@pytest.mark.live
async def test_rules_and_dashboard_read_only_served_metrics_and_labels() -> None:
    served: dict[str, set[str]] = {}
    values: dict[tuple[str, str], set[str]] = {}
    text = await _scrape()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            served.setdefault(sample.name, set()).update(sample.labels)
            for k, v in sample.labels.items():
                values.setdefault((sample.name, k), set()).add(v)
    cfg = TargetConfig(batching="dynamic", cache="off", gpus=1, api_servers=1)
    exprs = [r["expr"] for r in rule_groups(cfg, build_rules(cfg))["groups"][0]["rules"]]
    exprs += panel_queries(dashboard(cfg))
    used: dict[str, set[str]] = {}
    for e in exprs:
        for name, labels in selectors(e).items():
            used.setdefault(name, set()).update(labels)
    assert {"harness_shed_total", "harness_retries_total", "harness_gpu_busy_seconds_total"} <= set(used)
    for name, labels in used.items():
        assert name in served, f"{name} is not served"
        assert labels <= served[name], f"{name}: labels {labels - served[name]} are not served"
    # The SLI's bucket must be one the histograms have; the front door's is the one it reads first,
    # every outcome served from the start, the requests this scrape saw counted as the client saw them.
    assert 'outcome="ok",le="0.3"' in exprs[0] and "0.3" in values[("harness_request_latency_seconds_bucket", "le")]
    assert "0.3" in values[("harness_frontend_latency_seconds_bucket", "le")]
    assert values[("harness_frontend_latency_seconds_bucket", "outcome")] == {"ok", "shed", "timed-out", "failed"}
    counts = {s.labels["outcome"]: s.value for f in text_string_to_metric_families(text) for s in f.samples
              if s.name == "harness_frontend_latency_seconds_count"}
    assert counts["ok"] >= 1 and counts["shed"] >= 1 and counts["ok"] + counts["shed"] == 20
