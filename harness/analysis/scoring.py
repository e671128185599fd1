"""How the ablation scores a harm: the measures both sides of it share.

Pure functions of run summaries (`harness.results.run.RunSummary`); the ranking
(`harness.analysis.ablation`) and the interaction probes
(`harness.analysis.interactions`) both score with these, so neither imports
the other's internals.
"""

from __future__ import annotations

import math

from harness.results.rank import NOISE_GOODPUT
from harness.results.run import RunSummary

__all__ = ["TIE", "goodput", "inf", "p99", "severity", "tail_increase"]

TIE = NOISE_GOODPUT    # goodput differences under half a point are ties (noise)


def p99(s: RunSummary) -> float | None:
    return s.latency_s.p99


def goodput(s: RunSummary) -> float:
    """The goodput ratio, 0 when the run had no requests to judge."""
    return s.goodput_ratio or 0.0


def tail_increase(base: float | None, other: float | None) -> float | None:
    """How much later `other`'s p99 is than `base`'s, in seconds.

    None when `other`'s 1% tail was never answered while `base`'s was (ranks
    above any finite increase); 0.0 when neither was answered (goodput carries
    it) or when `other` answered a tail `base` never did (not an increase).
    """
    if other is None:
        return None if base is not None else 0.0
    if base is None:
        return 0.0
    return other - base


def inf(x: float | None) -> float:
    """p99 figures for sorting: None ('never') is infinitely late."""
    return math.inf if x is None else x


def severity(loss: float, tail: float | None) -> tuple[float, float]:
    """Sort key of a harm: goodput loss in TIE steps, then the tail."""
    return (math.floor(max(loss, 0.0) / TIE + 1e-9), inf(tail))
