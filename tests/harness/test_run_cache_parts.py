"""The run cache beyond sim runs: capacity's points, canary rollouts (through `Jobs.start` too), and
the results that are no job's (the pool experiment, the LLM sections: `RunCache.memo`). A second
identical plan is answered from disk with the same figures; a change to one knob misses.

Every test has a cache directory of its own (tests/conftest.py sets HARNESS_CACHE_DIR)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.capacity.plan import Budget, plan_capacity
from harness.analysis.capacity.sim import Point
from harness.analysis.canary.days import CanaryJob
from harness.analysis.rank import llm_section
from harness.analysis.review.run import llm_part, pool_part
from harness.analysis.traffic import traffic
from harness.engine.jobs import Executor, Jobs
from harness.engine.run_cache import RunCache, value_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from same_figures import HOW_MADE, differences  # noqa: E402

# A few hundred requests a point (tests/reports/test_capacity_and_pool.py's budget).
TINY = Budget(requests=300, min_s=0.5, max_s=1.0, curve_utilizations=(0.7,), loads=(0.01, 0.1),
              offline_rounds=2, extras=False, slow_min_s=1.0, search_width=1)
POINT = Point("x1:4", "hardened", (("gpus", 4),), traffic(400.0, 0.5), 1)


def cached(root: Path) -> Jobs:
    return Jobs(Executor.INLINE, cache=RunCache(root))


def test_a_capacity_point_is_kept_and_a_changed_knob_misses(tmp_path: Path) -> None:
    fresh = cached(tmp_path).run([POINT])[0]
    again = cached(tmp_path)
    assert again.run([POINT])[0] == fresh  # every figure, its wall time included (it is the stored run)
    assert again.cache is not None and again.cache.hits == ["capacity point x1:4"] and again.cache.misses == 0
    for changed in (dataclasses.replace(POINT, knobs=(("gpus", 5),)), dataclasses.replace(POINT, seed=2),
                    dataclasses.replace(POINT, workload=traffic(401.0, 0.5)), dataclasses.replace(POINT, key="x1:4b")):
        jobs = cached(tmp_path)
        jobs.run([changed])
        assert jobs.cache is not None and (jobs.cache.hits, jobs.cache.misses) == ([], 1), changed


def test_a_second_capacity_plan_runs_no_point_and_gives_the_same_figures(tmp_path: Path) -> None:
    first = plan_capacity(500, 8, 0.05, budget=TINY, jobs=cached(tmp_path))
    jobs = cached(tmp_path)
    second = plan_capacity(500, 8, 0.05, budget=TINY, jobs=jobs)
    assert jobs.cache is not None and jobs.cache.misses == 0 and len(jobs.cache.hits) == second.runs > 3
    count, diffs = differences(first.to_json(), second.to_json(), HOW_MADE)
    assert count > 50 and diffs == []


ROLLOUTS = [CanaryJob("careful", "slow", "hardened", 1)]


def test_canary_rollouts_started_on_workers_are_kept(tmp_path: Path) -> None:
    fresh = cached(tmp_path).start(ROLLOUTS)()
    jobs = cached(tmp_path)
    again = jobs.start(ROLLOUTS)()
    assert jobs.cache is not None and jobs.cache.misses == 0
    assert jobs.cache.hits == ["canary careful on slow, seed 1"]
    assert [r.model_dump() for r in again] == [r.model_dump() for r in fresh]
    keys = {RunCache(tmp_path).key(j) for j in [*ROLLOUTS, dataclasses.replace(ROLLOUTS[0], seed=2),
                                                 dataclasses.replace(ROLLOUTS[0], plan="fast")]}
    assert len(keys) == 3  # the seed and the plan are in the key


def test_memo_builds_once_per_inputs_and_names_what_it_served(tmp_path: Path) -> None:
    built: list[int] = []

    def build(x: int) -> dict[str, int]:
        built.append(x)
        return {"x": x}

    cache = RunCache(tmp_path)
    assert cache.memo("kind", {"x": 1}, lambda: build(1), "one") == {"x": 1}
    assert RunCache(tmp_path).memo("kind", {"x": 1}, lambda: build(1), "one") == {"x": 1}
    other = RunCache(tmp_path)
    other.memo("kind", {"x": 2}, lambda: build(2), "two")
    other.memo("another kind", {"x": 1}, lambda: build(1), "one")
    assert built == [1, 2, 1] and other.misses == 2 and other.hits == []
    assert value_key("k", {"a": 1}, "code A") != value_key("k", {"a": 1}, "code B")  # the code decides too


def _fake_pool() -> dict[str, Any]:
    _fake_pool.calls += 1  # type: ignore[attr-defined]
    return {"kind": "pool", "calls": _fake_pool.calls}  # type: ignore[attr-defined]


def test_the_review_parts_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.analysis.llm as llm
    import harness.analysis.pool as pool

    _fake_pool.calls = 0  # type: ignore[attr-defined]
    monkeypatch.setattr(pool, "run_pool_experiment", _fake_pool)
    monkeypatch.setattr(llm, "llm_answer", lambda seed, flaws=None: {"kind": "llm", "seed": seed})
    first = [pool_part(cached(tmp_path))[1](), llm_part(3, cached(tmp_path))[1]()]
    jobs = cached(tmp_path)
    second = [pool_part(jobs)[1](), llm_part(3, jobs)[1]()]
    assert second == first == [{"kind": "pool", "calls": 1}, {"kind": "llm", "seed": 3}]
    assert jobs.cache is not None and jobs.cache.hits == ["pool experiment, every policy", "LLM follow-up, seed 3"]
    assert llm_part(4, jobs)[1]() == {"kind": "llm", "seed": 4} and jobs.cache.misses == 1  # another seed
    assert pool_part(Jobs(Executor.INLINE))[1]() == {"kind": "pool", "calls": 2}  # no cache: it runs


def ranked(seed: int) -> dict[str, int]:
    ranked.calls += 1  # type: ignore[attr-defined]
    return {"seed": seed}


def test_the_llm_section_is_kept_unless_it_is_a_lambda(tmp_path: Path) -> None:
    ranked.calls = 0  # type: ignore[attr-defined]
    assert llm_section(ranked, 1, cached(tmp_path)) == llm_section(ranked, 1, cached(tmp_path)) == {"seed": 1}
    assert ranked.calls == 1  # type: ignore[attr-defined]
    llm_section(ranked, 2, cached(tmp_path))
    assert ranked.calls == 2  # type: ignore[attr-defined]
    calls: list[int] = []
    for _ in range(2):  # a closure's name does not say what it computes: it always runs
        llm_section(lambda s: calls.append(s) or {"seed": s}, 1, cached(tmp_path))  # type: ignore[func-returns-value]
    assert calls == [1, 1]


def test_the_review_canary_answer_is_kept_whole_and_a_changed_input_misses(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A review run again takes its canary answer from the cache whole: no rollout starts (nor
    is scipy.stats imported to judge them); another seed count, first seed or target misses."""
    import harness.analysis.review.canary as review_canary

    started: list[tuple[str, int, int]] = []

    def fake_start(plans: list[str], target: str, seeds: int, first_seed: int, jobs: Jobs) -> Any:
        started.append((target, seeds, first_seed))
        return lambda: {"rollouts": (target, seeds, first_seed)}

    monkeypatch.setattr(review_canary, "start_canary", fake_start)
    monkeypatch.setattr(review_canary, "canary_answer", lambda result, source: {"judged": result, "source": source})
    first = review_canary.start_canary_answer(2, jobs=cached(tmp_path))()
    jobs = cached(tmp_path)
    again = review_canary.start_canary_answer(2, jobs=jobs)()
    assert again == first and started == [("hardened", 2, 1)]
    assert jobs.cache is not None and jobs.cache.misses == 0
    assert jobs.cache.hits == ["canary answer, run here: 2 seed(s) a plan and day"]
    for changed in ({"seeds": 3}, {"first_seed": 2}, {"target": "naive"}):
        other = cached(tmp_path)
        review_canary.start_canary_answer(**{"seeds": 2, **changed}, jobs=other)()
        assert other.cache is not None and (other.cache.hits, other.cache.misses) == ([], 1), changed
    assert len(started) == 4
    review_canary.start_canary_answer(2, jobs=Jobs(Executor.INLINE))()  # no cache: the rollouts run
    assert len(started) == 5
