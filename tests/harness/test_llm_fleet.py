"""The sim fleet end to end: every request once across replicas and router, hit rates against their closed
forms, the load bound on the hot-document day, a lost replica's conversations moved, and compare --also."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analysis.llm.fleet import FleetCompare, FleetPoint, day_of, run_fleets
from harness.analysis.llm.fleet_forms import affinity_hit_rate, exact_repeat_share, round_robin_hit_rate
from harness.engine.llm_fleet import simulate_fleet
from targets.llm.fleet import parse_fleet
from targets.llm.routing import router_names
from workloads.llm_days import FleetSchedule, build_fleet_schedule

SMALL = "replicas=8"


@functools.cache
def _chat(rate: float = 16.0, duration: float = 60.0):
    return build_fleet_schedule(day_of("chat", rate, duration), 1, 16)


@functools.cache
def _run(spec: str, day: str = "chat", rate: float = 16.0, duration: float = 60.0):
    fleet = parse_fleet(spec)
    c = FleetCompare(fleets=(fleet,), days=(day,), rate_rps=rate, duration_s=duration)
    return FleetPoint(c, 0, day).run()


def test_round_robin_hit_rate_sits_at_its_closed_form_and_prefix_near_the_ceiling():
    sched = _chat()
    rr, pf = _run(f"llm-fleet:router=round-robin,{SMALL}"), _run(f"llm-fleet:router=prefix,{SMALL}")
    form, ceiling = round_robin_hit_rate(sched, 8), affinity_hit_rate(sched)
    assert form < ceiling
    assert form - 0.04 <= rr.prefix_hit_rate <= form + 0.01        # cold heads and evictions only lower it
    assert rr.prefix_hit_rate + 0.1 < pf.prefix_hit_rate <= ceiling + 1e-9
    assert exact_repeat_share(sched) == 0.0                         # no chat prompt repeats whole


def test_the_closed_form_falls_toward_the_heads_alone_as_replicas_grow():
    sched = _chat()
    forms = [round_robin_hit_rate(sched, r) for r in (1, 2, 8, 64)]
    ceiling = affinity_hit_rate(sched)
    assert ceiling - 0.03 < forms[0] <= ceiling                     # one replica: all but each head's first
    assert forms == sorted(forms, reverse=True)
    with pytest.raises(ValueError, match="replicas"):
        round_robin_hit_rate(sched, 0)


@pytest.mark.parametrize("router", ["round-robin", "least-tokens", "prefix", "kv-aware"])
def test_nothing_lost_or_duplicated_across_replicas_and_the_router(router):
    sched = _chat(12.0, 40.0)
    trace = simulate_fleet(parse_fleet(f"llm-fleet:router={router},replicas=4"), sched, drain_s=120)
    ids = [s.id for s in trace.seqs]
    assert ids == list(range(len(sched)))                           # one sequence per request, none twice
    assert sum(r.routed for r in trace.replicas) == len(sched)      # each routed once
    assert all(0 <= s.replica < 4 for s in trace.seqs)
    assert all(s.done for s in trace.seqs) and not any(trace.lost)  # all answered, none lost
    assert all(s.generated == s.output_tokens for s in trace.seqs)
    for rep in trace.replicas:
        assert rep.cache is not None and rep.cache.used == 0      # every block given back


def test_the_replica_loss_day_moves_the_lost_replicas_conversations():
    day = day_of("replica-loss", 16.0, 80.0)
    sched = build_fleet_schedule(day, 1, 16)
    trace = simulate_fleet(parse_fleet("llm-fleet:router=prefix,replicas=4"), sched, drain_s=120)
    at = day.lose_replica_at_s
    assert at is not None
    arrival = sched.arrival_s
    replica = np.array([s.replica for s in trace.seqs])
    assert not (replica[arrival > at] == 0).any()                   # nothing sent to the lost replica after
    lost = np.array(trace.lost)
    assert lost.any() and (replica[lost] == 0).all()                # what it held is lost, and only that
    conv = sched.conversation
    moved = set(conv[(arrival < at) & (replica == 0)]) & set(conv[arrival > at])
    assert moved                                                    # its conversations went on elsewhere
    later = (arrival > at) & np.isin(conv, list(moved))
    assert all(trace.seqs[i].done for i in np.flatnonzero(later))
    assert sum(lost) + sum(s.done for s in trace.seqs) == len(sched)


@pytest.mark.slow  # two 8-replica fleets on 60 s of hot documents: ~2.7 s on a busy machine
def test_hot_documents_the_bound_keeps_the_hot_replica_within_the_slo_and_most_of_the_hits():
    free = _run("llm-fleet:router=prefix,replicas=8,load_factor=0", "hot-docs", 24.0, 60.0)
    bound = _run("llm-fleet:router=prefix,replicas=8,load_factor=1.25", "hot-docs", 24.0, 60.0)
    assert free.max_replica_ttft_p99_s > 2.0 >= bound.max_replica_ttft_p99_s   # SLO TTFT 2 s
    assert bound.prefix_hit_rate >= 0.9 * free.prefix_hit_rate
    assert bound.spills > 0 == free.spills
    assert bound.load_imbalance < free.load_imbalance


def test_four_fleets_side_by_side_are_ranked_and_b_judged_against_a():
    fleets = tuple(parse_fleet(f"llm-fleet:router={r},replicas=4") for r in
                   ("round-robin", "prefix", "least-tokens", "kv-aware"))
    result = run_fleets(FleetCompare(fleets=fleets, days=("chat",), rate_rps=8.0, duration_s=30.0))
    assert len(result.runs) == 4 and len(result.ranking) == 4
    assert [v.a for v in result.verdicts["chat"]][0] == result.runs[0].goodput_rps
    goodputs = [r.goodput_rps for r in result.ranking]
    assert goodputs == sorted(goodputs, reverse=True) and result.ranking[0].of_best == 1.0


@pytest.mark.slow  # three fleets through the CLI: ~2.5 s on a busy machine
def test_compare_also_prints_every_fleet_and_refuses_a_repeat(tmp_path):
    from typer.testing import CliRunner

    from harness.cli import app

    base = ["compare", "llm-fleet:router=round-robin,replicas=4", "llm-fleet:router=prefix,replicas=4",
            "-w", "chat", "--rate", "6", "--duration", "20", "--jobs", "1"]
    out = tmp_path / "f.json"
    r = CliRunner().invoke(app, [*base, "--also", "llm-fleet:router=kv-aware,replicas=4", "--json",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 3 and len(doc["ranking"]) == 3
    r = CliRunner().invoke(app, [*base, "--also", "llm-fleet:router=prefix,replicas=4"])
    assert r.exit_code == 2 and "given twice" in r.output
    r = CliRunner().invoke(app, ["compare", "naive", "hardened", "--also", "llm-fleet"])
    assert r.exit_code == 2 and "--also" in r.output


def _schedule(rows, lose_at):
    """A hand-made day: (family, shared blocks, own blocks, output tokens, arrival) per request."""
    rows = sorted(rows, key=lambda r: r[4])
    ids = [tuple([f * 100 + k for k in range(sh)] + [10_000 + i * 100 + k for k in range(own)])
           for i, (f, sh, own, _o, _t) in enumerate(rows)]
    prompt = [max(1, len(b)) * 16 + 5 for b in ids]
    return FleetSchedule(name="h", duration_s=6.0, block_size=16, tenants=("t",),
                         arrival_s=np.array([r[4] for r in rows]), prompt_tokens=np.array(prompt),
                         output_tokens=np.array([r[3] for r in rows]), tenant=np.zeros(len(rows), dtype=np.int64),
                         conversation=np.arange(len(rows)), turn=np.ones(len(rows), dtype=np.int64),
                         block_ids=[b + (90_000 + i,) for i, b in enumerate(ids)], lose_replica_at_s=lose_at)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 6), st.integers(1, 30),
                          st.floats(0, 5)), min_size=1, max_size=20),
       st.sampled_from(router_names()), st.integers(1, 4), st.sampled_from([None, 0.0, 1.5]))
def test_any_traffic_any_router_each_request_ends_once(rows, router, replicas, lose_at):
    """On a KV budget small enough to preempt and evict, with or without a replica lost: every request is
    routed once and ends once (answered, or lost with the replica that held it), and every block of a replica
    still alive is given back."""
    sched = _schedule(rows, lose_at)
    fleet = parse_fleet(f"llm-fleet:router={router},replicas={replicas},kv_blocks=24,max_seqs=4")
    trace = simulate_fleet(fleet, sched, drain_s=600)
    assert sum(r.routed for r in trace.replicas) == len(sched)
    for s, lost in zip(trace.seqs, trace.lost):
        assert s.done != lost                                     # exactly one end
        assert not lost or s.replica == 0                        # only the lost replica's requests are lost
    if lose_at is None or replicas == 1:
        assert not any(trace.lost)
    for rep in trace.replicas:
        if rep.alive:
            assert rep.cache is not None and rep.cache.used == 0


def _lone(prompt: int, output: int, at_s: float = 1.0) -> FleetSchedule:
    """One request (its own blocks, nothing shared) on a 10 s day."""
    blocks = tuple(range(1 << 50, (1 << 50) + (prompt + output) // 16))
    return FleetSchedule("lone", 10.0, 16, ("t",), np.array([at_s]), np.array([prompt]), np.array([output]),
                         np.array([0]), np.array([0]), np.array([1]), [blocks])


def test_a_lone_requests_ttft_is_the_front_end_and_the_router_around_its_prefill():
    # Engine front end in 3 ms, out 2 ms; router in 1.5 ms, out 0.5 ms: TTFT = 3 + 1.5 + prefill + 2 + 0.5 ms,
    # E2E = TTFT + 10 decode steps, TPOT one decode step (the edges add nothing per token).
    from harness.engine.llm_fleet_metrics import fleet_figures
    from targets.llm.cost import StepCost

    cost = "base_s=0.004,per_prefill_token_s=0.0001,per_decode_seq_s=0.0002,per_context_token_s=0"
    bare = parse_fleet(f"llm-fleet:router=prefix,replicas=2,{cost}")
    costly = parse_fleet(f"llm-fleet:router=prefix,replicas=2,{cost},frontend_in_s=0.003,frontend_out_s=0.002,"
                         "router_in_s=0.0015,router_out_s=0.0005")
    assert (costly.front_in_s, costly.front_out_s) == pytest.approx((0.0045, 0.0025))
    sched = _lone(160, 11)
    step = StepCost(0.004, 0.0001, 0.0002, 0.0)
    runs = [fleet_figures(simulate_fleet(f, sched), f.name, "prefix", "lone", 0.1, sched.turn, 1.0, 1.0)
            for f in (bare, costly)]
    prefill, decode = step.prefill_s(160), step.decode_s(1, 0)
    assert runs[0].ttft_s.p50 == pytest.approx(prefill)                       # 20 ms
    assert runs[1].ttft_s.p50 == pytest.approx(0.0045 + prefill + 0.0025)     # 27 ms
    assert runs[1].e2e_s.max == pytest.approx(0.007 + prefill + 10 * decode)
    assert runs[0].tpot_s.p50 == runs[1].tpot_s.p50 == pytest.approx(decode)
    assert runs[1].finished == 1 and runs[1].goodput_rps == pytest.approx(0.1)
    with pytest.raises(ValueError, match="router_in_s"):
        parse_fleet("llm-fleet:router=prefix,router_in_s=-1")
    # A wake-up of 3 ms: the lone request's first step follows idle, its decode steps follow steps.
    woken = parse_fleet(f"llm-fleet:router=prefix,replicas=2,{cost},wake_s=0.003")
    run = fleet_figures(simulate_fleet(woken, sched), woken.name, "prefix", "lone", 0.1, sched.turn, 1.0, 1.0)
    assert run.ttft_s.p50 == pytest.approx(0.003 + prefill)
    assert run.tpot_s.p50 == pytest.approx(decode)


def test_sglang_cache_aware_sends_a_quiet_days_cold_prompts_to_one_replica():
    """The sim model of sglang-router's cache_aware on a light chat day: nothing outstanding when most
    turns arrive, so a prompt no tree matches goes to the least loaded replica's first index, as live
    sglang-router 0.3.2 sent all 86 of a chat day's requests to one of three replicas."""
    run = _run("llm-fleet:router=cache-aware,replicas=3", "chat", 1.0, 60.0)
    per = [p.requests for p in run.per_replica]
    assert max(per) >= 0.8 * sum(per)
