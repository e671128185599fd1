"""The run cache: a second identical run is served from disk with the same figures, and any
change to what decides a run (a knob, the workload, the seed, the code) misses.

Every test has a cache directory of its own (tests/conftest.py sets HARNESS_CACHE_DIR)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.analysis.variants import VariantJob, knobs_of
from harness.cli import app
from harness.engine.jobs import Executor, Jobs, JobsInterrupted, SimJob
from harness.engine.run_cache import RunCache, RunCacheWarning, code_version, default_dir, sim_key
from harness.results.run import RunResult

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from same_figures import HOW_MADE, differences  # noqa: E402

SMALL = SimJob("hardened", "steady", 1, duration_s=0.5, rate_rps=400.0)  # 200 requests: cheap


def cached_jobs(root: Path) -> Jobs:
    return Jobs(Executor.INLINE, cache=RunCache(root))


def test_second_identical_run_hits_with_the_same_figures(tmp_path: Path) -> None:
    first = cached_jobs(tmp_path)
    fresh = first.run([SMALL])[0]
    assert first.cache is not None and (first.cache.hits, first.cache.misses) == ([], 1)
    again = cached_jobs(tmp_path)  # a new process's cache over the same directory
    seen: list[int] = []
    cached = again.run([SMALL], on_done=lambda i, job, res: seen.append(i))[0]
    assert again.cache is not None
    assert again.cache.hits == ["hardened on steady, seed 1"] and again.cache.misses == 0
    assert seen == [0]  # on_done is told of a cached run too
    count, diffs = differences(fresh.to_json(), cached.to_json(), HOW_MADE)
    assert count > 100 and diffs == []
    uncached = Jobs(Executor.INLINE).run([SMALL])[0]  # and a fresh run gives the same figures again
    assert differences(uncached.to_json(), cached.to_json(), HOW_MADE)[1] == []


@pytest.mark.parametrize("change", [
    {"overrides": {"client_retries": 0}},      # one knob
    {"seed": 2},                               # the seed
    {"duration_s": 0.6},                       # the workload's length
    {"workload": "spike"},                     # another workload
])
def test_a_change_to_any_input_misses(tmp_path: Path, change: dict[str, Any]) -> None:
    cached_jobs(tmp_path).run([SMALL])
    jobs = cached_jobs(tmp_path)
    changed = dataclasses.replace(SMALL, **change)
    result = jobs.run([changed])[0]
    assert jobs.cache is not None and jobs.cache.hits == [] and jobs.cache.misses == 1
    assert result.seed == changed.seed


def test_a_change_to_the_code_misses(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "targets").mkdir(parents=True)
    (src / "targets" / "policy.py").write_text("LIMIT = 1\n")
    before = code_version(src)
    code_version.cache_clear()
    (src / "targets" / "policy.py").write_text("LIMIT = 2\n")
    after = code_version(src)
    code_version.cache_clear()
    assert before != after
    target, workload, seed = SMALL.sim_inputs()
    assert sim_key(target, workload, seed, before) != sim_key(target, workload, seed, after)
    assert len(code_version()) == 64  # this checkout's own hash


@settings(max_examples=25, deadline=None)
@given(a=st.integers(1, 64), b=st.integers(1, 64))
def test_the_key_is_the_inputs(a: int, b: int) -> None:
    """Two jobs share a key exactly when their resolved inputs are equal."""
    ka = RunCache(Path("unused")).key(dataclasses.replace(SMALL, overrides={"batch_size": a}))
    kb = RunCache(Path("unused")).key(dataclasses.replace(SMALL, overrides={"batch_size": b}))
    assert (ka == kb) == (a == b)


def test_a_variant_and_a_sim_job_of_the_same_run_share_it(tmp_path: Path) -> None:
    """compare's SimJob and an ablation's VariantJob of one run are one entry."""
    label, knobs = knobs_of("hardened")
    variant = VariantJob(label, knobs, "steady", 1)
    full = SimJob("hardened", "steady", 1)
    cache = RunCache(tmp_path)
    assert cache.key(variant) == cache.key(full)


def test_a_corrupt_entry_is_a_miss_with_a_warning(tmp_path: Path) -> None:
    cached_jobs(tmp_path).run([SMALL])
    (entry,) = tmp_path.rglob("*.run")
    entry.write_bytes(b"not a run")
    jobs = cached_jobs(tmp_path)
    with pytest.warns(RunCacheWarning, match="corrupt entry"):
        jobs.run([SMALL])
    assert jobs.cache is not None and jobs.cache.misses == 1
    again = cached_jobs(tmp_path)  # written again, whole
    again.run([SMALL])
    assert again.cache is not None and len(again.cache.hits) == 1


def test_an_interrupted_batch_keeps_the_cached_results_in_place(tmp_path: Path) -> None:
    other = dataclasses.replace(SMALL, seed=2)
    cached_jobs(tmp_path).run([other])

    def stop(i: int, job: Any, res: Any) -> None:
        if job.seed == 1:
            raise KeyboardInterrupt

    with pytest.raises(JobsInterrupted) as info:
        cached_jobs(tmp_path).run([other, SMALL, dataclasses.replace(SMALL, seed=3)], on_done=stop)
    done = info.value.results
    assert isinstance(done[0], RunResult) and done[0].seed == 2
    assert isinstance(done[1], RunResult) and done[2] is None


def test_jobs_without_a_cache_never_touch_the_directory(tmp_path: Path) -> None:
    Jobs(Executor.INLINE).run([SMALL])
    assert default_dir() != tmp_path and not any(default_dir().rglob("*.run"))


def test_compare_twice_reuses_every_run_and_says_so(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["compare", "naive", "hardened", "-w", "steady", "--duration", "0.5", "--rate", "400", "-j", "1", "--quiet"]
    first, second, nocache = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    out = runner.invoke(app, [*args, "--out", str(first)])
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, [*args, "--out", str(second)])
    assert out.exit_code == 0, out.output
    assert "run cache: 2 of 2 sim runs reused" in out.output
    out = runner.invoke(app, [*args, "--out", str(nocache), "--no-cache"])
    assert out.exit_code == 0, out.output
    a, b, c = (json.loads(p.read_text()) for p in (first, second, nocache))
    assert "cached_runs" not in a and "cached_runs" not in c
    assert sorted(b["cached_runs"]) == ["hardened on steady, seed 1", "naive on steady, seed 1"]
    for x, y in ((a, b), (a, c)):
        count, diffs = differences(x, y, HOW_MADE)
        assert count > 100 and diffs == []


# A scenario the review's plan keeps whole (0.5 s at 400 req/s, 200 requests): its baseline
# runs in the review are then the very runs `compare` made (same knobs, workload, seed).
TINY = """name = "tiny"
[[answers]]
figure = "goodput_ratio"
[[phases]]
kind = "constant"
duration_s = 0.5
rate_rps = 400
"""


def test_review_after_compare_reuses_exactly_the_runs_they_share(tmp_path: Path) -> None:
    """What is the same run (resolved target, workload, seed) is run once: the review's
    baselines of hardened and naive on a scenario it keeps whole are compare's two runs, and
    no other of its runs comes from the cache (their workloads or knobs differ)."""
    from harness.analysis.compare.run import compare
    from harness.analysis.review.run import review

    tiny = tmp_path / "tiny.toml"
    tiny.write_text(TINY)
    compared = compare("naive", "hardened", [str(tiny)], jobs=cached_jobs(tmp_path / "c"))
    jobs = cached_jobs(tmp_path / "c")
    doc = review(flaw_scenarios={"full-batch-only": [str(tiny)]}, scale=1.0, jobs=jobs, alerts=False, llm=None)
    assert doc.rank.durations[str(tiny)].kept == "whole"
    assert sorted(jobs.cache.hits) == [f"hardened on {tiny}, seed 1", f"naive on {tiny}, seed 1"]
    assert jobs.cache.misses == doc.rank.runs - 2 > 0  # hardened+full-batch-only, naive-full-batch-only, ...
    assert doc.rank.baselines["naive"][str(tiny)] == compared.scenarios[str(tiny)]["naive"]


@pytest.mark.slow  # two small reviews, about 2.5 s on 2 cores
def test_a_review_from_the_cache_has_the_figures_of_one_run_afresh(tmp_path: Path) -> None:
    from harness.analysis.review.run import review

    tiny = tmp_path / "tiny.toml"
    tiny.write_text(TINY)
    flaws = {"full-batch-only": [str(tiny)], "blind-retries": [str(tiny)]}
    jobs = cached_jobs(tmp_path / "c")
    review(flaw_scenarios=flaws, scale=1.0, jobs=jobs, alerts=False, llm=None)
    again = cached_jobs(tmp_path / "c")
    cached = review(flaw_scenarios=flaws, scale=1.0, jobs=again, alerts=False, llm=None)
    assert again.cache is not None and again.cache.misses == 0 and len(again.cache.hits) == cached.rank.runs
    fresh = review(flaw_scenarios=flaws, scale=1.0, jobs=Jobs(Executor.INLINE), alerts=False, llm=None)
    count, diffs = differences(cached.to_json(), fresh.to_json(), HOW_MADE)
    assert count > 100 and diffs == []
