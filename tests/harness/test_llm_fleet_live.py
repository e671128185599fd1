"""A live fleet of tiny-decoder processes on the chat day: behind the project's router its prefix hit rate
is the sim's within 5 points on the same conversations; sglang-router serves the same replicas (its part
runs only where sglang-router imports: `pip install '.[sglang]'`)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from harness.live.llm_fleet_drive import LIVE_CHAT, day_texts, drive_fleet, ttft_figures
from harness.live.llm_fleet_serve import parse_live_fleet, sglang_available, start_fleet
from workloads.llm_days import build_fleet_schedule

DAY = LIVE_CHAT.model_copy(update={"duration_s": 6.0, "rate_rps": 4.0})


def test_a_live_spec_reads_the_sim_fleet_and_an_sglang_policy():
    live = parse_live_fleet("llm-fleet:router=sglang:cache_aware,replicas=3,max_seqs=8")
    assert live.sglang_policy == "cache_aware" and live.fleet.replicas == 3
    assert live.fleet.engine.prefix_caching and live.fleet.engine.max_seqs == 8
    assert live.router_name == "sglang:cache_aware"
    assert parse_live_fleet("llm-fleet:router=prefix,replicas=2").sglang_policy is None
    with pytest.raises(ValueError, match="sglang policy 'x'"):
        parse_live_fleet("llm-fleet:router=sglang:x")


def test_day_texts_share_exactly_what_the_sims_block_ids_share():
    from targets.llm.prefix_cache import token_block_names

    schedule = build_fleet_schedule(DAY.model_copy(update={"duration_s": 4.0}), 3)
    texts = day_texts(schedule)
    assert [len(t) for t in texts] == schedule.prompt_tokens.tolist()
    owner: dict[int, int] = {}
    for i, text in enumerate(texts):
        names = token_block_names(list(text.encode()), 16)
        ids = schedule.block_ids[i][:len(names)]
        for name, block in zip(names, ids):
            assert owner.setdefault(name, block) == block, f"request {i}: one text block, two sim ids"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fleet2():
    """Two replicas behind the project's prefix router, shared by the live tests below (one start)."""
    live = parse_live_fleet("llm-fleet:router=prefix,replicas=2")
    fleet = await start_fleet(live)
    yield fleet
    await fleet.close()


@pytest.mark.live
@pytest.mark.asyncio(loop_scope="module")
async def test_the_chat_day_behind_our_router_hits_as_the_sim_does(fleet2):
    from harness.engine.llm_fleet import simulate_fleet
    from harness.engine.llm_fleet_metrics import fleet_figures

    schedule = build_fleet_schedule(DAY, 2)
    before = await fleet2.figures()
    driven = await drive_fleet(fleet2.url, schedule, day_texts(schedule), timeout_s=20.0)
    figures = await fleet2.figures()
    got = ttft_figures(driven)
    assert got["finished"] == len(schedule) and got["errors"] == 0
    spec = fleet2.live.fleet
    sim = fleet_figures(simulate_fleet(spec, schedule), spec.name, "prefix", DAY.name, DAY.rate_rps,
                        schedule.turn, 1.0, 0.1)
    assert before["prompt_tokens"] == 0 and figures["prompt_tokens"] == int(schedule.prompt_tokens.sum())
    assert sim.prefix_hit_rate is not None and sim.prefix_hit_rate > 0.5
    assert abs(figures["hit_rate"] - sim.prefix_hit_rate) <= 0.05, (figures["hit_rate"], sim.prefix_hit_rate)
    assert figures["router_cost"]["requests"] == len(schedule)


@pytest.mark.live
@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.skipif(not sglang_available(), reason="sglang-router cannot import (pip install '.[sglang]')")
async def test_sglang_router_serves_the_same_replicas(fleet2):
    import os
    import signal

    from harness.live.llm_fleet_serve import start_sglang_front

    other = build_fleet_schedule(DAY.model_copy(update={"duration_s": 3.0}), 5)   # new conversations
    before = await fleet2.figures()
    proc, url = await start_sglang_front(fleet2.replica_urls, "cache_aware")
    try:
        through = await drive_fleet(url, other, day_texts(other), timeout_s=20.0)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
    after = await fleet2.figures()
    assert ttft_figures(through)["finished"] == len(other)
    assert sum(after["lookups"]) - sum(before["lookups"]) == len(other) + 1   # and its readiness probe
    assert after["hit_tokens"] > before["hit_tokens"]
