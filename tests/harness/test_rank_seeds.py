"""Rank over seeds: each seed ranks the flaws alone; the ranking takes the median place, and
every flaw says how stable its place is and its cost's interval; a real tiny two-seed ablation."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.analysis.rank.ablation import rank, rank_over_seeds
from harness.engine.jobs import Jobs
from harness.results.rank import FlawCost, FlawGain, FlawRank, RankResult, RunPlan, ScenarioCost
from reports.rank import render, stability_rows


def cost(loss: float, p99: float | None = 0.01) -> FlawCost:
    return FlawCost(goodput_loss=loss, p99_increase_s=p99, wasted_gpu_s=0.0, scenario="steady", p99_scenario="steady")


def flaw(fid: str, rank_no: int) -> FlawRank:
    return FlawRank(id=fid, doc_item="1", failure="", fix="", exposed_by=[], cost=cost(0.1),
                    gain=FlawGain(goodput_gain=0.0, p99_decrease_s=0.0, scenario="steady"), rank=rank_no,
                    per_scenario={"steady": ScenarioCost(goodput_loss=0.1, p99_increase_s=0.01, wasted_gpu_s=0.0,
                                                         gain_goodput=0.0, gain_p99_s=0.0, goodput={}, p99_s={},
                                                         amplification={}, lost={})})


# Seed 1 puts y first; seeds 2 and 3 put x first: the median says x.
PLACES = {1: {"x": (2, cost(0.10)), "y": (1, cost(0.12)), "z": (3, cost(0.01, None))},
          2: {"x": (1, cost(0.14)), "y": (2, cost(0.11)), "z": (3, cost(0.02))},
          3: {"x": (1, cost(0.15)), "y": (2, cost(0.10)), "z": (3, cost(0.01))}}


def test_median_place_over_seeds_decides_and_stability_is_reported():
    ranked = rank_over_seeds([flaw("y", 1), flaw("x", 2), flaw("z", 3)], PLACES, [1, 2, 3])
    assert [(f.id, f.rank) for f in ranked] == [("x", 1), ("y", 2), ("z", 3)]
    x, y, z = (f.over_seeds for f in ranked)
    assert x.places == [2, 1, 1] and x.held == pytest.approx(2 / 3) and x.place_range == (1, 2)
    assert z.places == [3, 3, 3] and z.held == 1.0
    assert x.goodput_loss.mean == pytest.approx(0.13) and x.goodput_loss.n == 3 and x.goodput_loss.has_interval
    assert z.p99_increase_s.missing == 1 and z.p99_increase_s.mean is None  # never answered under seed 1


def test_the_view_shows_places_and_intervals():
    flaws = rank_over_seeds([flaw("y", 1), flaw("x", 2), flaw("z", 3)], PLACES, [1, 2, 3])
    result = RankResult(seed=1, seeds=[1, 2, 3], suite=["steady"], slo_s=0.3, good="hardened", flawed="naive",
                        good_spec="hardened", flawed_spec="naive", flaws=flaws, top=["x", "y"],
                        baselines={"hardened": {}, "naive": {}}, score="", runs=9, ablation_runs=9,
                        durations={"steady": RunPlan(full_s=60, run_s=5, expected_requests=1e4, kept="")},
                        flaws_in_flawed=["x", "y", "z"], wall_s=0.0)
    rows = stability_rows(result)
    assert rows[0][:2] == ("1", "x") and rows[0][4] == "1-2 (2,1,1)" and rows[0][5] == "67%"
    assert rows[2][3] == "never in 1/3"
    console = Console(width=100, record=True)
    render(result, console)
    text = console.export_text()
    assert "over 3 seeds" in text and "seeds 1, 2, 3" in text
    assert RankResult.from_json(result.to_json()) == result


@pytest.mark.slow
def test_a_real_two_seed_ablation_records_both_seeds():
    result = rank(["steady"], seed=3, jobs=Jobs(workers=1), duration_scale=0.1,
                  flaws=["no-headroom", "per-server-queues"], interactions=False, seeds=[3, 4])
    assert result.seeds == [3, 4] and result.seed == 3 and result.ablation_runs == 2 * (2 + 2 * 2)
    for f in result.flaws:
        assert len(f.over_seeds.places) == 2 and f.over_seeds.goodput_loss.n == 2
    one = rank(["steady"], seed=3, jobs=Jobs(workers=1), duration_scale=0.1,
               flaws=["no-headroom", "per-server-queues"], interactions=False)
    assert "seeds" not in one.to_json() and all(f.over_seeds is None for f in one.flaws)
    assert {f.id: f.cost for f in one.flaws} == {f.id: f.cost for f in result.flaws}


def test_the_review_quotes_each_flaws_places():
    from reports.review import _places

    x, y, z = rank_over_seeds([flaw("y", 1), flaw("x", 2), flaw("z", 3)], PLACES, [1, 2, 3])
    assert _places(x) == ", places 1-2 over 3 seeds (held 67%)"
    assert _places(z) == ", place 3 over 3 seeds (held 100%)"
    assert _places(flaw("w", 1)) == ""
