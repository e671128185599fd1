"""A live fleet of tiny-decoder processes on the chat day: behind the project's router its prefix hit rate
is the sim's within 5 points on the same conversations; sglang-router and vllm-router serve the same replicas
(each part runs only where that router imports: `pip install '.[sglang,vllm]'`)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from harness.live.llm_fleet_drive import LIVE_CHAT, day_texts, drive_fleet, ttft_figures
from harness.live.llm_fleet_external import external_available
from harness.live.llm_fleet_serve import parse_live_fleet, start_fleet
from workloads.llm_days import build_fleet_schedule

DAY = LIVE_CHAT.model_copy(update={"duration_s": 6.0, "rate_rps": 4.0})


def test_a_live_spec_reads_the_sim_fleet_and_a_shipped_routers_policy():
    live = parse_live_fleet("llm-fleet:router=sglang:cache_aware,replicas=3,max_seqs=8")
    assert (live.external, live.external_policy, live.fleet.replicas) == ("sglang", "cache_aware", 3)
    assert live.fleet.engine.prefix_caching and live.fleet.engine.max_seqs == 8
    assert live.router_name == "sglang:cache_aware"
    vllm = parse_live_fleet("llm-fleet:router=vllm:round_robin,replicas=2")
    assert (vllm.external, vllm.external_policy, vllm.router_name) == ("vllm", "round_robin", "vllm:round_robin")
    assert parse_live_fleet("llm-fleet:router=prefix,replicas=2").external is None
    with pytest.raises(ValueError, match="sglang policy 'x'"):
        parse_live_fleet("llm-fleet:router=sglang:x")
    with pytest.raises(ValueError, match="vllm policy 'kv_aware' is not one of round_robin"):
        parse_live_fleet("llm-fleet:router=vllm:kv_aware")       # it scores KV events the replicas never send
    with pytest.raises(ValueError, match="'nginx:rr': a shipped router is one of sglang:POLICY, vllm:POLICY"):
        parse_live_fleet("llm-fleet:router=nginx:rr")


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
    assert got["finished"] == len(schedule) and got["errors"] == 0, (got, driven.errors[:3])
    spec = fleet2.live.fleet
    sim = fleet_figures(simulate_fleet(spec, schedule), spec.name, "prefix", DAY.name, DAY.rate_rps,
                        schedule.turn, 1.0, 0.1)
    assert before["prompt_tokens"] == 0 and figures["prompt_tokens"] == int(schedule.prompt_tokens.sum())
    assert sim.prefix_hit_rate is not None and sim.prefix_hit_rate > 0.5
    assert abs(figures["hit_rate"] - sim.prefix_hit_rate) <= 0.05, (figures["hit_rate"], sim.prefix_hit_rate)
    assert figures["router_cost"]["requests"] == len(schedule)


@pytest.mark.live
@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name, seed", [
    pytest.param("sglang", 5, marks=pytest.mark.skipif(not external_available("sglang"),
                                                       reason="sglang-router cannot import (pip install '.[sglang]')")),
    pytest.param("vllm", 6, marks=pytest.mark.skipif(not external_available("vllm"),
                                                     reason="vllm-router cannot import (pip install '.[vllm]')"))])
async def test_a_shipped_router_serves_the_same_replicas_and_keeps_a_conversation_on_one(fleet2, name, seed):
    """Its cache_aware keeps a conversation's turns on the replica that has them: vllm-router only when the
    replicas answer /v1/completions/render (it keys its tree on those token ids; else it routes by load)."""
    import os
    import signal
    from dataclasses import replace

    from harness.engine.llm_fleet import simulate_fleet
    from harness.engine.llm_fleet_metrics import fleet_figures
    from harness.live.llm_fleet_external import start_external_front

    other = build_fleet_schedule(DAY.model_copy(update={"duration_s": 3.0}), seed)   # new conversations
    await fleet2.flush_caches()
    before = await fleet2.figures()
    proc, url = await start_external_front(name, fleet2.replica_urls, "cache_aware")
    try:
        through = await drive_fleet(url, other, day_texts(other), timeout_s=20.0)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
    after = await fleet2.figures()
    assert ttft_figures(through)["finished"] == len(other)
    assert sum(after["lookups"]) - sum(before["lookups"]) == len(other) + 1   # and its readiness probe
    sim = fleet_figures(simulate_fleet(replace(fleet2.live.fleet, router="cache-aware"), other),
                        "cache-aware", "cache-aware", DAY.name, DAY.rate_rps, other.turn, 1.0, 0.1)
    hit = (after["hit_tokens"] - before["hit_tokens"]) / (after["prompt_tokens"] - before["prompt_tokens"])
    assert sim.prefix_hit_rate is not None and abs(hit - sim.prefix_hit_rate) <= 0.05, (hit, sim.prefix_hit_rate)


def test_the_sim_beside_a_live_fleet_models_its_router_and_carries_the_router_cost():
    from harness.analysis.llm.fleet_live import sim_fleet_of
    from harness.live.llm_profile import LIVE_ENGINE
    from harness.live.llm_fleet_cost import RouterCost
    from targets.llm.cost import StepCost

    cost = StepCost(0.001, 7e-5, 1e-4, 0.0, frontend_in_s=0.002, frontend_out_s=0.0005)
    router = RouterCost(router_in_s=0.0012, router_out_s=0.0008, probes=4, direct_in_s=0.002, direct_out_s=0.0005)
    sim = sim_fleet_of(parse_live_fleet("llm-fleet:router=sglang:cache_aware,replicas=3"), cost, router)
    assert (sim.router, sim.replicas) == ("cache-aware", 3)     # sglang's cache_aware as it behaves
    assert sim.front_in_s == pytest.approx(0.0032) and sim.front_out_s == pytest.approx(0.0013)
    assert sim.engine.prefix_caching and sim.engine.kv_blocks == LIVE_ENGINE.kv_blocks and sim.engine.cost == cost
    assert sim_fleet_of(parse_live_fleet("llm-fleet:router=kv-aware,replicas=2"), None, None).router == "kv-aware"
    assert sim_fleet_of(parse_live_fleet("llm-fleet:router=vllm:cache_aware,replicas=2"), None, None).router == \
        "cache-aware"                                              # vllm-router's, forked from sglang's, the same
    assert sim.front_in_samples == ()


def test_a_profiled_front_end_is_drawn_per_request_around_the_router_cost():
    """With a profile's samples the sim draws each request's way in and out from them (the router's cost on
    top): a lone request's TTFT is one in-draw + prefill + one out-draw, and the draws repeat run to run."""
    import numpy as np

    from harness.analysis.llm.fleet_live import sim_fleet_of
    from harness.engine.llm_fleet import simulate_fleet
    from harness.live.llm_fleet_cost import RouterCost
    from harness.live.llm_fleet_profile import FleetProfile
    from targets.llm.cost import StepCost
    from workloads.llm_days import FleetSchedule

    cost = StepCost(0.001, 1e-4, 1e-4, 0.0, frontend_in_s=0.002, frontend_out_s=0.0005)
    router = RouterCost(router_in_s=0.001, router_out_s=0.0002, probes=4, direct_in_s=0.002, direct_out_s=0.0005)
    profile = FleetProfile(cost, 10, 3, (0.002, 0.004), (0.0005,))
    sim = sim_fleet_of(parse_live_fleet("llm-fleet:router=round-robin,replicas=2"), cost, router, profile)
    n = 40
    blocks = [tuple(range(1000 * i, 1000 * i + 10)) for i in range(n)]
    sched = FleetSchedule("lone", 400.0, 16, ("t",), np.arange(n) * 10.0, np.full(n, 160), np.full(n, 1),
                          np.zeros(n, dtype=np.int64), np.arange(n), np.ones(n, dtype=np.int64), blocks)
    ttft = [s.first_token_s - s.arrival_s for s in simulate_fleet(sim, sched).seqs]
    constant = [s.first_token_s - s.arrival_s for s in simulate_fleet(sim_fleet_of(
        parse_live_fleet("llm-fleet:router=round-robin,replicas=2"), cost, router), sched).seqs]
    # the constants' way in is the cost's 2 ms (+ the router's); the draws are 2 or 4 ms (+ the router's)
    assert sorted({round(t - c, 9) for t, c in zip(ttft, constant)}) == [0.0, 0.002]
    assert ttft == [s.first_token_s - s.arrival_s for s in simulate_fleet(sim, sched).seqs]


@pytest.mark.parametrize("args, says", [
    (["--workload", "hot-docs"], "--workload hot-docs: a live compare of fleets drives the chat day only"),
    (["--suite", "llm-bad-day"], "--suite llm-bad-day: a live compare of fleets drives the chat day only"),
    (["--duration", "400"], "--duration: a live fleet day runs 0-300 s, got 400"),
    (["--rate", "100", "--duration", "100"], "10000 requests, a live fleet day sends at most 2000"),
    (["--seeds", "3"], "--seeds"),
    (["--set", "cost=/no/such.json"], "/no/such.json: not an LLM cost file"),
])
def test_a_live_fleet_compare_refuses_what_it_cannot_bound_before_serving_anything(args, says):
    from typer.testing import CliRunner

    from harness.cli import app

    r = CliRunner().invoke(app, ["compare", "llm-fleet:router=round-robin,replicas=2",
                                 "llm-fleet:router=prefix,replicas=2", "--mode", "live", *args])
    assert r.exit_code == 2 and says in " ".join(r.output.split()), r.output
    assert "Traceback" not in r.output


@pytest.mark.live
@pytest.mark.slow  # one set of 2 replicas, two fronts in turn, 3 s of chat each: 37-80 s wall at load 5-8
def test_compare_two_live_fleets_gives_the_sim_compares_verdicts_and_each_live_run_beside_its_sim(tmp_path):
    import json

    from typer.testing import CliRunner

    from harness.cli import app

    out = tmp_path / "live.json"
    r = CliRunner().invoke(app, ["compare", "llm-fleet:router=round-robin,replicas=2",
                                 "llm-fleet:router=prefix,replicas=2", "--mode", "live", "--rate", "4",
                                 "--duration", "3", "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["settings"]["mode"] == "live" and doc["settings"]["days"] == ["chat live", "chat sim"]
    assert set(doc["verdicts"]) == {"chat live", "chat sim"}
    assert [v["figure"] for v in doc["verdicts"]["chat live"]][:2] == ["goodput_rps", "slo_attainment"]
    runs = {(x["fleet"].split("=")[1].split(",")[0], x["day"]): x for x in doc["runs"]}
    assert len(runs) == 4 and [x["fleet"] for x in doc["ranking"]] != []
    for router in ("round-robin", "prefix"):
        live, sim = runs[(router, "chat live")], runs[(router, "chat sim")]
        assert live["requests"] == sim["requests"] > 0 and live["finished"] == live["requests"]
        assert 0 <= live["router_in_s"] < 0.05 and 0 <= live["router_out_s"] < 0.05
        assert sim["router_in_s"] == live["router_in_s"]                      # the sim took the measured cost
        assert live["front_in_s"] > 0 and live["ttft_s"]["p50"] > 0 and live["step_slowdown"] > 0
        assert sum(p["requests"] for p in live["per_replica"]) == live["requests"]
        assert abs(live["prefix_hit_rate"] - sim["prefix_hit_rate"]) <= 0.05, (router, live, sim)


@pytest.mark.parametrize("profile_s", [0.0, 500.0])
def test_a_live_fleet_compare_refuses_a_profile_it_cannot_bound(profile_s):
    from harness.analysis.llm.fleet_live import LiveFleetCompare

    with pytest.raises(ValueError, match="profile_s: 0-120 s"):
        LiveFleetCompare(fleets=(parse_live_fleet("llm-fleet:router=prefix,replicas=2"),), profile_s=profile_s)


def test_a_live_fleet_compare_names_the_fits_it_knows():
    from harness.analysis.llm.fleet_live import LiveFleetCompare

    fleets = (parse_live_fleet("llm-fleet:router=prefix,replicas=2"),)
    assert LiveFleetCompare(fleets=fleets, fit="day").fit == "day"
    with pytest.raises(ValueError, match="fit: one of profile, day, both, got 'week'"):
        LiveFleetCompare(fleets=fleets, fit="week")
