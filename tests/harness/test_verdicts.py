"""Scenario verdicts: each declared figure read off a hand-built pair of summaries, judged."""

from __future__ import annotations

import pytest

from harness.analysis.compare.verdicts import figure_value, judge, scenario_verdicts
from harness.results.compare import CompareResult, Winner
from targets.config import TargetConfig
from tests.harness.summaries import summary, tenant
from workloads.answers import Answer
from workloads.model import WorkloadConfig


def dominant(answers: list[dict]) -> WorkloadConfig:
    return WorkloadConfig.model_validate({
        "name": "dom", "phases": [{"kind": "constant", "duration_s": 10, "rate_rps": 100}],
        "tenants": [{"name": "big", "share": 0.6}, {"name": "s0", "share": 0.2}, {"name": "s1", "share": 0.2}],
        "answers": answers})


# Naive: the big tenant starves the small ones; hardened limits it.
NAIVE = summary(tenants={"big": tenant(600, 500, 0.25), "s0": tenant(200, 80, 0.9), "s1": tenant(200, 60, 1.2)},
                amplification=2.5, recovery={"disturbance_end_s": 20.0, "recovered_after_s": None},
                requests={"lost": 7})
HARDENED = summary(tenants={"big": tenant(600, 400, 0.25), "s0": tenant(200, 200, 0.11),
                            "s1": tenant(200, 199, 0.12)},
                   amplification=1.05, recovery={"disturbance_end_s": 20.0, "recovered_after_s": 1.5},
                   cache={"mode": "normalized", "lookups": 1000, "hits": 640, "hit_rate": 0.64})


def test_small_tenant_group_aggregates_counts_and_takes_the_worst_p99():
    wl = dominant([{"figure": "tenants.!big.goodput_ratio", "label": "small tenants' goodput"},
                   {"figure": "tenants.!big.p99_ok_s"}])
    v = scenario_verdicts(wl, NAIVE, HARDENED)
    goodput, p99 = v.answers
    # (80 + 60) / (200 + 200) = 0.35 vs (200 + 199) / 400 = 0.9975
    assert (goodput.a, goodput.b) == (pytest.approx(0.35), pytest.approx(0.9975))
    assert goodput.winner is Winner.B and goodput.label == "small tenants' goodput"
    # The group's p99 is bounded by its worst member's: 1.2 s vs 0.12 s.
    assert (p99.a, p99.b, p99.winner) == (1.2, 0.12, Winner.B)
    assert p99.label == "tenants !big: worst p99 (answered)" and p99.unit == "s"


def test_never_is_the_worst_and_directions_follow_the_figure():
    rec = Answer(figure="recovery.recovered_after_s")
    assert figure_value(rec, NAIVE) is None          # disturbed, never recovered
    assert judge(rec, None, 1.5)[0] is Winner.B
    assert judge(rec, None, None)[0] is Winner.TIE
    amp = Answer(figure="amplification")
    assert judge(amp, 2.5, 1.05)[0] is Winner.B      # lower is better
    assert judge(Answer(figure="amplification", better="higher"), 2.5, 1.05)[0] is Winner.A
    lost = Answer(figure="requests.lost")
    assert (figure_value(lost, NAIVE), figure_value(lost, HARDENED)) == (7, 0)


@pytest.mark.parametrize("figure, a, b, tie, winner", [
    # ratios: half a point is noise
    ("goodput_ratio", 0.780, 0.784, 0.005, Winner.TIE),
    ("goodput_ratio", 0.780, 0.790, 0.005, Winner.B),
    # seconds: within max(1 ms, 5%) is a tie: 100 vs 104 ms ties, 100 vs 110 ms does not
    ("latency_ok_s.p99", 0.100, 0.104, 0.0052, Winner.TIE),
    ("latency_ok_s.p99", 0.100, 0.110, 0.0055, Winner.A),
    # counts: 5% of the larger
    ("requests.lost", 100, 97, 5.0, Winner.TIE),
    ("requests.lost", 319, 0, 15.95, Winner.B),
])
def test_noise_threshold(figure, a, b, tie, winner):
    won, used = judge(Answer(figure=figure), a, b)
    assert (won, used) == (winner, pytest.approx(tie))


def test_a_files_own_tie_overrides_the_default():
    assert judge(Answer(figure="goodput_ratio", tie=0.02), 0.78, 0.79) == (Winner.TIE, 0.02)


def test_cache_gpu_time_saved_is_hits_times_a_requests_share_of_a_full_batch():
    cfg = TargetConfig(batch_size=32, batch_time_s=0.1)
    saved = Answer(figure="cache.gpu_s_saved")
    assert figure_value(saved, HARDENED, cfg) == pytest.approx(640 * 0.1 / 32)
    assert figure_value(saved, NAIVE, cfg) == 0.0
    rate = Answer(figure="cache.hit_rate")
    assert (figure_value(rate, NAIVE), figure_value(rate, HARDENED)) == (0.0, 0.64)  # no cache: no hits


def test_verdicts_round_trip_through_the_compare_document():
    wl = dominant([{"figure": "tenants.!big.goodput_ratio"}, {"figure": "amplification"}])
    v = scenario_verdicts(wl, NAIVE, HARDENED)
    doc = CompareResult(a="naive", b="hardened", seed=1, scenarios={"dom": {"naive": NAIVE, "hardened": HARDENED}},
                        verdicts={"dom": v}).to_json()
    assert doc["verdicts"]["dom"]["answers"][1]["winner"] == "B"
    back = CompareResult.from_json(doc)
    assert back.verdicts["dom"].answers[1] == v.answers[1]
    assert back.verdicts["dom"].answers[0] == v.answers[0] and back.verdicts == {"dom": v}
