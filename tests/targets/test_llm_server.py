"""The OpenAI-compatible LLM server: a plain aiohttp client reads its SSE stream; malformed requests all 4xx."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from targets.llm import LlmEngineSpec
from targets.llm.continuous import Continuous
from targets.llm.decoder import TinyDecoder, encode
from targets.llm.live_engine import LiveEngine
from targets.llm.openai_request import MAX_TENANT_CHARS
from targets.llm.server import MAX_BODY_BYTES, create_llm_app

pytestmark = pytest.mark.live
URL = "/v1/completions"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """torch on one intra-op thread, as the live runs serve it: on a shared 2-core machine its default
    threads spin against the server's and other processes', and a decode step takes 30x longer."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder(seed=0, max_len=256)


@pytest.fixture
async def server(model):
    engine = LiveEngine(model, Continuous(kv_blocks=64, block_size=16, max_seqs=8, max_batched_tokens=256,
                                          chunk_tokens=32))
    async with TestServer(create_llm_app(engine, "tiny-llm")) as srv:
        yield srv


async def sse_events(resp: aiohttp.ClientResponse) -> list[str]:
    """The `data:` payloads of an SSE body, read line by line as a streaming client does."""
    events = []
    async for raw in resp.content:
        line = raw.decode().strip()
        if line.startswith("data: "):
            events.append(line[len("data: "):])
    return events


async def test_streaming_client_gets_one_chunk_per_token_then_done(server, model):
    async with aiohttp.ClientSession() as http:
        body = {"model": "tiny-llm", "prompt": "Once upon a time", "max_tokens": 12, "stream": True}
        async with http.post(server.make_url(URL), json=body) as resp:
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            events = await sse_events(resp)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert len(chunks) == 13 and chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert text == bytes(model.generate(encode("Once upon a time"), 12)).decode()  # greedy, exactly 12
    assert not any("usage" in c for c in chunks)  # not asked for


async def test_usage_comes_in_a_last_chunk_without_choices_only_when_asked(server):
    async with aiohttp.ClientSession() as http:
        body = {"model": "tiny-llm", "prompt": "Once upon a time", "max_tokens": 5, "stream": True,
                "stream_options": {"include_usage": True}, "ignore_eos": True}
        async with http.post(server.make_url(URL), json=body) as resp:
            events = await sse_events(resp)
    chunks = [json.loads(e) for e in events[:-1]]
    assert events[-1] == "[DONE]" and len(chunks) == 7
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and "usage" not in chunks[-2]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 16, "completion_tokens": 5, "total_tokens": 21}


async def test_concurrent_requests_batch_and_each_gets_its_own_greedy_answer(server, model):
    prompts = ["a" * 70, "hello", "x" * 40, "the quick brown fox"]  # 70 > chunk: chunked prefill
    async with aiohttp.ClientSession() as http:
        async def one(p: str) -> str:
            async with http.post(server.make_url(URL), json={"model": "tiny-llm", "prompt": p,
                                                             "max_tokens": 9}) as resp:
                assert resp.status == 200
                doc = await resp.json()
                return doc["choices"][0]["text"]
        texts = await asyncio.gather(*(one(p) for p in prompts))
    assert texts == [bytes(model.generate(encode(p), 9)).decode() for p in prompts]


async def test_token_id_prompt(server, model):
    async with aiohttp.ClientSession() as http:
        async with http.post(server.make_url(URL), json={"model": "tiny-llm", "prompt": [72, 105],
                                                         "max_tokens": 3}) as resp:
            doc = await resp.json()
    assert doc["choices"][0]["text"] == bytes(model.generate([72, 105], 3)).decode()
    assert doc["usage"]["prompt_tokens"] == 2


OK = {"model": "tiny-llm", "prompt": "hi", "max_tokens": 2}
MALFORMED = [
    ("not json", b"{nope", None, 400, "invalid-json"),
    ("not utf-8", b"\xff\xfe", None, 400, "invalid-json"),
    ("empty body", b"", None, 400, "invalid-json"),
    ("array body", [OK], None, 400, "not-an-object"),
    ("string body", "hi", None, 400, "not-an-object"),
    ("form content type", b"prompt=hi", {"Content-Type": "application/x-www-form-urlencoded"}, 415,
     "unsupported-media-type"),
    ("unknown field", {**OK, "best_of": 2}, None, 400, "unknown-field"),
    ("missing model", {"prompt": "hi"}, None, 400, "missing-field"),
    ("model not a string", {**OK, "model": 7}, None, 400, "invalid-type"),
    ("unknown model", {**OK, "model": "gpt-4"}, None, 404, "model-not-found"),
    ("missing prompt", {"model": "tiny-llm"}, None, 400, "missing-field"),
    ("prompt a number", {**OK, "prompt": 5}, None, 400, "invalid-type"),
    ("empty prompt", {**OK, "prompt": ""}, None, 400, "empty-prompt"),
    ("empty token list", {**OK, "prompt": []}, None, 400, "empty-prompt"),
    ("batch of prompts", {**OK, "prompt": ["a", "b"]}, None, 400, "batch-prompt"),
    ("token id not int", {**OK, "prompt": [1, "x"]}, None, 400, "invalid-token"),
    ("token id out of range", {**OK, "prompt": [1, 256]}, None, 400, "invalid-token"),
    ("negative token id", {**OK, "prompt": [-1]}, None, 400, "invalid-token"),
    ("max_tokens a string", {**OK, "max_tokens": "5"}, None, 400, "invalid-type"),
    ("max_tokens a float", {**OK, "max_tokens": 1.5}, None, 400, "invalid-type"),
    ("max_tokens a bool", {**OK, "max_tokens": True}, None, 400, "invalid-type"),
    ("max_tokens zero", {**OK, "max_tokens": 0}, None, 400, "invalid-value"),
    ("max_tokens negative", {**OK, "max_tokens": -3}, None, 400, "invalid-value"),
    ("over the context", {**OK, "max_tokens": 1000}, None, 400, "context-length-exceeded"),
    ("prompt over the context", {**OK, "prompt": "a" * 300}, None, 400, "context-length-exceeded"),
    ("stream not a bool", {**OK, "stream": "yes"}, None, 400, "invalid-type"),
    ("bad stream_options", {**OK, "stream_options": {"x": 1}}, None, 400, "invalid-value"),
    ("temperature out of range", {**OK, "temperature": 3}, None, 400, "invalid-value"),
    ("top_p a string", {**OK, "top_p": "high"}, None, 400, "invalid-value"),
    ("n of 2", {**OK, "n": 2}, None, 400, "unsupported"),
    ("echo", {**OK, "echo": True}, None, 400, "unsupported"),
    ("logprobs", {**OK, "logprobs": 3}, None, 400, "unsupported"),
    ("stop a number", {**OK, "stop": 3}, None, 400, "invalid-type"),
    ("a stop sequence", {**OK, "stop": ["\n"]}, None, 400, "unsupported"),
    ("ignore_eos not a bool", {**OK, "ignore_eos": "yes"}, None, 400, "invalid-type"),
    ("include_usage not a bool", {**OK, "stream_options": {"include_usage": 1}}, None, 400, "invalid-type"),
    ("seed a string", {**OK, "seed": "s"}, None, 400, "invalid-type"),
    ("user a number", {**OK, "user": 7}, None, 400, "invalid-type"),
    ("user empty", {**OK, "user": ""}, None, 400, "invalid-tenant"),
    ("user too long", {**OK, "user": "u" * (MAX_TENANT_CHARS + 1)}, None, 400, "invalid-tenant"),
    ("user with a newline", {**OK, "user": "a\nb"}, None, 400, "invalid-tenant"),
    ("X-Tenant too long", OK, {"X-Tenant": "t" * (MAX_TENANT_CHARS + 1)}, 400, "invalid-tenant"),
    ("X-Tenant blank", OK, {"X-Tenant": " "}, 400, "invalid-tenant"),
    ("X-Tenant bad even when user wins", {**OK, "user": "acme"}, {"X-Tenant": "\t"}, 400, "invalid-tenant"),
]


@pytest.mark.parametrize("name, body, headers, status, code", MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_malformed_requests_get_a_4xx_with_a_reason(server, name, body, headers, status, code):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with aiohttp.ClientSession() as http:
        async with http.post(server.make_url(URL), data=data,
                             headers={"Content-Type": "application/json", **(headers or {})}) as resp:
            doc = await resp.json()
    assert resp.status == status and doc["error"]["code"] == code and doc["error"]["message"]


async def test_oversized_body_and_wrong_method_are_4xx(server):
    async with aiohttp.ClientSession() as http:
        big = json.dumps({**OK, "prompt": "a" * (MAX_BODY_BYTES + 10)}).encode()
        async with http.post(server.make_url(URL), data=big, headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 413
        async with http.get(server.make_url(URL)) as resp:
            assert resp.status == 405


async def test_a_partial_batch_is_flushed_by_its_timer_with_no_new_arrival(model):
    from targets.llm.run_to_completion import RunToCompletion

    engine = LiveEngine(model, RunToCompletion(batch_size=8, max_wait_s=0.05))
    async with TestServer(create_llm_app(engine, "tiny-llm")) as srv:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            async with http.post(srv.make_url(URL), json={**OK, "max_tokens": 3}) as resp:
                doc = await resp.json()
    assert doc["choices"][0]["text"] == bytes(model.generate(encode("hi"), 3)).decode()


async def test_a_named_request_keeps_its_id_and_its_engine_times(model):
    engine = LiveEngine(model, Continuous(kv_blocks=64, block_size=16, max_seqs=8, max_batched_tokens=256))
    async with TestServer(create_llm_app(engine, "tiny-llm")) as srv:
        async with aiohttp.ClientSession() as http:
            async with http.post(srv.make_url(URL), json=OK, headers={"X-Request-Id": "r-7"}) as resp:
                doc = await resp.json()
            async with http.post(srv.make_url(URL), json=OK, headers={"X-Request-Id": "x" * 129}) as bad:
                err = await bad.json()
    assert doc["id"] == "cmpl-r-7" and bad.status == 400 and err["error"]["code"] == "invalid-request-id"
    seq = engine.seen["r-7"]
    assert seq.arrival_s <= seq.first_token_s <= seq.finish_s and seq.generated == 2 and len(engine.seen) == 1


async def test_a_request_over_the_rate_limit_gets_a_429(model):
    from targets.llm.tenants import TenantAdmission, TenantLimits

    # One request a minute with a burst of one: the first is served, the second refused, not queued.
    limited = TenantAdmission(Continuous(kv_blocks=64, block_size=16, max_seqs=8, max_batched_tokens=256),
                              TenantLimits(requests_per_s=1 / 60, burst_requests=1))
    async with TestServer(create_llm_app(LiveEngine(model, limited), "tiny-llm")) as srv:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            async with http.post(srv.make_url(URL), json=OK) as first:
                assert first.status == 200
            async with http.post(srv.make_url(URL), json=OK) as second:
                err = await second.json()
    assert second.status == 429 and err["error"]["code"] == "rate_limit_exceeded" and limited.shed == 1
    # The bucket refills one request a minute: the same request passes again in (just under) 60 s.
    assert second.headers["Retry-After"] == "60" and 59_000 < int(second.headers["retry-after-ms"]) <= 60_000
    assert err["error"]["type"] == "rate_limit_error" and "'default'" in err["error"]["message"]


def _tokens(prompt: str, max_tokens: int) -> dict:
    return {"model": "tiny-llm", "prompt": prompt, "max_tokens": max_tokens}


async def test_each_tenant_has_its_own_token_bucket_named_by_user_or_x_tenant(model):
    # 10 tokens/s, burst 100, per tenant. "big" asks 90 (80 + 10) twice: the second is shed, and would pass
    # once 80 more tokens have refilled (8 s, less the time between the two requests). Named "big" by
    # `user` and "small" by X-Tenant, 50 tokens are shed too: the field wins. "small" then asks 3 x 30
    # through the header: 90 of its own 100, all served, though "big"'s bucket is nearly empty. A request
    # over the burst never passes (no Retry-After).
    engine = LiveEngine.for_spec(model, LlmEngineSpec(kv_blocks=64, block_size=16, max_seqs=8, max_batched_tokens=256,
                                                      tenant_tok_s=10, tenant_burst_tokens=100))
    statuses: dict[str, list[int]] = {}

    async def send(http: aiohttp.ClientSession, label: str, body: dict, headers: dict | None = None):
        async with http.post(srv.make_url(URL), json=body, headers=headers or {}) as resp:
            statuses.setdefault(label, []).append(resp.status)
            return resp, await resp.json()

    async with TestServer(create_llm_app(engine, "tiny-llm")) as srv:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            await send(http, "big", {**_tokens("b" * 80, 10), "user": "big"})
            shed, err = await send(http, "big", {**_tokens("b" * 80, 10), "user": "big"})
            await send(http, "field wins", {**_tokens("s" * 40, 10), "user": "big"}, {"X-Tenant": "small"})
            for _ in range(3):
                await send(http, "small", _tokens("s" * 20, 10), {"X-Tenant": "small"})
            await send(http, "unnamed", _tokens("d" * 20, 10))
            never, never_err = await send(http, "over burst", {**_tokens("h" * 100, 10), "user": "huge"})
    assert statuses == {"big": [200, 429], "small": [200, 200, 200], "field wins": [429], "unnamed": [200],
                        "over burst": [429]}
    assert shed.headers["Retry-After"] == "8" and 7000 < int(shed.headers["retry-after-ms"]) <= 8000
    assert err["error"]["code"] == "rate_limit_exceeded" and "'big'" in err["error"]["message"]
    assert "Retry-After" not in never.headers and "never" in never_err["error"]["message"]
    assert set(engine.tenants) == {"big", "small", "default", "huge"}


@pytest.mark.parametrize("priority", [True, False])
async def test_a_better_class_overtakes_a_running_worse_one_live(model, priority):
    # One sequence at a time. "bulk" streams 80 tokens; once its first has come, "vip" asks for 2. With
    # bulk in a worse class, vip preempts it and finishes first; bulk then recomputes and still gets its
    # exact greedy answer. Without classes, vip waits for all of bulk.
    classes = (("bulk", 1),) if priority else ()
    engine = LiveEngine.for_spec(model, LlmEngineSpec(kv_blocks=64, block_size=16, max_seqs=1,
                                                      max_batched_tokens=256, tenant_priority=classes))
    done: list[str] = []
    async with TestServer(create_llm_app(engine, "tiny-llm")) as srv:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            started = asyncio.Event()

            async def bulk() -> str:
                body = {**_tokens("long one", 80), "stream": True, "user": "bulk"}
                async with http.post(srv.make_url(URL), json=body) as resp:
                    text = ""
                    async for raw in resp.content:
                        line = raw.decode().strip()
                        if line.startswith("data: {"):
                            text += json.loads(line[6:])["choices"][0]["text"]
                            started.set()
                done.append("bulk")
                return text

            async def vip() -> None:
                await started.wait()
                async with http.post(srv.make_url(URL), json={**_tokens("hi", 2), "user": "vip"}) as resp:
                    assert resp.status == 200
                done.append("vip")

            text, _ = await asyncio.gather(bulk(), vip())
    assert done == (["vip", "bulk"] if priority else ["bulk", "vip"])
    assert text == bytes(model.generate(encode("long one"), 80)).decode()
    assert (engine.scheduler.preemptions > 0) == priority  # type: ignore[attr-defined]
