"""How the ablation scores a harm: the measures both sides of it share.

Pure functions of run summaries (`harness.results.run.RunSummary`); the ranking
(`harness.analysis.rank.ablation`) and the interaction probes
(`harness.analysis.rank.interactions`) both score with these, so neither imports
the other's internals.

Beyond goodput and p99, a flaw can harm requests in ways neither shows: a
request that ends timed out, failed or never resolved (`unserved`: a shed
request is refused on purpose and is not counted), a request lost in flight
inside the target and answered only by a retry (`lost_share`), extra attempts
(`amplification`). These count in the score too, so a flaw whose only cost is
lost requests never reads as costing nothing.
"""

from __future__ import annotations

import math

from harness.results.rank import NOISE_AMPLIFICATION, NOISE_GOODPUT, NOISE_P99_S, NOISE_SHARE
from harness.results.run import RunSummary

__all__ = ["TIE", "amplification", "goodput", "inf", "lost_share", "p99", "p99_outcome", "severity", "steps",
           "tail", "tail_increase", "unserved"]

TIE = NOISE_GOODPUT    # goodput differences under half a point are ties (noise)


def p99(s: RunSummary) -> float | None:
    return s.latency_s.p99


def p99_outcome(s: RunSummary) -> str | None:
    """Where a p99 with no latency lands (an outcome: "shed", "timed_out", ...); None when
    the p99 is a latency."""
    if s.latency_s.p99 is not None:
        return None
    o = s.outcomes.at(0.99)
    return None if o is None else o.value


def goodput(s: RunSummary) -> float:
    """The goodput ratio, 0 when the run had no requests to judge."""
    return s.goodput_ratio or 0.0


def unserved(s: RunSummary) -> float:
    """Share of unique requests that ended timed out, failed or never resolved (lost), from
    the outcome categories (0..1; a shed request is refused on purpose, not counted)."""
    o = s.outcomes
    return o.timed_out.share + o.failed.share + o.lost.share


def lost_share(s: RunSummary) -> float:
    """Requests lost in flight inside the target (a GPU died under them), per unique request."""
    return s.requests.lost / s.requests.unique if s.requests.unique else 0.0


def amplification(s: RunSummary) -> float:
    """Attempts per unique request (1.0 when the run had none)."""
    return s.amplification or 1.0


def tail_increase(base: float | None, other: float | None) -> float | None:
    """How much later `other`'s p99 is than `base`'s, in seconds.

    None when `other`'s 1% tail was never answered while `base`'s was (ranks
    above any finite increase); 0.0 when neither was answered (goodput carries
    it) or when `other` answered a tail `base` never did (not an increase, for
    sorting: `harness.results.rank.tail_change` types that change, so no view
    calls it "unchanged").
    """
    if other is None:
        return None if base is not None else 0.0
    if base is None:
        return 0.0
    return other - base


def inf(x: float | None) -> float:
    """p99 figures for sorting: None ('never') is infinitely late."""
    return math.inf if x is None else x


def steps(x: float, noise: float = TIE) -> int:
    """A share in whole steps of `noise` (0 for anything under one step, or negative)."""
    return math.floor(max(x, 0.0) / noise + 1e-9)


def tail(x: float | None) -> float:
    """A p99 increase for sorting: never answered first, then measurable increases; an
    increase under NOISE_P99_S counts as none (so noise in the tail cannot outrank lost requests)."""
    return inf(x) if x is None or x >= NOISE_P99_S else 0.0


def severity(loss: float, tail_s: float | None, harmed: float = 0.0,
             amp: float = 0.0) -> tuple[int, float, int, int, float]:
    """Sort key of a harm: goodput loss in TIE steps, then a measurable tail increase, then
    requests timed out, failed or lost (share, in NOISE_SHARE steps), then extra attempts
    per request, then the tail increase to the last microsecond."""
    return (steps(loss), tail(tail_s), steps(harmed, NOISE_SHARE), steps(amp, NOISE_AMPLIFICATION), inf(tail_s))
