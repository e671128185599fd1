"""The hardened live server, attacked on loopback: a real served target (proxy, API
servers, target) from targets.http.stack, with small limits so each attack ends
within a second or two. Every loop is bounded in count and in time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import aiohttp
import pytest

from targets.config import TargetConfig
from targets.dedupe import input_digest
from targets.http.l4proxy import L4Proxy
from targets.http.limits import EdgeLimits
from targets.http.api_servers import ApiServers
from targets.http.stack import start_stack

pytestmark = pytest.mark.live

LIM = EdgeLimits(idle_timeout_s=1.5, header_timeout_s=0.5, body_timeout_s=0.5, max_connections=48,
                 max_connections_per_client=16)
CFG = TargetConfig(batching="dynamic", max_wait_s=0.002, batch_time_s=0.005, batch_size=8, cache="off", gpus=2,
                   api_servers=2, request_ids=True, dedupe=True, tenant_limits=True, peak_qps=20_000)
JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def stack():
    s = await start_stack(CFG, LIM)
    yield s
    await s.stop()


def post(body: dict | bytes, extra: str = "", host: str = "x") -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (f"POST /predict HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{extra}\r\n").encode() + data


async def read_response(reader: asyncio.StreamReader, timeout_s: float = 3.0) -> tuple[int, dict]:
    """One HTTP response: (status, JSON body)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout_s)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(int(v) for k, _, v in (ln.partition(":") for ln in lines[1:]) if k.lower() == "content-length")
    body = await asyncio.wait_for(reader.readexactly(length), timeout_s)
    return status, json.loads(body)


async def exchange(port: int, raw: bytes, src: str = "127.0.0.1") -> tuple[int, dict]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0))
    try:
        writer.write(raw)
        return await read_response(reader)
    finally:
        writer.close()


async def metrics(port: int, token: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics", headers=headers) as r:
        return await r.text()


def sample(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


# -- dedupe across tenants ---------------------------------------------------------------------------

async def test_two_tenants_reusing_one_id_each_get_their_own_answer_or_409(stack) -> None:
    url = f"http://127.0.0.1:{stack.port}/predict"
    inputs = [[float(i), 1.0, 2.0] for i in range(40)]

    async def one(session, tenant: str, x: list[float]) -> tuple[str, list[float], int, dict]:
        async with session.post(url, json={"tenant": tenant, "request_id": "rid-1", "input": x}) as r:
            return tenant, x, r.status, await r.json()

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as session:
        # 200 concurrent requests: two tenants, one ID, 40 inputs (some repeated).
        got = await asyncio.gather(*(one(session, ("alice", "bob")[i % 2], inputs[(i * 7) % 40]) for i in range(200)))
        for tenant, x, status, doc in got:
            assert status in (200, 409), (status, doc)
            if status == 200:
                assert doc["output"]["digest"] == input_digest(x).hex(), "another request's answer"
            else:
                assert doc["error"] == "request-id-conflict" and doc["reason"]
        assert {t for t, _, s, _ in got if s == 200} == {"alice", "bob"}
        # Sequentially: bob's retry of his own input is answered, his new input is a conflict.
        _, x, _, _ = next(g for g in got if g[0] == "bob" and g[2] == 200)
        assert (await one(session, "bob", x))[2] == 200
        assert (await one(session, "bob", [9.0, 9.0, 9.0]))[2] == 409
        assert (await one(session, "carol", [9.0, 9.0, 9.0]))[2] == 200  # a third tenant never meets them


# -- connection limits at the proxy --------------------------------------------------------------------------

async def _hold(n: int, port: int, src: str) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    return list(await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0))
                                       for _ in range(n))))


async def _fresh_request_s(port: int, src: str = "127.0.0.1") -> float:
    t0 = time.perf_counter()
    status, doc = await exchange(port, post({"tenant": "fresh", "input": [1.0]}), src)
    assert status == 200, doc
    return time.perf_counter() - t0


async def test_idle_floods_are_refused_early_and_a_fresh_client_is_served(stack) -> None:
    conns = await _hold(100, stack.port, "127.0.0.2")            # one address, 100 idle connections
    await asyncio.sleep(0.05)
    reads = [asyncio.ensure_future(reader.read()) for reader, _ in conns]
    await asyncio.wait(reads, timeout=0.5)
    refused = 0
    for rd in reads:
        if not rd.done():
            rd.cancel()
            continue  # held: idle within its cap
        refused += 1
        assert rd.result().startswith(b"HTTP/1.1 503") and b'"too-many-connections"' in rd.result()
    assert refused == 100 - LIM.max_connections_per_client
    assert await _fresh_request_s(stack.port) < 1.0
    # Spread over six more addresses: the total cap is hit, the longest idle make room.
    spread = [c for k in range(3, 9) for c in await _hold(10, stack.port, f"127.0.0.{k}")]
    assert await _fresh_request_s(stack.port, "127.0.0.9") < 1.0
    text = await metrics(stack.port)
    assert sample(text, "harness_proxy_refused_total", reason="per-client-cap") == refused
    assert sample(text, "harness_proxy_closed_total", reason="evicted-idle") >= 1
    assert sample(text, "harness_proxy_limit", limit="max_connections") == LIM.max_connections
    assert stack.proxy.stats.active <= LIM.max_connections
    for _, w in conns + spread:
        w.close()


async def test_slow_senders_are_closed_within_the_header_timeout(stack) -> None:
    conns = await _hold(12, stack.port, "127.0.0.2")
    head = post({"tenant": "t", "input": [1.0]})
    first = time.perf_counter()
    closed_after: list[float] = []

    async def trickle(reader, writer) -> None:
        rd = asyncio.ensure_future(reader.read())
        for i in range(40):                              # a byte every 50 ms, 2 s at most
            writer.write(head[i:i + 1])
            await asyncio.wait({rd}, timeout=0.05)
            if rd.done():
                closed_after.append(time.perf_counter() - first)
                assert rd.result().startswith(b"HTTP/1.1 408") and b'"header-timeout"' in rd.result()
                return
        rd.cancel()

    await asyncio.gather(*(trickle(r, w) for r, w in conns))
    assert len(closed_after) == 12
    assert max(closed_after) <= LIM.header_timeout_s + LIM.sweep_s + 0.3
    assert stack.proxy.stats.header_timeouts == 12
    assert await _fresh_request_s(stack.port) < 1.0


@pytest.mark.parametrize("hop", ["proxy", "api"])
async def test_a_body_that_never_completes_is_answered_408_and_closed(stack, hop: str) -> None:
    port = stack.port if hop == "proxy" else stack.api_ports[0]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    full = post({"tenant": "t", "input": [1.0] * 50})
    writer.write(full[: len(full) - 40])                 # the head and part of the body
    t0 = time.perf_counter()
    status, doc = await read_response(reader)
    assert (status, doc["error"]) == (408, "body-timeout")
    assert LIM.body_timeout_s - 0.05 <= time.perf_counter() - t0 <= LIM.body_timeout_s + 0.5
    assert await asyncio.wait_for(reader.read(), 1.0) == b""  # and closed
    writer.close()


@pytest.mark.parametrize("hop", ["proxy", "api"])
async def test_idle_keep_alive_connections_are_closed(stack, hop: str) -> None:
    port = stack.port if hop == "proxy" else stack.api_ports[0]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post({"tenant": "t", "input": [2.0]}))
    assert (await read_response(reader))[0] == 200
    t0 = time.perf_counter()
    assert await asyncio.wait_for(reader.read(), LIM.idle_timeout_s + 1.0) == b""
    assert LIM.idle_timeout_s - 0.1 <= time.perf_counter() - t0 <= LIM.idle_timeout_s + 0.6
    writer.close()


# -- auth, exposure, logging, bounds -----------------------------------------------------------------------------

async def test_a_token_guards_predict_and_metrics_but_not_healthz() -> None:
    s = await start_stack(CFG, LIM, token="s3cret")
    try:
        body = {"tenant": "t", "input": [1.0]}
        for extra in ("", "Authorization: Bearer wrong\r\n", "Authorization: Basic czNjcmV0\r\n"):
            status, doc = await exchange(s.port, post(body, extra))
            assert (status, doc["error"]) == (401, "unauthorized") and "s3cret" not in doc["reason"]
        assert (await exchange(s.port, post(body, "Authorization: Bearer s3cret\r\n")))[0] == 200
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{s.port}/metrics") as r:
                assert r.status == 401
            async with session.get(f"http://127.0.0.1:{s.port}/healthz") as r:
                assert r.status == 200
        assert sample(await metrics(s.port, "s3cret"), "harness_bad_requests_total", kind="unauthorized") == 4
    finally:
        await s.stop()


def test_binding_beyond_loopback_needs_expose() -> None:
    with pytest.raises(ValueError, match="expose"):
        L4Proxy([("127.0.0.1", 1)], "0.0.0.0")
    with pytest.raises(ValueError, match="expose"):
        ApiServers([], host="0.0.0.0")
    assert L4Proxy([("127.0.0.1", 1)], "0.0.0.0", expose=True).exposed


async def test_dropped_clients_are_counted_and_logged_a_few_lines_without_tracebacks(stack, caplog) -> None:
    caplog.set_level(logging.INFO)
    for i in range(30):                               # 30 clients drop mid-body, straight at the API server
        reader, writer = await asyncio.open_connection("127.0.0.1", stack.api_ports[i % 2])
        full = post({"tenant": "t", "input": [1.0] * 50})
        writer.write(full[:-20])
        await writer.drain()
        await asyncio.sleep(0.01)
        writer.transport.abort()
    for _ in range(100):                              # until all 30 are counted: 1 s at most
        if sample(await metrics(stack.port), "harness_client_drops_total") >= 30:
            break
        await asyncio.sleep(0.01)
    assert sample(await metrics(stack.port), "harness_client_drops_total") == 30
    lines = [r for r in caplog.records if r.name.startswith("targets.") and "dropped" in r.getMessage()]
    assert 1 <= len(lines) <= 5 and all(r.exc_info is None for r in lines)
    assert not [r for r in caplog.records if r.exc_info is not None]


async def test_every_bound_is_in_metrics(stack) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(20):
            async with session.post(f"http://127.0.0.1:{stack.port}/predict",
                                    json={"tenant": f"t{i}", "request_id": f"r{i}", "input": [float(i)]}) as r:
                assert r.status == 200
    text = await metrics(stack.port)
    for structure in ("dedupe-answers", "dedupe-waiters-per-id", "tenant-buckets", "computed-uids", "tenant-labels"):
        assert sample(text, "harness_state_limit", structure=structure) > 0, structure
    assert sample(text, "harness_state_entries", structure="dedupe-answers") == 20
    assert 1 <= sample(text, "harness_state_entries", structure="tenant-buckets") <= 20  # refilled ones expire
    assert sample(text, "harness_state_ttl_seconds", structure="dedupe-answers") == CFG.client_timeout_s * 4
    for limit in ("max_connections_per_client", "idle_timeout_s", "header_timeout_s", "body_timeout_s"):
        assert sample(text, "harness_proxy_limit", limit=limit) == getattr(LIM, limit)
