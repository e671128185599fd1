"""The flaw ranking: shortening, measures, the score, interactions, and a real
(tiny) ablation in which every flaw gets a measured cost."""

import functools
import math

import pytest
from rich.console import Console

from harness.analysis.rank.ablation import rank, score_key, worst
from harness.analysis.rank.interactions import classify
from harness.analysis.rank.scoring import severity, tail_increase
from harness.analysis.shorten import Shortening, disturbance, expected_requests, plan, shorten
from harness.engine.jobs import Jobs
from harness.results.rank import FlawCost, FlawGain, FlawRank, RankResult, ScenarioCost
from reports.rank import render
from targets.flaws import FLAW_IDS
from workloads.loader import load_workload


# -- shortening ------------------------------------------------------------------------

def test_disturbed_script_keeps_calm_disturbance_and_recovery():
    wl = load_workload("slowdown")  # 40 s, slowdown from 10 s to 20 s
    short = shorten(wl, Shortening(before_s=1.0, disturbance_s=3.0, after_s=2.0))
    assert short.duration_s == pytest.approx(6.0)
    (f,) = short.faults
    assert (f.at_s, f.duration_s) == (pytest.approx(1.0), pytest.approx(3.0))
    assert f.factor == wl.faults[0].factor
    assert short.peak_rps == wl.peak_rps  # rates are never scaled


def test_spike_and_burst_windows_move_with_the_cut():
    spike = shorten(load_workload("spike"), Shortening(before_s=2.0, disturbance_s=4.0, after_s=3.0))
    assert disturbance(spike) == (pytest.approx(2.0), pytest.approx(6.0))
    assert spike.duration_s == pytest.approx(9.0)
    dom = shorten(load_workload("dominant-tenant"), Shortening(before_s=1.0, disturbance_s=3.0, after_s=2.0))
    big = next(t for t in dom.tenants if t.bursts)
    assert (big.bursts[0].start_s, big.bursts[0].end_s) == (pytest.approx(1.0), pytest.approx(4.0))


def test_stationary_script_is_cut_to_the_budget():
    p = plan(["steady", "night"], request_budget=20_000)
    # steady is 10,000 QPS: 20,000 requests is 2 s; night (900 requests) stays whole
    assert p["steady"]["run_s"] == pytest.approx(2.0)
    assert p["night"]["run_s"] == 300 and p["night"]["kept"] == "whole"
    assert p["steady"]["expected_requests"] == pytest.approx(20_000, rel=1e-3)


def test_expected_requests_counts_tenant_bursts():
    wl = load_workload("dominant-tenant")  # 9,000 QPS x 30 s; big (60%) bursts 3x for 10 s
    assert expected_requests(wl) == pytest.approx(9000 * 30 + 9000 * 0.6 * 2 * 10, rel=2e-3)


# -- measures and the score ----------------------------------------------------------------

@pytest.mark.parametrize("base, other, expected", [
    (0.1, 0.3, pytest.approx(0.2)),   # both answered: the difference
    (0.1, None, None),                # the tail became never answered
    (None, None, 0.0),                # neither answered: goodput carries it
    (None, 0.4, 0.0),                 # the flaw answered a tail the base never did: no increase
])
def test_tail_increase(base, other, expected):
    assert tail_increase(base, other) == expected


def _flaw(loss, tail, gain=0.0, waste=0.0, gain_tail=0.0):
    return FlawRank(id="f", doc_item="1", failure="", fix="", exposed_by=[], per_scenario={}, rank=1,
                    cost=FlawCost(goodput_loss=loss, p99_increase_s=tail, wasted_gpu_s=waste, scenario="w",
                                  p99_scenario="w"),
                    gain=FlawGain(goodput_gain=gain, p99_decrease_s=gain_tail, scenario="w"))


def _row(loss, tail, waste, gain, gain_tail):
    return ScenarioCost(goodput_loss=loss, p99_increase_s=tail, wasted_gpu_s=waste, gain_goodput=gain,
                        gain_p99_s=gain_tail, goodput={}, p99_s={}, amplification={}, lost={})


def test_score_orders_by_goodput_then_tail_then_gain():
    flaws = {
        "small": _flaw(0.01, 0.05),
        "big": _flaw(0.40, 0.0),
        "never": _flaw(0.012, None),      # ties with 'small' on goodput (same 0.5-point step)...
        "slow": _flaw(0.011, 2.0),        # ... so the tail decides: never > 2 s > 50 ms
        "gainer": _flaw(0.0, 0.0, gain=0.3),
        "nothing": _flaw(0.0, 0.0),
    }
    order = sorted(flaws, key=lambda k: score_key(flaws[k]))
    assert order == ["big", "never", "slow", "small", "gainer", "nothing"]
    assert severity(0.3, None) > severity(0.3, 10.0) > severity(0.004, 99.0)


def test_worst_picks_the_most_harmful_scenario():
    rows = {"a": _row(0.10, 0.5, 3.0, 0.2, 0.1), "b": _row(0.30, 0.1, 1.0, -0.1, None)}
    cost, gain = worst(rows)
    assert cost.scenario == "b" and cost.goodput_loss == 0.30
    assert cost.p99_increase_s == 0.5 and cost.p99_scenario == "a" and cost.wasted_gpu_s == 3.0
    assert gain.goodput_gain == 0.2 and gain.p99_decrease_s is None


def test_classify_names_both_kinds_of_interaction():
    slo = 0.3
    compounding = _flaw(0.0, 0.0, gain=0.4)
    masked = _flaw(0.5, None, gain=0.001)
    additive = _flaw(0.5, 0.2, gain=0.3, gain_tail=0.1)
    assert classify(compounding, slo) == "compounding"
    assert classify(masked, slo) == "masked"
    assert classify(additive, slo) is None


# -- a real ablation on a tiny suite ------------------------------------------------------------

@functools.cache
def _tiny_rank():
    # night: 3 QPS (whole 300 s is under 1,000 requests; scaled to 60 s); steady 0.2 s of peak.
    return rank(["night", "steady"], seed=1, jobs=Jobs(workers=1), duration_scale=0.2)


@pytest.fixture(scope="module")
def tiny_rank():
    # Cached per process: under xdist a worker may leave and re-enter this module.
    return _tiny_rank()


@pytest.mark.slow
def test_every_flaw_gets_a_measured_cost(tiny_rank):
    assert tiny_rank.kind == "rank" and RankResult.from_json(tiny_rank.to_json()) == tiny_rank
    assert sorted(f.id for f in tiny_rank.flaws) == sorted(FLAW_IDS)
    for f in tiny_rank.flaws:
        assert set(f.per_scenario) == {"night", "steady"}
        assert f.cost.scenario in {"night", "steady"}
        assert 0.0 <= f.cost.goodput_loss <= 1.0
        assert f.gain.scenario in {"night", "steady"}
    assert tiny_rank.ablation_runs == 2 * (len(FLAW_IDS) + 1) * 2
    assert tiny_rank.runs == tiny_rank.ablation_runs + (tiny_rank.probe_runs or 0)
    for p in tiny_rank.interactions or []:  # every probe names a partner and a measured change
        assert p.kind in {"compounding", "masked"} and p.probes
        for r in p.probes:  # the marginal effect is the difference of the two measured goodputs
            if r.goodput_base is not None and r.goodput_with is not None:
                assert abs(abs(r.goodput) - abs(r.goodput_base - r.goodput_with)) < 1e-9


@pytest.mark.slow
def test_full_batch_only_dominates_at_night(tiny_rank):
    # At 3 QPS a batch of 32 takes minutes to fill: putting full batching back
    # into hardened must lose most of the night's goodput, and rank high.
    fbo = tiny_rank.flaw("full-batch-only")
    assert fbo.cost.scenario == "night"
    assert fbo.cost.goodput_loss > 0.5
    assert "full-batch-only" in tiny_rank.top
    assert fbo.gain.scenario == "night" and fbo.gain.goodput_gain > 0.5
    row = fbo.per_scenario["night"]
    assert row.goodput_loss == pytest.approx(row.goodput["hardened"] - row.goodput["hardened+full-batch-only"])


@pytest.mark.slow
def test_ranks_follow_the_score(tiny_rank):
    flaws = tiny_rank.ranked()
    assert [f.rank for f in flaws] == list(range(1, len(flaws) + 1))
    keys = [score_key(f) for f in flaws]
    assert keys == sorted(keys)
    assert tiny_rank.top == [f.id for f in flaws[:3]]
    assert set(tiny_rank.baselines) == {"hardened", "naive"}


@pytest.mark.slow
def test_rank_renders_at_80_columns(tiny_rank):
    console = Console(width=80, record=True, color_system=None)
    render(tiny_rank, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "full-batch-only" in text and "Insist on these before shipping" in text
    loss = tiny_rank.ranked()[0].cost.goodput_loss
    assert f"{100 * loss:.1f}" in text
    assert not math.isnan(loss)
