"""The step cost profiled on a fleet's own replicas (`harness.live.llm_fleet_profile`): the front end read from
each replica's times beside the client's (exact, no server), and a profile of one in-process replica."""

from __future__ import annotations

import math

import pytest

from harness.live.llm_fleet_profile import HEADS, calibration_prompt, front_end, profile_replicas


def test_calibration_prompts_share_their_head_and_nothing_after_it():
    n = len(HEADS)
    for k, head in enumerate(HEADS):
        a, b = calibration_prompt(k, 40), calibration_prompt(k + n, 40)
        assert len(a) == len(b) == head + 40
        assert a[:head] == b[:head] and a[head] != b[head]
    assert calibration_prompt(1, 40, replica=0)[64:] != calibration_prompt(1, 40, replica=1)[64:]
    assert max(HEADS) + 200 + 64 <= 512     # the longest calibration prompt and answer fit the decoder
    assert all(33 <= t <= 126 for i in range(4 * n) for t in calibration_prompt(i, 200))


def test_the_front_end_is_each_requests_way_in_and_its_first_and_last_tokens_way_out():
    engine = {"0": {"arrival_s": 100.002, "first_token_s": 100.010, "finish_s": 100.050},
              "1": {"arrival_s": 100.503, "first_token_s": 100.520, "finish_s": 100.560},
              "2": {"arrival_s": 99.0, "first_token_s": 99.1, "finish_s": 99.2},       # an earlier drive's id
              "3": {"arrival_s": 101.0, "first_token_s": 101.1, "finish_s": 101.2}}
    client = [(0, 0.0, 0.011, 0.052), (1, 0.5, 0.521, 0.563), (2, 1.0, 1.2, 1.3),
              (3, 1.0, 1.2, math.nan),                                                 # unfinished: not read
              (4, 1.5, 1.6, 1.7)]                                                      # the engine never saw it
    into, out = front_end(100.0, client, engine)
    assert into == pytest.approx([0.002, 0.003])
    assert out == pytest.approx([0.001, 0.002, 0.001, 0.003])


@pytest.mark.live
async def test_a_profile_of_one_replica_fits_its_steps_and_front_end():
    from harness.live.llm_profile import LIVE_ENGINE
    from harness.live.llm_serve import start_llm_server

    server = await start_llm_server(LIVE_ENGINE)
    try:
        profile = await profile_replicas([server.url.rsplit("/v1/", 1)[0]], duration_s=2.0, rate_rps=4.0)
    finally:
        await server.close()
    assert profile.requests > 0 and profile.steps >= 4
    cost = profile.cost
    assert cost.frontend_in_s > 0 and cost.frontend_out_s >= 0
    assert cost.time_s(32, 2, 64) > 0


async def test_a_profile_refuses_a_length_it_cannot_bound_before_sending_anything():
    with pytest.raises(ValueError, match="0-120"):
        await profile_replicas(["http://127.0.0.1:9"], duration_s=600.0)
    with pytest.raises(ValueError, match="no replicas"):
        await profile_replicas([], duration_s=1.0)
