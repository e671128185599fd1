"""The sweep's honesty about its knee: re-runs of invalid steps, a search that could not
conclude, and the spread of the knee over repeated searches.

A live step can be invalid for reasons that are not the target's (the driver fell
behind for a moment on a busy machine). ``search_with_retries`` runs such a step
again at the same rate, up to ``retries`` more times, before the search stops on
it; every try is kept and reported, and the rate search (``RateSearch``) only
ever sees a valid try.

A valid live step can also fail on a moment rather than a rate: near the knee
the hardened target sheds in clumps (a Poisson burst on a slow batch), and one
clump of ~100 sheds is over a 12 s step's 1% budget. Measured on a quiet
machine, five searches of `harness sweep hardened --mode live` each believing
one try: knees 811, 682, 712, 743, 599 req/s (spread 29.8%); 625 req/s passed
at 99.99-100% in four of them and failed at 87% (3 s in) in the fifth, and 743
passed twice and failed twice. A sustained overload fails every time; a moment
does not come back on cue. So with ``confirm`` > 0 a valid failure is run again
at its rate, up to ``confirm`` more times, and the rate fails only when every
valid try failed (any valid pass makes it pass). Failures far above the knee
stop within a second (``certain_failures``), so confirming them is cheap. A search that stopped on an invalid step without a valid
passing rate below it found no knee at all: ``inconclusive`` says why (never "no
rate within the SLO", which is a finding about the target). ``knee_spread`` sums
up the knees of N searches (median, min, max, spread %).

Pure: a step runner is passed in (a fake one in the tests), nothing here reads a
clock or opens a socket.
"""

from __future__ import annotations

from typing import Callable, Sequence

from harness.analysis.sweep.search import RateSearch
from harness.results.sweep import KneeSpread, SweepRepeat, SweepStep

__all__ = ["MAX_RETRIES", "MAX_STEPS", "inconclusive", "knee_spread", "median_repeat", "search_with_retries"]

MAX_RETRIES = 2   # an invalid step is run up to 1 + MAX_RETRIES times before the search stops on it
MAX_STEPS = 24    # tries in all, re-runs included: a sweep is bounded in steps as well as time

StepRunner = Callable[[float, float], SweepStep]  # (rate_rps, duration_s) -> the step
Duration = Callable[[float], float]              # rate_rps -> the step's seconds


def search_with_retries(rs: RateSearch, run_step: StepRunner, duration_s: Duration,
                        on_step: Callable[[SweepStep], None] | None = None, retries: int = MAX_RETRIES,
                        max_steps: int = MAX_STEPS, confirm: int = 0) -> list[SweepStep]:
    """Every try the search ran, in order. An invalid try is run again at its rate, up to
    `retries` times; a valid failing try, up to `confirm` times (the rate fails only when
    every valid try failed; a valid pass ends its tries). The search stops when every try of
    a rate was invalid, when `rs` is done, or after `max_steps` tries."""
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    if confirm < 0:
        raise ValueError(f"confirm must be >= 0, got {confirm}")
    steps: list[SweepStep] = []
    while (rate := rs.next_rate()) is not None and len(steps) < max_steps:
        passed: bool | None = None  # the rate's verdict from its valid tries (None: none valid)
        invalid = failed = 0
        while len(steps) < max_steps:
            step = run_step(rate, duration_s(rate)).model_copy(update={"try_no": invalid + failed + 1})
            steps.append(step)
            if on_step is not None:
                on_step(step)
            if not step.valid:
                invalid += 1
                if invalid > retries:
                    break
                continue
            passed = bool(step.passed)
            failed += not passed
            if passed or failed > confirm:
                break
        if passed is None:
            break  # the driver, not the target, gave out at this rate every time: stop here
        rs.update(rate, passed)
    return steps


def inconclusive(steps: Sequence[SweepStep]) -> str | None:
    """Why the search found no valid knee (None: it found one, or validly found that no rate
    meets the SLO). It is inconclusive when it stopped on an invalid rate with no valid
    passing rate at all: the lowest rate it could judge was not judged."""
    if not steps or steps[-1].valid or any(s.passed for s in steps):
        return None
    last = steps[-1]
    tries = sum(1 for s in steps if s.rate_rps == last.rate_rps and not s.valid)
    why = last.invalid_reasons[0] if last.invalid_reasons else "invalid"
    return (f"no valid step to judge the target by: {last.rate_rps:,.0f} req/s was invalid in "
            f"{tries} {'try' if tries == 1 else 'tries'} ({why}); no rate below it passed validly")


def median_repeat(repeats: Sequence[SweepRepeat]) -> SweepRepeat:
    """The repeat whose knee is the median of those that found one (the lower middle for an
    even count); the first repeat when none found a knee."""
    found = sorted((r for r in repeats if r.max_rate_within_slo is not None),
                   key=lambda r: (r.max_rate_within_slo, r.repeat))
    if not found:
        return repeats[0]
    return found[(len(found) - 1) // 2]


def knee_spread(repeats: Sequence[SweepRepeat]) -> KneeSpread:
    """Median, min, max and spread % of the knees of `repeats` that found one."""
    knees = [r.max_rate_within_slo for r in repeats]
    found = sorted(k for k in knees if k is not None)
    if not found:
        return KneeSpread(repeats=len(repeats), found=0, knees_rps=knees, median_rps=None, min_rps=None,
                          max_rps=None, spread_pct=None)
    median = found[(len(found) - 1) // 2]
    return KneeSpread(repeats=len(repeats), found=len(found), knees_rps=knees, median_rps=median,
                      min_rps=found[0], max_rps=found[-1], spread_pct=100 * (found[-1] - found[0]) / median)
