"""Bursts on fresh connections (`Connection: close`) at a served target: every request is answered,
and its connection ended, within its bound.

The plainest client (harness.live.burst.fresh_burst) writes its request and reads until the
server closes. The proxy's guard used to answer such a request 503 and keep the connection open
for a next request that never came: the client waited for the end until its own timeout (348 of
2,000 on a quiet machine). A stack (targets.http.stack, guarded as `harness serve` is) at the live
scale, a few hundred requests, a few hundred at a time, distinct request IDs and one shared ID.
"""

from __future__ import annotations

from collections import Counter

import pytest

from harness.live.burst import fresh_burst
from targets.admission import answer_within_s
from targets.http.refusal import wants_close
from targets.http.stack import start_stack
from targets.spec import resolve_target

pytestmark = pytest.mark.live

LIVE = {"api_servers": 1, "peak_qps": 312.5}
CLIENT_TIMEOUT_S = 15.0  # the client gives up here: no request may need it
SLACK_S = 4.0            # the one loop's queueing (client and server share it) on a busy 2-core machine
ANSWERS = {200, 408, 409, 429, 503}


def bodies(shape: str, n: int, run: str) -> list[dict]:
    # Inputs of their own per shape: the hardened response cache answers an input it has seen
    # before it reaches the dedupe, so a shared-ID burst on the distinct burst's inputs would be
    # all cache hits (200) and never test the dedupe's conflicts.
    return [{"tenant": f"t{i}" if shape == "distinct" else "t0",
             "request_id": f"{run}-{i}" if shape == "distinct" else run,
             "input": [float(i), 1.0 if shape == "distinct" else 3.0, 2.0]} for i in range(n)]


def check(got: list, shape: str, bound_s: float) -> Counter:
    statuses = Counter(s for s, _, _ in got)
    assert set(statuses) <= ANSWERS, f"{shape}: {statuses}"
    late = [round(t, 2) for _, _, t in got if t > bound_s + SLACK_S]
    assert not late, f"{shape}: {len(late)} ended past their bound, e.g. {late[:5]}; {statuses}"
    return statuses


@pytest.mark.parametrize("head, ends", [
    (b"POST /p HTTP/1.1\r\nConnection: close\r\n\r\n", True),
    (b"POST /p HTTP/1.1\r\nconnection: Keep-Alive, CLOSE\r\n\r\n", True),   # a token list, any case
    (b"POST /p HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", False),           # 1.1: keep-alive by default
    (b"POST /p HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", True),            # 1.0: close by default
    (b"POST /p HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", False),
    (b"POST /p HTTP/1.1\r\nX-Note: Connection: close\r\n\r\n", False),     # only the Connection header
])
def test_wants_close(head: bytes, ends: bool) -> None:
    assert wants_close(head) is ends


async def test_the_guards_refusals_end_fresh_connections() -> None:
    """A zero share refuses every request at the proxy: each 503 comes with its connection's end."""
    stack = await start_stack(resolve_target("hardened", {**LIVE, "frontend_proxy_share": 0.0}), guard=True)
    try:
        got = await fresh_burst(stack.port, bodies("distinct", 200, "refused"), CLIENT_TIMEOUT_S, at_once=100)
        assert Counter(s for s, _, _ in got) == {503: 200}
        assert max(t for _, _, t in got) < 1.0 + SLACK_S
        assert stack.proxy.stats.refused_overload == 200
    finally:
        await stack.stop()


async def test_fresh_connection_bursts_are_all_answered_in_time() -> None:
    cfg = resolve_target("hardened", LIVE)
    bound_s = answer_within_s(None, cfg.slo_s, 30.0)
    stack = await start_stack(cfg, hold_s=30.0, guard=True)
    try:
        distinct = check(await fresh_burst(stack.port, bodies("distinct", 400, "many"), CLIENT_TIMEOUT_S,
                                           at_once=200), "distinct", bound_s)
        assert distinct[200], distinct
        shared = check(await fresh_burst(stack.port, bodies("shared", 400, "one-id"), CLIENT_TIMEOUT_S,
                                         at_once=200), "shared", bound_s)
        # one ID, many inputs: conflicts while one runs (on a busy machine the guard may shed them first)
        assert shared[409] + shared[503], shared
    finally:
        await stack.stop()
