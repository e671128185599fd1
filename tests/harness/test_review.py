"""The design-review demo on a reduced setup: its items hold the figures of their
experiments (verdicts decided in the library), the words quote only numbers the
embedded rank holds, a user's design replaces naive, and a Part 2/3 that fails
becomes a note instead of sinking the review."""

import re

import pytest
from rich.console import Console

from harness.analysis.review.run import review
from harness.engine.jobs import Jobs
from harness.results.review import ReviewResult
from reports.fmt import fmt_pct
from reports.review import gain, measured, narrative, render
from reports.review_followups import alerts_lines

SMALL = {"full-batch-only": ["night"], "no-admission-control": ["night"], "blind-retries": ["night"]}


@pytest.fixture(scope="module")
def result():
    # No LLM section (~8 CPU-s of pure-Python LLM sims): tests/harness/test_llm_review.py renders a review with one.
    return review(flaw_scenarios=SMALL, scale=0.2, jobs=Jobs(workers=1), llm=None)


def test_items_hold_the_measured_figures(result):
    fbo = result.rank.flaw("full-batch-only")
    row = fbo.per_scenario["night"]
    item = next(it for it in result.doc_items if it.flaw == "full-batch-only")
    assert item.cost.measurable and item.gain.measurable
    assert (item.cost.before, item.cost.after) == ("hardened", "hardened+full-batch-only")
    assert item.cost.goodput_after == row.goodput["hardened+full-batch-only"]
    assert item.cost.change == row.goodput_loss
    assert (item.gain.before, item.gain.after) == ("naive", "naive-full-batch-only")
    assert item.gain.change == row.gain_goodput
    assert item.runs_s == {"night": result.rank.durations["night"].run_s}


def test_narrative_quotes_measured_numbers(result):
    # The alerts follow-up quotes rule thresholds (14.4% ...): config, not figures of the rank.
    text = "\n".join(line for line in narrative(result) if line not in alerts_lines(result.alerts))
    row = result.rank.flaw("full-batch-only").per_scenario["night"]
    # The goodput figures of both sides, as measured, appear in the narrative.
    for label in ("hardened", "hardened+full-batch-only", "naive", "naive-full-batch-only"):
        assert fmt_pct(row.goodput[label]) in text
    assert f"{100 * result.rank.flaw('full-batch-only').cost.goodput_loss:.1f} points" in text
    # Every percentage in the narrative is one the embedded rank result holds.
    held = set()
    for f in result.rank.flaws:
        for r in f.per_scenario.values():
            held |= {fmt_pct(v) for v in r.goodput.values()}
            held |= {f"{100 * v:.1f}%" for v in (r.goodput_loss, r.gain_goodput)}
    quoted = set(re.findall(r"\d+\.\d%", text))
    assert quoted and quoted <= held


def test_items_walk_the_doc_in_order(result):
    assert [it.flaw for it in result.doc_items] == ["full-batch-only", "blind-retries", "no-admission-control"]
    for it in result.doc_items:
        assert "->" in measured(it) and "night" in measured(it) and gain(it)
    assert isinstance(result, ReviewResult) and result.design == "naive" and result.rank.kind == "rank"


def test_console_view_fits_80_columns(result):
    console = Console(width=80, record=True, color_system=None)
    render(result, console)
    out = console.export_text()
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Item 2: full-batch-only" in out and "Insist on these before shipping" in out


def test_user_design_replaces_naive(tmp_path):
    design = tmp_path / "my-design.toml"
    design.write_text('name = "mine"\nbase = "naive"\nfix = ["full-batch-only"]\n')
    d = review(str(design), flaw_scenarios={"full-batch-only": ["night"], "blind-retries": ["night"]},
               scale=0.2, jobs=Jobs(workers=1), llm=None)  # the module's review covers the LLM section
    assert d.rank.flawed == "mine"
    fbo = next(it for it in d.doc_items if it.flaw == "full-batch-only")
    assert fbo.gain.note and "already fixed in mine" in gain(fbo)
    assert "full-batch-only" not in d.rank.top  # insist only on flaws the design still has
    assert "mine-blind-retries" in d.rank.flaw("blind-retries").per_scenario["night"].goodput


def test_a_failing_part_becomes_a_note():
    def broken():
        raise RuntimeError("no GPUs today")

    d = review(flaw_scenarios={"full-batch-only": ["night"]}, scale=0.2, jobs=Jobs(workers=1),
               parts=[("Part 2 (capacity)", broken)], llm=None)
    assert d.capacity is None and d.pool is None
    assert d.notes == ["Part 2 (capacity) failed: RuntimeError: no GPUs today"]
    assert any("Part 2 (capacity) failed" in line for line in narrative(d))


def test_progress_counts_every_run():
    planned, done = [], []
    d = review(flaw_scenarios=SMALL, scale=0.2, jobs=Jobs(workers=1), on_planned=planned.append,
               on_done=lambda i, job, res: done.append(job.target), llm=None)
    assert sum(planned) == len(done) == d.rank.runs


def test_warns_per_flaw_whose_runs_could_not_show_it(result):
    # SMALL runs blind-retries and no-admission-control on night only: none of the
    # scenarios that expose them ran, so each item says so; full-batch-only (night) does not.
    by_flaw = {it.flaw: it for it in result.doc_items}
    assert by_flaw["full-batch-only"].too_short is None
    for fid in ("blind-retries", "no-admission-control"):
        w = by_flaw[fid].too_short
        assert w is not None and "slowdown" in w.missing and "spike" in w.missing
    text = "\n".join(narrative(result))
    assert "Warning: none of the scenarios that expose it (slowdown, spike, gpu-outage) was run" in text
    console = Console(width=80, record=True, color_system=None)
    render(result, console)
    assert "warning" in console.export_text()


def test_alerts_follow_up_reuses_the_ablation_runs(result):
    # No run beyond the ablation's: the rules were evaluated on its runs of both designs.
    a = result.alerts
    assert a is not None and a.source == "the ablation's own runs of both designs"
    days = {(d.design, d.scenario): d for d in a.days}
    assert set(days) == {("hardened", "night"), ("naive", "night")}
    naive, hardened = days[("naive", "night")], days[("hardened", "night")]
    assert naive.goodput == result.rank.baselines["naive"]["night"].goodput_ratio
    assert naive.bad and naive.first_rule is not None  # naive waits for full batches all night
    assert not hardened.bad and not hardened.fired and a.false_alarms == []
    assert a.metrics[0].signal == "error-ratio" and "naive/night" in a.metrics[0].detected
    assert result.canary is None  # canary_seeds=0: not asked for
    assert any(line.startswith("Dashboards and alerts") for line in narrative(result))


def test_the_follow_ups_round_trip_through_the_file(result):
    from harness.results import from_json

    doc = result.to_json()
    assert doc["alerts"]["days"] and from_json(doc).alerts == result.alerts


def test_parts_built_in_their_own_process_count_their_cache_hits_here(tmp_path):
    # The parts are built in a forked process (harness.analysis.review.parts_process.start_parts): what
    # the run cache served there is counted in this process's cache, as the CLI reports it.
    from harness.engine.run_cache import RunCache

    cache = RunCache(tmp_path / "cache")

    def cached_twice():
        for _ in range(2):
            cache.memo("test.part", {"n": 1}, lambda: 41, "a part's figure")

    review(flaw_scenarios={"full-batch-only": ["night"]}, scale=0.2, jobs=Jobs(workers=1, cache=cache),
           parts=[("Part 3 (pool)", cached_twice)], llm=None, alerts=False)
    assert "a part's figure" in cache.hits and cache.misses >= 1  # the part's miss, then its hit


def test_a_parts_process_that_dies_becomes_a_note():
    import os

    d = review(flaw_scenarios={"full-batch-only": ["night"]}, scale=0.2, jobs=Jobs(workers=1),
               parts=[("Part 2 (capacity)", lambda: os._exit(3))], llm=None, alerts=False)
    assert d.capacity is None
    assert d.notes == ["the Part 2/3 answers failed: their process ended without them (exit code 3)"]


def test_the_capacity_part_runs_its_points_in_the_parts_process_keeping_the_cache(monkeypatch, tmp_path):
    """Beside the review's own worker processes, the parts' process runs the capacity plan's points
    itself (a pool of its own put twice as many processes as cores to work); other executors, and
    the run cache, are passed on as they are."""
    import harness.analysis.capacity as capacity
    from harness.analysis.review import default_parts
    from harness.engine.jobs import Executor, Jobs
    from harness.engine.run_cache import RunCache

    seen: list[Jobs] = []
    monkeypatch.setattr(capacity, "plan_capacity", lambda seed, quick, jobs: seen.append(jobs))
    cache = RunCache(tmp_path)
    for given, expected in ((Jobs(Executor.PROCESS, workers=2, cache=cache), Executor.INLINE),
                            (Jobs(Executor.INLINE, cache=cache), Executor.INLINE),
                            (Jobs(Executor.RAY, workers=2, cache=cache), Executor.RAY)):
        name, build = default_parts(1, given)[0]
        assert name == "Part 2 (capacity)"
        build()
        assert seen[-1].executor is expected and seen[-1].cache is cache
