"""Concurrent bursts at a served target on loopback: every request is answered within its bound.

A real stack (targets.http.stack: proxy, API server, hardened target with a modeled GPU) at the
live scale `harness serve hardened` runs here, and one client firing N concurrent requests, each on
its own connection. Whatever the shape (one request ID with many inputs, one ID with one input,
many IDs over tenants with limits) and whatever happens to the GPUs, each request gets an answer
(200, 409, 429 or 503) by its bound: its deadline when it sends one, else ten SLOs
(targets.admission.answer_within_s), plus what the shared loop and a busy machine add. None is
left for the client's own timeout, which is set well under the stack's 30 s hold.
"""

from __future__ import annotations

from collections import Counter

import pytest

from harness.live.burst import burst, gpus_die_when_busy
from targets.admission import answer_within_s
from targets.http.stack import start_stack
from targets.spec import resolve_target

pytestmark = pytest.mark.live

CFG = resolve_target("hardened", {"api_servers": 1, "peak_qps": 312.5})  # 3 GPUs, tenants capped at ~219/s
CLIENT_TIMEOUT_S = 15.0  # the client gives up here: no request may need it (the stack holds up to 30 s)
SLACK_S = 4.0            # the one loop's queueing (client and server share it) on a busy 2-core machine
ANSWERS = {200, 409, 429, 503}


def doc(shape: str, i: int, run: str) -> dict:
    body: dict = {"tenant": f"t{i % 8}" if shape == "distinct" else "t0",
                  "request_id": f"{run}-{i}" if shape == "distinct" else run,
                  "input": [7.0, 1.0] if shape == "same-input" else [float(i), 1.0, hash(run) % 1000 / 7]}
    if i % 2 == 0:  # half carry a deadline, half leave the bound to the SLO
        body["deadline_ms"] = 1000
    return body


async def shaped(port: int, shape: str, n: int, run: str, during=None) -> list[tuple[int | str, float, float]]:
    """(status, seconds from its last byte sent to its answer, its bound) of n concurrent requests."""
    bodies = [doc(shape, i, run) for i in range(n)]
    got = await burst(f"http://127.0.0.1:{port}/predict", bodies, CLIENT_TIMEOUT_S, during)
    return [(status, since_sent, answer_within_s(None if "deadline_ms" not in b else b["deadline_ms"] / 1000,
                                                  CFG.slo_s, 30.0))
            for b, (status, _, since_sent) in zip(bodies, got)]


def check(got: list[tuple[int | str, float, float]], shape: str) -> Counter:
    statuses = Counter(s for s, _, _ in got)
    assert set(statuses) <= ANSWERS, f"{shape}: {statuses}"
    late = [(s, round(t, 2), b) for s, t, b in got if t > b + SLACK_S]
    assert not late, f"{shape}: {len(late)} answered past their bound, e.g. {late[:5]}; {statuses}"
    return statuses


@pytest.fixture
async def stack():
    s = await start_stack(CFG, hold_s=30.0)
    yield s
    await s.stop()


async def test_bursts_of_one_id_and_of_many_tenants_are_all_answered_in_time(stack) -> None:
    same_id = check(await shaped(stack.port, "same-id", 2000, "one-id"), "same-id")
    assert same_id[409] >= 1000, same_id  # one runs; the rest are conflicts (or run after a shed one)
    same_input = check(await shaped(stack.port, "same-input", 2000, "one-input"), "same-input")
    # The one computation, its 256 waiters and its replays: 200s, but for waiters whose 1 s deadline
    # passed first on a busy machine, answered 503 at it (Deduper.expire; once in CI, 222 + 35).
    assert same_input[200] >= 1 and same_input[200] + same_input[503] >= 257, same_input
    distinct = check(await shaped(stack.port, "distinct", 2000, "many"), "distinct")
    assert distinct[429] and distinct[200], distinct  # tenant limits bite, and some are served


async def test_requests_whose_gpus_die_under_them_are_answered_by_their_bound(stack) -> None:
    target = stack.target
    # once a batch runs on a GPU (at most 5 s), every GPU goes down
    got = await shaped(stack.port, "same-input", 300, "dies", during=gpus_die_when_busy(target))
    statuses = check(got, "same-input, GPUs dead")
    assert target.pool.alive_gpus() == 0 and target.stats.received >= 1
    assert statuses[503], statuses  # queued when the GPUs died: answered 503 at their bound, not held
    got = await shaped(stack.port, "distinct", 300, "dies-many")
    check(got, "distinct, GPUs dead")
