"""The rank, review and gate kinds end to end: the file each command writes loads
with `load_result`, round-trips through `from_json`/`to_json`, and renders through
the view registry in the terminal and in HTML. Small inputs: a one-scenario suite
(`night`, 3 QPS, cut short), a review that reuses that rank, a two-check gate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

import harness.analysis.llm
from harness.cli import app
from harness.results import from_json, load_result
from harness.results.gate import GateResult
from harness.results.rank import FlawCost, FlawGain, FlawRank, RankResult, RunPlan, ScenarioCost
from harness.results.review import ReviewResult
from reports.page import write_html
from reports.rank_charts import TOP, heatmap_figure, ranking_figure
from reports.registry import view
from targets.flaws import FLAWS

GATE = """
[defaults]
duration_s = 20
[[scenario]]
name = "night"
checks = ["latency_s.p99 <= 0.3", "tenants.*.p99_s <= 0.3"]
[[paired]]
scenario = "night"
b = "naive"
checks = ["goodput_ratio >= 2"]
"""


def _cli(*args: str) -> None:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def files(tmp_path_factory, llm_rank_30s) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("kinds")
    suite = d / "tiny.toml"
    suite.write_text('scenarios = ["night"]\n')
    gate_file = d / "gate.toml"
    gate_file.write_text(GATE)
    out = {kind: d / f"{kind}.json" for kind in ("rank", "review", "gate")}
    with pytest.MonkeyPatch.context() as mp:  # the rank's LLM section: the session's, not ~5 CPU-s more of its own
        mp.setattr(harness.analysis.llm, "llm_rank", lambda seed: llm_rank_30s)
        _cli("rank", "--suite", str(suite), "--scale", "0.05", "--jobs", "1", "--quiet", "--out", str(out["rank"]))
    _cli("review", "--rank", str(out["rank"]), "--no-parts", "--quiet", "--out", str(out["review"]))
    _cli("gate", str(gate_file), "--jobs", "1", "--out", str(out["gate"]))
    return out


@pytest.mark.parametrize("kind, cls", [("rank", RankResult), ("review", ReviewResult), ("gate", GateResult)])
def test_result_file_loads_and_round_trips(files, kind, cls):
    result = load_result(files[kind])
    assert isinstance(result, cls) and result.kind == kind
    doc = json.loads(files[kind].read_text())
    assert from_json(doc).to_json() == doc


@pytest.mark.parametrize("kind, expect", [
    ("rank", ["Insist on these before shipping", "full-batch-only"]),
    ("review", ["design review: naive", "Item 2: full-batch-only", "ranking"]),
    ("gate", ["PASSED", "latency_s.p99 <= 0.3"]),
])
def test_renders_in_the_terminal(files, kind, expect):
    console = Console(width=80, record=True, color_system=None)
    view(kind).render(load_result(files[kind]), console)
    text = console.export_text()
    assert all(e in text for e in expect), text
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize("kind", ["rank", "review", "gate"])
def test_renders_in_html_with_every_section(files, kind, tmp_path):
    result = load_result(files[kind])
    sections = view(kind).sections(result)
    assert sections
    page = write_html([result], tmp_path / f"{kind}.html").read_text()
    assert view(kind).title(result) in page
    for s in sections:
        assert f"<h3>{s.title}</h3>" in page.replace("&#x27;", "'")
    if kind == "review":  # the embedded rank's sections are part of the review
        assert "cost per flaw and scenario" in page


def test_json_flag_prints_the_result(files, tmp_path):
    done = CliRunner().invoke(app, ["review", "--rank", str(files["rank"]), "--no-parts", "--json",
                                    "--out", str(tmp_path / "r.json")])
    assert done.exit_code == 0
    assert json.loads(done.stdout) == json.loads((tmp_path / "r.json").read_text())


@pytest.mark.slow  # over 2 s on 2 cores (issue 39: the fast tier under 45 s)
def test_review_embeds_part_2_and_part_3(files, tmp_path):
    from harness.analysis.capacity import Budget, plan_capacity
    from harness.analysis.pool import PoolConfig, run_pool_experiment
    from harness.analysis.review import review
    from harness.engine.jobs import Jobs

    tiny = Budget(requests=1500, min_s=1.0, max_s=3.0, curve_utilizations=(0.7,), loads=(0.01, 0.1),
                  offline_rounds=2, extras=False, search_width=1)
    parts = [("Part 2 (capacity)", lambda: plan_capacity(qps=200, batch_size=8, batch_time_s=0.5,
                                                         jobs=Jobs(workers=1), budget=tiny)),
             ("Part 3 (pool)", lambda: run_pool_experiment(PoolConfig(duration_s=5.0)))]
    result = review(rank=load_result(files["rank"]), parts=parts, alerts=False)
    assert result.notes == [] and result.capacity.kind == "capacity" and result.pool.kind == "pool"
    doc = result.to_json()
    assert from_json(json.loads(json.dumps(doc))).to_json() == doc
    page = write_html([result], tmp_path / "review.html").read_text()
    for part in ("capacity", "pool"):
        for s in view(part).sections(getattr(result, part)):
            assert s.title in page.replace("&#x27;", "'")
    assert "Part 2: capacity: " in page and "Part 3: shared GPU pool: " in page
    console = Console(width=100, record=True, color_system=None)
    view("review").render(result, console)
    text = console.export_text()
    assert "Part 2: capacity" in text and "Part 3: shared GPU pool" in text


# -- the rank charts on a synthetic result ---------------------------------------------------

def synthetic_rank(help_on: str | None = None) -> RankResult:
    """Every flaw with seeded costs on three scenarios; flaw 2's p99 became never answered;
    `help_on`: the top flaw helps there (a negative loss)."""
    rng = np.random.default_rng(7)
    suite = ["steady", "spike", "gpu-outage"]
    flaws = []
    for f in FLAWS:
        per = {w: ScenarioCost(goodput_loss=float(rng.uniform(0, 0.4)), p99_increase_s=float(rng.uniform(-0.01, 2)),
                               wasted_gpu_s=float(rng.uniform(0, 50)), gain_goodput=float(rng.uniform(0, 0.3)),
                               gain_p99_s=float(rng.uniform(0, 1)), goodput={}, p99_s={}, amplification={}, lost={})
               for w in suite}
        w = max(per, key=lambda k: per[k].goodput_loss)
        flaws.append(FlawRank(id=f.id, doc_item=f.doc_item, failure=f.failure, fix=f.fix, exposed_by=[], rank=0,
                              per_scenario=per, cost=FlawCost(goodput_loss=per[w].goodput_loss, scenario=w,
                                                              p99_increase_s=per[w].p99_increase_s, p99_scenario=w,
                                                              wasted_gpu_s=per[w].wasted_gpu_s),
                              gain=FlawGain(goodput_gain=per[w].gain_goodput, p99_decrease_s=0.1, scenario=w)))
    flaws.sort(key=lambda f: -f.cost.goodput_loss)
    flaws = [f.model_copy(update={"rank": i + 1}) for i, f in enumerate(flaws)]
    flaws[1] = flaws[1].model_copy(update={"cost": flaws[1].cost.model_copy(update={"p99_increase_s": None})})
    if help_on:
        per = dict(flaws[0].per_scenario)
        per[help_on] = per[help_on].model_copy(update={"goodput_loss": -0.2})  # e.g. a cache on repeated payloads
        flaws[0] = flaws[0].model_copy(update={"per_scenario": per})
    return RankResult(seed=1, suite=suite, slo_s=0.3, good="hardened", flawed="naive", good_spec="hardened",
                      flawed_spec="naive", flaws=flaws, top=[f.id for f in flaws[:3]],
                      baselines={"hardened": {}, "naive": {}}, score="", runs=0, ablation_runs=0,
                      durations={w: RunPlan(full_s=60, run_s=5, expected_requests=1e4, kept="") for w in suite},
                      flaws_in_flawed=[f.id for f in FLAWS], wall_s=0.0)


def test_rank_chart_orders_by_rank_highlights_top_three_and_marks_never():
    result = synthetic_rank()
    chart, heat = ranking_figure(result), heatmap_figure(result)
    top = [t for t in chart.data if t.name.startswith("top three")]
    assert len(top) == 3 and all(t.marker.color == TOP for t in top[:2])
    assert [y.split(". ")[1].rstrip(" ★") for y in top[0].y] == result.top
    order = list(chart.layout.yaxis.categoryarray)[::-1]
    assert [int(o.split(".")[0]) for o in order] == list(range(1, len(FLAWS) + 1))
    assert top[1].text[1] == "never" and top[1].marker.pattern.shape[1] == "/"  # flaw 2: p99 never answered
    assert len(heat.data[0].z) == len(FLAWS) and len(heat.data[0].x) == 3
    assert heat.data[0].z[0][0] == pytest.approx(100 * result.flaws[0].per_scenario["steady"].goodput_loss)


def test_heatmap_keeps_the_sign_of_a_flaw_that_helps():
    heat = heatmap_figure(synthetic_rank(help_on="spike")).data[0]
    assert heat.z[0][1] == pytest.approx(-20.0) and heat.text[0][1] == "-20.0"
    assert heat.zmid == 0 and heat.zmin is None
    assert heatmap_figure(synthetic_rank()).data[0].zmin == 0  # all costs: one-sided scale from zero


def _warned_rank() -> RankResult:
    """The synthetic rank with flaw 1's tail gone from never answered to 898 ms on spike
    (no increase anywhere) and flaw 3 warned about: its slowdown run kept 1.5 s."""
    from harness.results.rank import KeptSpan, ShortRun, TailChange

    r = synthetic_rank()
    flaws = list(r.flaws)
    c = flaws[0].cost.model_copy(update={"p99_increase_s": 0.0, "p99_scenario": "spike",
                                         "p99_change": TailChange.BECAME_ANSWERED, "p99_to_s": 0.898})
    flaws[0] = flaws[0].model_copy(update={"cost": c})
    warn = ShortRun(mechanism="a retry storm needs several timeout-and-retry cycles", needed_disturbance_s=8.0,
                    needed_after_s=4.0, runs={"slowdown": KeptSpan(disturbance_s=1.5, after_s=2.5)})
    flaws[2] = flaws[2].model_copy(update={"too_short": warn})
    return r.model_copy(update={"flaws": flaws, "top": [f.id for f in flaws[:3]]})


def test_rank_view_words_never_to_a_number_and_warns_per_flaw(tmp_path):
    r = _warned_rank()
    console = Console(width=80, record=True, color_system=None)
    view("rank").render(r, console)
    text = " ".join(console.export_text().split())
    first, third = r.flaws[0], r.flaws[2]
    assert f"{first.id} (doc item {first.doc_item}):" in text
    assert "p99 never answered -> 898 ms in spike" in text and "p99 unchanged" not in text
    assert f"! {third.id}: the runs were too short to show it (slowdown kept 1.5 s of it and 2.5 s after)" in text
    assert "8 s of disturbance and 4 s after; its cost may be understated" in text
    page = write_html([r], tmp_path / "rank.html").read_text()
    assert "never answered -&gt; 898 ms" in page and "warning:" in page
    doc = r.to_json()
    assert from_json(json.loads(json.dumps(doc))).to_json() == doc  # the warning and the change round-trip


def test_review_narrative_never_says_unchanged_beside_never_to_a_number():
    from reports.review import narrative

    r = _warned_rank()
    review = ReviewResult(design="naive", seed=1, quick=True, rank=r, items=[], notes=[], wall_s=0.0)
    insist = next(line for line in narrative(review) if line.startswith("Insist on these"))
    first = insist.split("; ")[0]
    assert first.startswith(f"Insist on these before shipping: {r.flaws[0].id}")
    assert "p99 never answered -> 898 ms in spike" in first and "unchanged" not in first and "+0" not in first
