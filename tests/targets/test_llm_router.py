"""The project's LLM router in front of in-process replicas: it streams the replica's answer through
unchanged, sends a shared prefix to one replica (prefix affinity), answers a malformed body itself,
and a replica that cannot be reached is a 502 and marked down."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from aiohttp.test_utils import TestClient, TestServer

from targets.http.llm_router import RouterView, create_router_app
from targets.llm.continuous import Continuous
from targets.llm.decoder import TinyDecoder
from targets.llm.live_engine import LiveEngine
from targets.llm.routing import create_router
from targets.llm.server import create_llm_app

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder(seed=0, max_len=256)


def replica(model: TinyDecoder) -> TestServer:
    engine = LiveEngine(model, Continuous(kv_blocks=64, block_size=16, max_seqs=4, max_batched_tokens=256,
                                          chunk_tokens=64, prefix_caching=True))
    return TestServer(create_llm_app(engine, "tiny-llm"))


async def fleet(model: TinyDecoder, router: str, n: int = 2, dead: bool = False):
    servers = [replica(model) for _ in range(n)]
    for s in servers:
        await s.start_server()
    urls = [str(s.make_url("")).rstrip("/") for s in servers]
    if dead:
        urls[1] = "http://127.0.0.1:9"   # discard: nothing listens
    app = create_router_app(urls, create_router(router, n, 16), 16, "tiny-llm", 256, kv_blocks=64,
                            health_every_s=60.0)
    return servers, TestClient(TestServer(app))


BODY = {"model": "tiny-llm", "max_tokens": 6, "stream": True}
SYSTEM = "You are a helpful assistant for the harness. " * 2     # 92 bytes: 5 full blocks


async def test_a_shared_prefix_goes_to_one_replica_and_the_stream_is_the_replicas(model):
    servers, client = await fleet(model, "prefix")
    try:
        await client.start_server()
        replicas = set()
        for q in ("one?", "two?", "three?"):
            resp = await client.post("/v1/completions", json={**BODY, "prompt": SYSTEM + q})
            assert resp.status == 200
            replicas.add(resp.headers["X-Replica"])
            text = "".join(line for line in (await resp.text()).splitlines() if line.startswith("data: {"))
            assert text.count('"text"') == 7     # 6 tokens and the finish chunk
            async with aiohttp.ClientSession() as direct:
                async with direct.post(str(servers[0].make_url("/v1/completions")),
                                       json={**BODY, "prompt": SYSTEM + q, "stream": False}) as d:
                    want = (await d.json())["choices"][0]["text"]
            got = "".join(json.loads(line[6:])["choices"][0]["text"]
                          for line in (await resp.text()).splitlines() if line.startswith("data: {"))
            assert got == want
        assert len(replicas) == 1
        stats = await (await client.get("/router_stats")).json()
        assert stats["requests"] == 3 and stats["route_us_p50"] > 0 and stats["cpu_us_per_request"] > 0
        assert sorted(stats["routed_per_replica"]) == [0, 3]
    finally:
        await client.close()
        for s in servers:
            await s.close()


async def test_round_robin_spreads_and_a_bad_body_never_reaches_a_replica(model):
    servers, client = await fleet(model, "round-robin")
    try:
        await client.start_server()
        seen = [ (await client.post("/v1/completions", json={**BODY, "prompt": SYSTEM})).headers["X-Replica"]
                 for _ in range(4)]
        assert seen == ["0", "1", "0", "1"]
        resp = await client.post("/v1/completions", json={**BODY, "prompt": "x", "max_tokens": 0})
        assert resp.status == 400 and (await resp.json())["error"]["param"] == "max_tokens"
        resp = await client.post("/v1/completions", data=b"{not json", headers={"Content-Type": "application/json"})
        assert resp.status == 400 and (await resp.json())["error"]["code"] == "invalid-json"
        stats = await (await client.get("/router_stats")).json()
        assert stats["requests"] == 4 and stats["rejected"] == 2
        assert (await client.get("/health")).status == 200
    finally:
        await client.close()
        for s in servers:
            await s.close()


async def test_a_replica_down_at_the_probe_gets_nothing_and_one_lost_later_is_a_502(model):
    servers, client = await fleet(model, "round-robin", dead=True)
    try:
        await client.start_server()     # the first probe runs at start: replica 1 never answers it
        statuses = [(await client.post("/v1/completions", json={**BODY, "prompt": SYSTEM})).status for _ in range(2)]
        assert statuses == [200, 200]
        assert (await (await client.get("/router_stats")).json())["routed_per_replica"] == [2, 0]
        assert (await (await client.get("/health")).json())["replicas_up"] == 1
    finally:
        await client.close()
        for s in servers:
            await s.close()
    servers, client = await fleet(model, "round-robin")
    try:
        await client.start_server()
        for _ in range(100):            # until the first probe has seen both up
            if (await (await client.get("/health")).json())["probe_rounds"] >= 1:
                break
            await asyncio.sleep(0.01)
        await servers[1].close()        # lost after its probe: the router learns it from the failed forward
        resps = [await client.post("/v1/completions", json={**BODY, "prompt": SYSTEM}) for _ in range(3)]
        statuses = [r.status for r in resps]
        assert statuses == [200, 502, 200]
        assert (await (await client.get("/router_stats")).json())["errors"] == 1
    finally:
        await client.close()
        for s in servers:
            await s.close()


def test_the_view_counts_what_it_sent_and_forgets_least_recent_first():
    view = RouterView(2, kv_blocks=3)
    view.routed(0, (1, 2, 3), 40)
    view.routed(0, (1, 4), 10)
    assert view.outstanding_requests == [2, 0] and view.outstanding_tokens == [50, 0]
    assert view.cached_blocks(0, (1, 4, 9)) == 2 and view.cached_blocks(0, (1, 2)) == 1  # 2 was evicted
    view.finished(0, 40)
    assert view.outstanding_requests == [1, 0] and view.outstanding_tokens == [10, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 2), st.lists(st.integers(0, 20), max_size=5, unique=True),
                          st.integers(1, 500)), max_size=60))
def test_the_view_never_goes_negative_nor_past_its_block_bound(ops):
    """Whatever routes and finishes interleave: outstanding counts are what is open, never negative, and
    the blocks remembered per replica never pass kv_blocks."""
    view = RouterView(3, kv_blocks=5)
    open_: list[tuple[int, int]] = []
    for finish, r, names, tokens in ops:
        if finish and open_:
            r, tokens = open_.pop(0)
            view.finished(r, tokens)
        else:
            view.routed(r, tuple(names), tokens)
            open_.append((r, tokens))
            assert view.cached_blocks(r, tuple(names)) == len(names)   # what it just sent, all remembered
        for k in range(3):
            assert view.outstanding_requests[k] == sum(1 for o, _ in open_ if o == k) >= 0
            assert view.outstanding_tokens[k] == sum(t for o, t in open_ if o == k) >= 0
            assert len(view.sent[k]) <= 5



async def test_a_write_to_a_client_that_left_is_the_clients_end_not_its_replicas():
    from targets.http.llm_router import _to_client

    async def gone() -> None:
        raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")

    async def ok() -> None:
        return None

    # aiohttp raises a closing client's write as a ClientError: the handler's `except aiohttp.ClientError`
    # (the replica's failures) marked the replica down for it, so _to_client must take it first
    assert issubclass(aiohttp.ClientConnectionResetError, aiohttp.ClientError)
    assert await _to_client(gone()) is False
    assert await _to_client(ok()) is True
