"""`compare llm-A llm-B --seeds N`: the policies' sweep under each seed, with intervals.

Every point of every seed is one job (`compare.LlmPoint`), so the seeds spread over the
cores (or a Ray cluster) as the request-level compare's do; each seed draws its own
arrivals, the same for both policies. The result is the first seed's, with `over_seeds`:
each capacity figure per mix and each run figure per (policy, mix, rate), its mean and
95% interval over the seeds (`harness.analysis.stats.interval`, Student t).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from harness.analysis.llm.compare import LlmSweep, point_label, points_of, result_of
from harness.analysis.stats import interval
from harness.engine.jobs import Executor, Jobs
from harness.results.llm import RATIO_FIGURES, RUN_FIGURES, LlmResult, LlmRun, LlmSeeds, run_key

__all__ = ["run_sweep_seeds"]


def _figure(run: LlmRun, name: str) -> float | None:
    block, _, key = name.partition(".")
    value = getattr(run, block)
    return getattr(value, key) if key else value


def run_sweep_seeds(sweep: LlmSweep, seeds: list[int], jobs: Jobs | None = None,
                    on_done: Callable[[str], None] | None = None) -> LlmResult:
    """The sweep under each of `seeds` (`sweep.seed` is replaced), the first seed's result with
    `over_seeds` when there are several. `jobs` None: one point after another in this process."""
    sweeps = [replace(sweep, seed=s) for s in seeds]
    points = [p for sw in sweeps for p in points_of(sw)]
    tell = None if on_done is None else (lambda i, _p, _r: on_done(point_label(points[i])))
    runs = (jobs or Jobs(Executor.INLINE)).run(points, tell)
    per = len(points) // len(sweeps)
    results = [result_of(sw, runs[k * per:(k + 1) * per]) for k, sw in enumerate(sweeps)]
    first = results[0]
    if len(seeds) == 1:
        return first
    ratios = {c.mix: {f: interval([getattr(r.ratios[i], f) for r in results]) for f in RATIO_FIGURES}
              for i, c in enumerate(first.ratios)}
    by_run = {run_key(run): {f: interval([_figure(r.runs[i], f) for r in results]) for f in RUN_FIGURES}
              for i, run in enumerate(first.runs)}
    return first.model_copy(update={"over_seeds": LlmSeeds(seeds=list(seeds), ratios=ratios, runs=by_run)})
