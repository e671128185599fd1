"""Compare two targets over a set of workloads, side by side, same seeds."""

from __future__ import annotations

from typing import Any, Callable

from harness.analysis.seeds import seed_set
from harness.analysis.verdicts import add_verdicts
from harness.engine.jobs import SimJob, run_jobs
from harness.results.compare import CompareResult
from harness.results.run import RunResult, RunSummary, SeedSet


def compare(a: str, b: str, workloads: list[str], seed: int = 1, overrides: dict[str, Any] | None = None,
            duration_s: float | None = None, rate_rps: float | None = None, workers: int | None = None,
            on_done: Callable | None = None, durations: dict[str, float] | None = None,
            seeds: list[int] | None = None) -> CompareResult:
    """Runs every workload on both targets; returns their comparison, with each
    scenario's declared figures judged and each side's share of the ceiling (`verdicts`).

    `seeds` (default: `seed` alone): each workload runs on both sides once per seed, every
    run a separate job; with more than one, the result keeps the first seed's runs and
    every seed's summaries, and judges each figure by its interval over the seeds.

    `overrides` apply to both sides; give a side its own knobs with a spec
    (`hardened:gpus=40`) or a TOML file. `duration_s` applies to every
    workload; else `durations` (a suite's table) to the ones it names.
    """
    durations = durations or {}
    seeds = seeds or [seed]
    label_b = b if b != a else f"{b} (B)"
    sides = [(a, a), (b, label_b)]
    keys = [(w, s, t, side) for w in workloads for s in seeds for t, side in sides]
    jobs = [SimJob(t, w, s, overrides or {}, duration_s or durations.get(w), rate_rps) for w, s, t, _ in keys]
    results = run_jobs(jobs, workers, on_done)
    scenarios: dict[str, dict[str, RunSummary]] = {}
    runs: dict[str, dict[str, RunResult]] = {}
    per_seed: dict[str, dict[str, list[RunSummary]]] = {}
    for (w, s, _, side), res in zip(keys, results):
        if s == seeds[0]:
            scenarios.setdefault(w, {})[side] = res.summary
            runs.setdefault(w, {})[side] = res
        per_seed.setdefault(w, {}).setdefault(side, []).append(res.summary)
    over: dict[str, dict[str, SeedSet]] | None = None
    if len(seeds) > 1:
        over = {w: {side: seed_set(seeds, ss) for side, ss in by_side.items()} for w, by_side in per_seed.items()}
    return add_verdicts(CompareResult(a=a, b=label_b, seed=seeds[0], mode="sim", scenarios=scenarios, runs=runs,
                                      seeds=seeds if over else None, over_seeds=over))


def compare_live(a: str, b: str, workloads: list[str], seed: int, overrides: dict[str, Any],
                 duration_s: float | None, rate_rps: float | None, scale: float | None, model: str = "mlp",
                 device: str = "auto", run_one: Callable | None = None, warmup_s: float | None = None) -> CompareResult:
    """The live comparison (harness.live.plan.compare_live: each workload on A then B, one
    at a time, each after `warmup_s` of warm-up traffic, None: the default), judged per
    scenario like the sim one."""
    from harness.live.plan import compare_live as run_live_pairs

    return add_verdicts(run_live_pairs(a, b, workloads, seed, overrides, duration_s, rate_rps, scale, model, device,
                                       run_one=run_one, warmup_s=warmup_s))
