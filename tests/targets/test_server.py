"""The live API server: strict validation (never a 500), answers, metrics.

A real aiohttp server on 127.0.0.1 in front of a real ServingTarget whose GPU
is the modeled executor on the wall clock (5 ms batches), and the MLP's own
input validator, so these tests need no torch forward pass.
"""

from __future__ import annotations

import json
import random

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from targets.config import TargetConfig
from targets.gpu.models import create_model
from targets.http.api_servers import ApiServers
from targets.http.server import ApiMetrics, BadRequest, FrontDoor, parse_predict
from targets.target import ServingTarget

TENANTS = frozenset({"t0", "t1"})
GOOD = [0.5] * 512
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def validate():
    return create_model("mlp").validate


async def _serve(validate, **knobs):
    cfg = TargetConfig(batching="dynamic", max_wait_s=0.002, batch_time_s=0.005, batch_size=8, cache="off",
                       gpus=1, api_servers=1, **knobs)
    target = ServingTarget(cfg, random.Random(1))
    door = FrontDoor(target, 0, validate, lambda x: 64, ApiMetrics(target, TENANTS), TENANTS, MAX_BODY)
    servers = ApiServers([door])
    (port,) = await servers.start()
    return servers, f"http://127.0.0.1:{port}"


@pytest.fixture
async def base_url(validate):
    servers, url = await _serve(validate)
    yield url
    await servers.stop()


@pytest.fixture
async def limited_url(validate):
    # A tenant may send 5% of 1,000 req/s with a 50 ms bucket (2.5 tokens).
    servers, url = await _serve(validate, tenant_limits=True, peak_qps=1000, tenant_burst_s=0.05,
                                tenant_limit_share=0.05)
    yield url
    await servers.stop()


def _good(**extra) -> bytes:
    return json.dumps({"tenant": "t0", "input": GOOD, **extra}).encode()


def _malformed() -> list[tuple[str, bytes, str | None, set[int]]]:
    """(kind, body, content type, acceptable statuses): 22 kinds, 220 requests."""
    cases: list[tuple[str, bytes, str | None, set[int]]] = []
    ct = "application/json"
    for i in range(10):
        cases += [
            ("truncated-json", _good()[: 5 + i * 3], ct, {400}),
            ("not-utf8", b'{"tenant": "\xff\xfe' + bytes([0x80 + i]) + b'"}', ct, {400}),
            ("empty-body", b"", ct, {400}),
            ("top-level-array", json.dumps([GOOD] * (i + 1)).encode(), ct, {422}),
            ("tenant-wrong-type", json.dumps({"tenant": i, "input": GOOD}).encode(), ct, {422}),
            ("missing-input", json.dumps({"tenant": "t0", "request_id": f"r{i}"}).encode(), ct, {422}),
            ("missing-tenant", json.dumps({"input": GOOD}).encode(), ct, {422}),
            ("unknown-field", _good(**{f"extra{i}": 1}), ct, {422}),
            ("unknown-tenant", json.dumps({"tenant": f"nobody{i}", "input": GOOD}).encode(), ct, {422}),
            ("absurd-deadline", _good(deadline_ms=[-5, 0, 1e12, "soon", True, [1], {}, 600_001, -1e-3, 1e308][i]), ct, {422}),
            ("wrong-shape", json.dumps({"tenant": "t0", "input": [1.0] * (i + 1)}).encode(), ct, {422}),
            ("non-numeric-input", json.dumps({"tenant": "t0", "input": ["x"] * 512}).encode(), ct, {422}),
            ("nan-literal", b'{"tenant": "t0", "input": [NaN' + b", 1" * 511 + b"]}", ct, {400}),
            ("infinite-input", b'{"tenant": "t0", "input": [1e999' + b", 1" * 511 + b"]}", ct, {422}),
            ("too-large", b'{"tenant": "t0", "input": [' + b"1," * (MAX_BODY // 2 + i) + b"1]}", ct, {413}),
            ("wrong-content-type", _good(), ["text/plain", "application/xml", "multipart/form-data",
                                             "application/jsonx", "text/json"][i % 5], {415}),
            ("no-content-type", _good(), None, {415}),
            ("deep-nesting", b"[" * (30_000 + i) + b"]" * (30_000 + i), ct, {400}),
            ("huge-integer", b'{"tenant": "t0", "input": 1' + b"0" * 5000 + b"}", ct, {400}),
            ("bad-request-id", _good(request_id=["", "x" * 129, "caf\u00e9", 7, "a b"][i % 5]), ct, {422}),
            ("input-not-a-list", json.dumps({"tenant": "t0", "input": {"x": 1}}).encode(), ct, {422}),
            ("null-tenant", json.dumps({"tenant": None, "input": GOOD}).encode(), ct, {422}),
        ]
    return cases


@pytest.mark.live
async def test_malformed_requests_are_refused_and_the_server_keeps_serving(base_url: str) -> None:
    cases = _malformed()
    assert len(cases) >= 200 and len({k for k, *_ in cases}) >= 10
    seen: dict[str, set[int]] = {}
    async with aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as session:
        for kind, body, ctype, allowed in cases:
            headers = {"Content-Type": ctype} if ctype else {}
            async with session.post(f"{base_url}/predict", data=body, headers=headers) as r:
                assert r.status != 500, kind
                assert r.status in allowed, (kind, r.status, await r.text())
                doc = await r.json(content_type=None)
                assert doc["error"] and doc["reason"], kind
                seen.setdefault(kind, set()).add(r.status)
        async with session.get(f"{base_url}/predict") as r:  # wrong method
            assert r.status == 405 and (await r.json(content_type=None))["error"]
        # After all that, correct requests still get correct answers.
        for i in range(20):
            body = _good(request_id=f"ok-{i}", deadline_ms=1000)
            async with session.post(f"{base_url}/predict", data=body, headers={"Content-Type": "application/json"}) as r:
                assert r.status == 200, await r.text()
                doc = await r.json()
                assert doc["request_id"] == f"ok-{i}" and doc["cached"] is False and "output" in doc
        async with session.get(f"{base_url}/healthz") as r:
            assert r.status == 200 and (await r.json())["gpus_alive"] == 1
    assert len(seen) == 22


@pytest.mark.live
async def test_tenant_over_its_limit_gets_429_with_retry_after(limited_url: str) -> None:
    codes = []  # a burst of 20 against a bucket of 2.5 tokens must shed
    async with aiohttp.ClientSession() as session:
        for i in range(20):
            async with session.post(f"{limited_url}/predict", data=_good(), headers={"Content-Type": "application/json"}) as r:
                codes.append(r.status)
                if r.status == 429:
                    assert int(r.headers["Retry-After"]) >= 1
                    assert int(r.headers["X-Retry-After-Ms"]) >= 1
                    assert (await r.json())["error"] == "too_many"
    assert 200 in codes and 429 in codes and set(codes) <= {200, 429}


@pytest.mark.live
async def test_metrics_parse_with_the_prometheus_parser(base_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(5):
            headers = {"Content-Type": "application/json", "X-Harness-Uid": str(i), "X-Harness-Attempt": str(i % 2)}
            async with session.post(f"{base_url}/predict", data=_good(), headers=headers) as r:
                await r.read()
        async with session.post(f"{base_url}/predict", data=b"{", headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400
        async with session.get(f"{base_url}/metrics") as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
            text = await r.text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in ("harness_requests", "harness_request_latency_seconds", "harness_shed", "harness_retries",
                 "harness_bad_requests", "harness_queue_depth", "harness_gpus_alive", "harness_gpu_busy_seconds",
                 "harness_batch_size", "harness_target_events"):
        assert name in families, name
    ok = sum(s.value for s in families["harness_requests"].samples
             if s.name == "harness_requests_total" and s.labels["tenant"] == "t0")
    assert ok == 5
    batches = [s for s in families["harness_batch_size"].samples if s.name == "harness_batch_size_count"]
    assert batches and batches[0].value >= 1
    retries = sum(s.value for s in families["harness_retries"].samples if s.name == "harness_retries_total")
    assert retries == 2
    bad = {s.labels["kind"]: s.value for s in families["harness_bad_requests"].samples
           if s.name == "harness_bad_requests_total"}
    assert bad.get("malformed-json") == 1


def test_parse_predict_contract() -> None:
    ok = parse_predict(b'{"tenant":"t0","request_id":"a-1","deadline_ms":250.5,"input":[1,2]}', None, lambda x: None)
    assert (ok.tenant, ok.request_id, ok.deadline_ms, ok.input) == ("t0", "a-1", 250.5, [1, 2])
    assert parse_predict(b'{"tenant":"t0","request_id":null,"input":0}', None, lambda x: None).request_id is None

    def bad(x):
        raise ValueError("expected 512 numbers, got 2 numbers")

    with pytest.raises(BadRequest) as info:
        parse_predict(b'{"tenant":"t0","input":[1,2]}', None, bad)
    assert (info.value.status, info.value.kind) == (422, "bad-input") and "512" in info.value.reason
    with pytest.raises(BadRequest) as info:
        parse_predict(b'{"tenant":"t9","input":1}', frozenset({"t0"}), lambda x: None)
    assert info.value.kind == "unknown-tenant"
