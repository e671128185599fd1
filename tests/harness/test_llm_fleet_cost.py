"""The router cost probe (`harness.live.llm_fleet_cost`) against an in-process fake: one app that is both a
replica and a front that forwards `X-Request-Id`. Its probes are spaced `gap_s` apart (the delayed-ACK
window a back-to-back probe meets through sglang-router), through the `sleep` seam: nothing sleeps here."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from harness.live.llm_fleet_cost import PROBE_GAP_S, measure_router_cost


def _fake() -> tuple[web.Application, list[str]]:
    seen: dict[str, dict[str, float]] = {}
    order: list[str] = []

    async def completions(request: web.Request) -> web.StreamResponse:
        rid = request.headers["X-Request-Id"]
        await request.json()
        order.append(rid)
        seen[rid] = {"arrival_s": time.monotonic()}
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        seen[rid]["first_token_s"] = time.monotonic()
        await resp.write(b'data: {"choices": [{"text": "x"}]}\n\n')
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def request_times(request: web.Request) -> web.Response:
        return web.json_response(seen)

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/front/v1/completions", completions)
    app.router.add_get("/request_times", request_times)
    return app, order


async def test_the_probes_are_spaced_past_the_delayed_ack_window_one_after_each_answer():
    app, order = _fake()
    slept: list[tuple[float, int]] = []

    async def sleep(s: float) -> None:       # records how long, and after how many requests
        slept.append((s, len(order)))
        await asyncio.sleep(0)

    async with TestServer(app) as srv:
        base = str(srv.make_url("")).rstrip("/")
        cost = await measure_router_cost(base + "/front/v1/completions", [base, base], probes=3, sleep=sleep)
    # 3 probes round up to 4 (whole rounds over 2 replicas): 2 warm-ups, then 4 direct and 4 through the front
    assert cost.probes == 4 and len(order) == 10
    assert slept == [(PROBE_GAP_S, n) for n in range(1, 11)]
    assert PROBE_GAP_S >= 0.08       # twice Linux's 40 ms delayed ACK at least
    assert cost.router_in_s >= 0 and cost.router_out_s >= 0


async def test_a_gap_outside_zero_to_a_second_is_refused_before_any_probe():
    with pytest.raises(ValueError, match="gap"):
        await measure_router_cost("http://127.0.0.1:9/v1/completions", ["http://127.0.0.1:9"], gap_s=2.0)
