"""Compare two targets over a set of workloads, side by side, same seeds.

Interrupted (Ctrl-C, or SIGTERM where the caller turns it into KeyboardInterrupt), a
compare returns what finished instead of raising: a scenario counts only when both
sides ran it to the end (every seed); the result's `partial` lists the rest, and only
the finished scenarios are judged.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from harness.analysis.compare.verdicts import add_verdicts
from harness.analysis.seeds import seed_set
from harness.engine.jobs import Job, Jobs, JobsInterrupted, OnDone, SimJob
from harness.results.compare import CompareResult, PartialCompare
from harness.results.run import RunResult, RunSummary, SeedSet
from targets.frameworks.spec import framework_name


def compare(a: str, b: str, workloads: list[str], seed: int = 1, overrides: dict[str, Any] | None = None,
            duration_s: float | None = None, rate_rps: float | None = None, jobs: Jobs = Jobs(),
            on_done: OnDone[RunResult] | None = None, durations: dict[str, float] | None = None,
            seeds: list[int] | None = None) -> CompareResult:
    """Runs every workload on both targets; returns their comparison, with each
    scenario's declared figures judged and each side's share of the ceiling (`verdicts`).

    `seeds` (default: `seed` alone): each workload runs on both sides once per seed, every
    run a separate job; with more than one, the result keeps the first seed's runs and
    every seed's summaries, and judges each figure by its interval over the seeds.

    `overrides` apply to both sides; give a side its own knobs with a spec
    (`hardened:gpus=40`) or a TOML file. `duration_s` applies to every
    workload; else `durations` (a suite's table) to the ones it names.

    Each run is a job of `jobs` (default: this machine's worker processes). A
    KeyboardInterrupt stops the jobs and returns the scenarios that finished (`partial`).
    """
    durations = durations or {}
    seeds = seeds or [seed]
    label_b = b if b != a else f"{b} (B)"
    sides = [(a, a), (b, label_b)]
    keys = [(w, s, t, side) for w in workloads for s in seeds for t, side in sides]
    sims = [SimJob(t, w, s, overrides or {}, duration_s or durations.get(w), rate_rps) for w, s, t, _ in keys]
    results = _until_interrupted(sims, jobs, on_done)
    done = {w for w in workloads if all(_whole(res) for key, res in zip(keys, results) if key[0] == w)}
    scenarios: dict[str, dict[str, RunSummary]] = {}
    runs: dict[str, dict[str, RunResult]] = {}
    per_seed: dict[str, dict[str, list[RunSummary]]] = {}
    for (w, s, _, side), res in zip(keys, results):
        if res is None:
            continue
        if s == seeds[0]:
            scenarios.setdefault(w, {})[side] = res.summary
            runs.setdefault(w, {})[side] = res
        if w in done:
            per_seed.setdefault(w, {}).setdefault(side, []).append(res.summary)
    over: dict[str, dict[str, SeedSet]] | None = None
    if len(seeds) > 1:
        over = {w: {side: seed_set(seeds, ss) for side, ss in by_side.items()} for w, by_side in per_seed.items()}
    ran = CompareResult(a=a, b=label_b, seed=seeds[0], mode="sim", scenarios=scenarios, runs=runs,
                        seeds=seeds if len(seeds) > 1 else None, over_seeds=over)
    return add_verdicts(finished_only(ran, workloads, done))


def _until_interrupted(sims: Sequence[SimJob], jobs: Jobs,
                       on_done: OnDone[RunResult] | None) -> Sequence[RunResult | None]:
    """Every job's result in job order; after a KeyboardInterrupt, the results of the jobs
    that finished and None for the rest (all None where the executor cannot tell). A
    partial run (a sim summarises the part that ran when Ctrl-C reaches it) stops the
    rest as the interruption it is."""
    def done(i: int, job: Job[RunResult], res: RunResult) -> None:
        if on_done:
            on_done(i, job, res)
        if res.summary.partial:
            raise KeyboardInterrupt

    try:
        return jobs.run(sims, done)
    except JobsInterrupted as exc:
        return exc.results
    except KeyboardInterrupt:
        return [None] * len(sims)


def _whole(res: RunResult | None) -> bool:
    return res is not None and not res.summary.partial


def finished_only(result: CompareResult, planned: list[str], finished: set[str]) -> CompareResult:
    """`result` as is when every `planned` scenario is in `finished`; else cut to the finished
    ones (`scenarios`, `runs`, `over_seeds`), with `partial` listing which finished and which
    did not, and keeping what ran of the others (unjudged)."""
    order = list(dict.fromkeys(planned))
    if all(w in finished for w in order):
        return result

    def kept(table: dict[str, Any]) -> dict[str, Any]:
        return {w: v for w, v in table.items() if w in finished}

    partial = PartialCompare(finished=[w for w in order if w in finished],
                             unfinished=[w for w in order if w not in finished],
                             runs={w: v for w, v in result.runs.items() if w not in finished})
    return result.model_copy(update={
        "scenarios": kept(result.scenarios), "runs": kept(result.runs), "partial": partial,
        "over_seeds": None if result.over_seeds is None else kept(result.over_seeds)})


def live_finished(result: CompareResult) -> set[str]:
    """The scenarios of a live compare that both sides ran to the end."""
    return {w for w, pair in result.scenarios.items()
            if {result.a, result.b} <= pair.keys() and not any(s.partial for s in pair.values())}


def compare_live(a: str, b: str, workloads: list[str], seed: int, overrides: dict[str, Any],
                 duration_s: float | None, rate_rps: float | None, scale: float | None, model: str = "mlp",
                 device: str = "auto", run_one: Callable | None = None, warmup_s: float | None = None,
                 shorten: bool = True, against_sim: bool = True, balancer: str = "python") -> CompareResult:
    """The live comparison (harness.live.plan.compare_live: each workload on A then B, one
    at a time, each after `warmup_s` of warm-up traffic, None: the default), judged per
    scenario like the sim one. Interrupted (a run cut short, or Ctrl-C between runs), it
    returns the scenarios that finished (`partial`), as `compare` does.

    `shorten` (unless `duration_s` cuts every script): each script shortened to a bounded
    live length (harness.analysis.compare.live.live_plan); `against_sim`: each finished
    scenario run again in sim on the live runs' configs and its winner set beside live's.
    Both go in the result's `live` block ("shortened", "sim"). `balancer`: what each host runs in
    front of its API servers ("python" or "haproxy", targets.http.haproxy.Balancer)."""
    from harness.analysis.compare.live import live_plan, plan_for_json, sim_beside, workload_of
    from harness.live.plan import compare_live as run_live_pairs

    shortened = None if duration_s is not None or not shorten else live_plan(workloads)
    ran = run_live_pairs(a, b, workloads, seed, overrides, duration_s, rate_rps, scale, model, device,
                         run_one=run_one, warmup_s=warmup_s, balancer=balancer,
                         workload_of=None if shortened is None else
                         workload_of({w: p["shortening"] for w, p in shortened.items()}))
    result = add_verdicts(finished_only(ran, workloads, live_finished(ran)))
    block: dict[str, Any] = {"shortened": plan_for_json(shortened) if shortened else None}
    framework = next((t for t in (a, b) if framework_name(t)), None)
    if framework is not None:  # a real framework has no sim of itself to check against
        block["sim_skipped"] = f"{framework} is a real framework: it has no sim"
    elif against_sim and result.scenarios:
        try:
            block["sim"] = sim_beside(result, seed)
        except KeyboardInterrupt:  # Ctrl-C during the sim check: the live result stands without it
            block["sim"] = None
    return result.model_copy(update={"live": block})
