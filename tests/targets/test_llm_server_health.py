"""What a router probes on an LLM replica: /health, /health_generate, /get_model_info, /get_server_info
(with the prefix cache's figures), /v1/models; none needs the bearer token."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient, TestServer

from targets.llm.continuous import Continuous
from targets.llm.decoder import TinyDecoder
from targets.llm.live_engine import LiveEngine
from targets.llm.server import create_llm_app

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder(seed=0, max_len=128)


@pytest.fixture
async def client(model):
    engine = LiveEngine(model, Continuous(kv_blocks=32, block_size=16, max_seqs=4, max_batched_tokens=128,
                                          chunk_tokens=32, prefix_caching=True))
    async with TestClient(TestServer(create_llm_app(engine, "tiny-llm", token="s3cret"))) as c:
        yield c


async def test_the_probes_answer_without_the_token(client):
    for path in ("/health", "/health_generate", "/get_model_info", "/get_server_info"):
        resp = await client.get(path)
        assert resp.status == 200, path
    assert (await (await client.get("/health")).json()) == {"status": "ok"}
    assert (await (await client.get("/get_model_info")).json())["model_path"] == "tiny-llm"
    assert (await client.get("/v1/models")).status == 401          # the API itself still needs it


async def test_server_info_carries_the_prefix_cache_figures(client):
    auth = {"Authorization": "Bearer s3cret"}
    prompt = "a system prompt of some length, " * 3                # 96 bytes: 6 full blocks
    for q in ("first?", "second?"):
        resp = await client.post("/v1/completions", json={"model": "tiny-llm", "prompt": prompt + q,
                                                           "max_tokens": 3}, headers=auth)
        assert resp.status == 200
    info = await (await client.get("/get_server_info")).json()
    assert info["prefix_caching"] is True
    figures = info["prefix_cache"]
    assert figures["lookups"] == 2 and figures["hit_tokens"] == 96 and figures["evictions"] == 0
    assert figures["hit_rate"] == pytest.approx(96 / (102 + 103))
    assert info["steps"] >= 2 and info["busy_s"] > 0                      # at least one prefill each
    log = await (await client.get("/step_log")).json()
    assert len(log) == info["steps"] and all(len(row) == 5 and row[3] > 0 and row[4] >= 0 for row in log)
    assert log[0][4] > 0 and min(row[4] for row in log[1:]) < 0.005   # idle before the first; steps back to back
    assert sum(row[0] for row in log) == (102 - 0) + (103 - 96)             # the second prefilled past its hit
    assert await (await client.get("/step_log", params={"since": str(len(log) - 1)})).json() == log[-1:]
    assert (await client.get("/step_log", params={"since": "x"})).status == 400


async def test_flush_cache_makes_the_next_request_cold(client):
    auth = {"Authorization": "Bearer s3cret"}
    body = {"model": "tiny-llm", "prompt": "a system prompt of some length, " * 3 + "q?", "max_tokens": 2}
    assert (await client.post("/v1/completions", json=body, headers=auth)).status == 200
    flushed = await (await client.post("/flush_cache")).json()
    assert flushed["flushed_blocks"] >= 6
    assert (await client.post("/v1/completions", json=body, headers=auth)).status == 200
    figures = (await (await client.get("/get_server_info")).json())["prefix_cache"]
    assert figures["hit_tokens"] == 0 and figures["evictions"] == 0 and figures["lookups"] == 2
    assert (await (await client.post("/reset_prefix_cache")).json())["flushed_blocks"] >= 6


async def test_render_answers_the_token_ids_the_engine_would_see_without_generating(client):
    """vLLM's POST /v1/completions/render, which vllm-router's cache_aware keys its tree on."""
    auth = {"Authorization": "Bearer s3cret"}
    resp = await client.post("/v1/completions/render", json={"model": "tiny-llm", "prompt": "hi there", "max_tokens": 4},
                             headers={**auth, "X-Request-Id": "r-1"})
    assert resp.status == 200
    (doc,) = await resp.json()
    assert doc["token_ids"] == list(b"hi there") and doc["sampling_params"] == {"max_tokens": 4}
    assert doc["model"] == "tiny-llm" and doc["request_id"] == "cmpl-r-1"
    assert (await (await client.get("/get_server_info")).json())["prefix_cache"]["lookups"] == 0   # nothing ran
    bad = await client.post("/v1/completions/render", json={"model": "tiny-llm"}, headers=auth)
    assert bad.status == 400 and "error" in await bad.json()
    assert (await client.post("/v1/completions/render", json={"model": "tiny-llm", "prompt": "x"})).status == 401
