"""A review that cannot hide a flaw: shortened runs keep what each flaw's mechanism needs
(derived from the knobs), a flaw whose runs kept too little is warned about, requests
lost count in the score, and a p99 that went from never answered to a number is a
change (typed in the library, never worded "unchanged")."""

import pytest

from harness.analysis.exposure import STORM_LIVES, need, request_life_s, scenario_needs, short_run
from harness.analysis.rank.ablation import ablate, exposing_plan, score_key, worst
from harness.analysis.review import QUICK_SCALE, review_scenarios
from harness.analysis.shorten import disturbance, plan, shorten
from harness.analysis.variants import knobs_of, variant
from harness.engine.jobs import Jobs
from harness.results.rank import (FlawCost, FlawGain, FlawRank, KeptSpan, ScenarioCost, TailChange, measurable,
                                  tail_change)
from targets.config import TargetConfig
from targets.flaws import FLAWS
from workloads.loader import load_workload

BY_ID = {f.id: f for f in FLAWS}
GOOD = knobs_of("hardened")[1]


def _put_back(fid: str, **knobs) -> dict:
    return {**variant(GOOD, BY_ID[fid].present), **knobs}


# -- what a mechanism needs, from the knobs ---------------------------------------------------

@pytest.mark.parametrize("knobs, life", [
    ({}, 4.0),                                          # the doc's clients: 4 attempts x 1 s, no pause
    ({"client_timeout_s": 0.5, "client_retries": 1}, 1.0),  # 2 attempts x 0.5 s
    ({"client_backoff": "exponential", "backoff_cap_s": 0.5}, 4.0 + 3 * 0.5),  # + 3 pauses of up to 0.5 s
])
def test_request_life_is_every_attempt_timing_out_plus_the_pauses(knobs, life):
    assert request_life_s(TargetConfig.model_validate(_put_back("blind-retries", **knobs))) == pytest.approx(life)


def test_a_retry_storm_needs_several_request_lives():
    n = need("blind-retries", _put_back("blind-retries"))
    assert n is not None
    assert (n.disturbance_s, n.after_s) == (pytest.approx(STORM_LIVES * 4.0), pytest.approx(4.0))
    assert "retry storm" in n.mechanism and "4 attempts x 1 s" in n.mechanism
    assert need("full-batch-only", _put_back("full-batch-only")) is None  # stationary traffic shows it


# -- the plan keeps it, even --quick -------------------------------------------------------------

def test_quick_plan_keeps_a_retry_storms_span():
    p = exposing_plan(review_scenarios(), "hardened", QUICK_SCALE)
    for w in BY_ID["blind-retries"].exposed_by:  # slowdown, spike, gpu-outage
        assert p[w]["disturbance_s"] == pytest.approx(8.0) and p[w]["after_s"] >= 4.0 - 1e-9
        short = shorten(load_workload(w), p[w]["shortening"])
        d0, d1 = disturbance(short)
        assert d1 - d0 == pytest.approx(8.0)       # the run really keeps it
    # The old plan (no needs) kept 1.5 s of slowdown: too short for one request's life.
    assert plan(["slowdown"], QUICK_SCALE)["slowdown"]["disturbance_s"] == pytest.approx(1.5)
    # Scenarios no disturbance-bound flaw needs keep the scaled default.
    assert p["dominant-tenant"]["disturbance_s"] == pytest.approx(2.0)  # 2 timeouts, over 3 s x 0.5
    assert p["steady"]["disturbance_s"] is None


def test_needs_follow_the_knobs_and_the_script_caps_them():
    needs = scenario_needs({"blind-retries": ["slowdown"]}, {"blind-retries": ("slowdown",)},
                           {"blind-retries": _put_back("blind-retries", client_timeout_s=4.0)})
    assert needs["slowdown"].disturbance_s == pytest.approx(32.0)  # 2 lives of 4 x 4 s
    kept = plan(["slowdown"], needs=needs)["slowdown"]
    assert kept["disturbance_s"] == pytest.approx(10.0)            # all the script has


# -- the warning, per flaw -----------------------------------------------------------------------------

def test_warns_per_flaw_when_a_run_kept_too_little():
    knobs = _put_back("blind-retries")
    exposed = BY_ID["blind-retries"].exposed_by
    kept = {"slowdown": KeptSpan(disturbance_s=1.5, after_s=2.5), "spike": KeptSpan(disturbance_s=8.0, after_s=4.0),
            "steady": KeptSpan(disturbance_s=None, after_s=None)}
    w = short_run("blind-retries", ["slowdown", "spike", "steady"], exposed, knobs, kept)
    assert w is not None and set(w.runs) == {"slowdown"} and w.needed_disturbance_s == pytest.approx(8.0)
    kept["slowdown"] = KeptSpan(disturbance_s=8.0, after_s=4.0)
    assert short_run("blind-retries", ["slowdown", "spike", "steady"], exposed, knobs, kept) is None
    missing = short_run("blind-retries", ["steady"], exposed, knobs, kept)
    assert missing is not None and missing.missing == list(exposed)
    # A stationary exposing scenario (no-headroom on steady) has no disturbance to keep.
    nh = short_run("no-headroom", ["steady", "spike"], BY_ID["no-headroom"].exposed_by, _put_back("no-headroom"),
                   kept)
    assert nh is None


def test_a_run_too_short_is_warned_about_and_lost_requests_count():
    # gpu-outage cut to a tenth (0.3 s of outage): shorter than the 1 s client timeout that
    # no-failure-handling's lost requests need; its only cost there is requests lost in flight.
    r = ablate({"no-failure-handling": ["gpu-outage"]}, jobs=Jobs(workers=1), plan=plan(["gpu-outage"], 0.1),
               interactions=False)
    f = r.flaw("no-failure-handling")
    assert f.too_short is not None and set(f.too_short.runs) == {"gpu-outage"}
    assert f.too_short.runs["gpu-outage"].disturbance_s == pytest.approx(0.3)
    row = f.per_scenario["gpu-outage"]
    assert row.lost["hardened"] == 0 < row.lost["hardened+no-failure-handling"]
    assert f.cost.harmed == pytest.approx(row.lost["hardened+no-failure-handling"] / 7168, rel=0.05)
    assert f.cost.measurable() and row.cost_measurable()


# -- lost requests in the score ------------------------------------------------------------------------

def _row(loss=0.0, tail=0.0, lost=0.0, unserved=0.0, amp=0.0, change=TailChange.SHIFTED, p99=None):
    return ScenarioCost(goodput_loss=loss, p99_increase_s=tail, wasted_gpu_s=0.0, gain_goodput=0.0, gain_p99_s=0.0,
                        goodput={}, p99_s=p99 or {}, amplification={}, lost={}, lost_increase=lost,
                        unserved_increase=unserved, amplification_increase=amp, p99_change=change)


def _flaw(fid, row):
    cost, gain = worst({"w": row})
    return FlawRank(id=fid, doc_item="1", failure="", fix="", exposed_by=[], per_scenario={"w": row}, rank=1,
                    cost=cost, gain=gain)


def test_lost_timed_out_or_amplified_requests_are_a_measurable_cost():
    assert not measurable(0.0, 0.0)
    assert measurable(0.0, 0.0, harmed=0.003)           # 0.3% of requests lost in flight
    assert measurable(0.0, 0.0, amplification=0.01)     # 1% more attempts
    assert not measurable(0.001, 0.0001, harmed=0.0005, amplification=0.001)  # all noise
    flaws = [_flaw("nothing", _row()), _flaw("amplifies", _row(amp=0.02)), _flaw("loses", _row(lost=0.003)),
             _flaw("times-out", _row(unserved=0.01)), _flaw("slow", _row(tail=0.2))]
    order = [f.id for f in sorted(flaws, key=score_key)]
    assert order == ["slow", "times-out", "loses", "amplifies", "nothing"]
    assert flaws[2].cost.harmed == pytest.approx(0.003) and flaws[2].cost.measurable()


# -- a p99 from never answered to a number is a change --------------------------------------------------

def test_tail_change_is_typed():
    assert tail_change(None, 0.898) is TailChange.BECAME_ANSWERED
    assert tail_change(0.1, None) is TailChange.BECAME_NEVER
    assert tail_change(None, None) is TailChange.NEVER
    assert tail_change(0.1, 0.1) is TailChange.SHIFTED


def test_worst_tail_prefers_a_change_in_kind_over_noise():
    labels = ("hardened", "hardened+f", "naive", "naive-f")
    rows = {"steady": _row(tail=0.0002, p99=dict(zip(labels, (0.1, 0.1002, 0.1, 0.1)))),
            "spike": _row(loss=0.44, tail=0.0, change=TailChange.BECAME_ANSWERED,
                          p99=dict(zip(labels, (None, 0.898, None, None))))}
    cost, _ = worst(rows)
    assert cost.p99_scenario == "spike" and cost.p99_change is TailChange.BECAME_ANSWERED
    assert (cost.p99_from_s, cost.p99_to_s) == (None, 0.898)
    rows["slowdown"] = _row(tail=0.05, p99=dict(zip(labels, (0.1, 0.15, 0.1, 0.1))))
    assert worst(rows)[0].p99_scenario == "slowdown"  # a measurable increase still comes first


def _cost(**kw) -> FlawCost:
    base = dict(goodput_loss=0.442, p99_increase_s=0.0, wasted_gpu_s=0.0, scenario="spike", p99_scenario="spike")
    return FlawCost(**{**base, **kw})


def test_never_to_a_number_is_never_worded_unchanged():
    from reports.rank import p99_words, tail_cell
    from reports.rank_charts import cost_tail

    c = _cost(p99_change=TailChange.BECAME_ANSWERED, p99_from_s=None, p99_to_s=0.898)
    assert p99_words(c) == "never answered -> 898 ms in spike"
    assert tail_cell(c) == "never->898 ms" and cost_tail(c) == "never answered -> 898 ms"
    assert p99_words(_cost()) == "unchanged"
    assert p99_words(_cost(p99_increase_s=None)) == "never answered in spike"
    assert p99_words(_cost(p99_increase_s=None, p99_from_s=0.114, p99_to_outcome="shed")) == \
        "114 ms -> on shed requests in spike"
    shed_to_never = _cost(p99_change=TailChange.NEVER, p99_from_outcome="shed", p99_to_outcome="timed_out")
    assert tail_cell(shed_to_never) == "shed->never"
    assert p99_words(shed_to_never) == "on shed requests -> never answered (timed out) in spike"
    assert p99_words(_cost(p99_increase_s=0.2, p99_scenario="slowdown")) == "+200 ms in slowdown"
    g = FlawGain(goodput_gain=0.0, p99_decrease_s=0.0, scenario="spike")
    assert g.p99_change is TailChange.SHIFTED  # older files without the field still load


def test_noise_in_the_tail_does_not_outrank_lost_requests():
    # no-failure-handling in a quick review: steady's p99 moved by a tenth of a millisecond,
    # gpu-outage lost 0.28% of its requests in flight; gpu-outage is where it costs.
    rows = {"steady": _row(tail=0.0001), "gpu-outage": _row(tail=-0.0045, lost=0.0028, amp=0.0028)}
    cost, _ = worst(rows)
    assert cost.scenario == "gpu-outage" and cost.harmed == pytest.approx(0.0028)
    flaws = [_flaw("noisy-tail", _row(tail=0.0004)), _flaw("loses", _row(lost=0.0028))]
    assert [f.id for f in sorted(flaws, key=score_key)] == ["loses", "noisy-tail"]


def test_a_tail_on_shed_requests_is_not_called_never_answered():
    from reports.rank_charts import p99_at, p99_change

    assert p99_at(None, "shed") == "on shed requests"
    assert p99_at(None, "timed_out") == "never answered (timed out)"
    assert p99_at(None) == "never answered" and p99_at(0.898, "shed") == "898 ms"
    assert p99_change(0.0, TailChange.BECAME_ANSWERED, 0.898, from_outcome="shed") == "on shed requests -> 898 ms"
    assert p99_change(0.0, TailChange.NEVER, from_outcome="shed", to_outcome="timed_out") == \
        "on shed requests -> never answered (timed out)"
