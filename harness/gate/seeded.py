"""Gate checks over seeds: the bound of an interval a check reads, and whether a change
from the baseline is a significant regression.

Pure functions of per-seed values (`harness.gate.check` looks them up). A check over
seeds reads the mean, or the lower or upper bound of the 95% interval
(`harness.analysis.stats.interval`); a seed whose latency was never answered makes
the figure infinite (no interval: the worst). A baseline check fails only when a
one-sided t test says the new runs are worse than the baseline moved by the check's
tolerance (p < ALPHA): "worse" is higher for a `<=`/`<` limit, lower for `>=`/`>`.
"""

from __future__ import annotations

import math
from typing import Literal

from harness.analysis.stats import ALPHA, difference
from harness.gate.file import Bound
from harness.results.stats import Difference, Interval

__all__ = ["baseline_change", "change_words", "read_bound", "worse_side"]


def read_bound(ci: Interval, bound: Bound, infinite: bool) -> float | None:
    """The figure a check reads from an interval over seeds: its mean, or the named bound
    (the mean where there is no interval: one seed); a seed with no value makes it
    infinite for a latency (`infinite`), else no value."""
    if ci.missing:
        return math.inf if infinite else None
    if bound is Bound.MEAN or not ci.has_interval:
        return ci.mean
    return ci.lo if bound is Bound.LOWER else ci.hi


def worse_side(op: str) -> Literal["greater", "less"] | None:
    """Which way a figure regresses under a check's operator (None: == and != have none)."""
    return "greater" if op in ("<=", "<") else "less" if op in (">=", ">") else None


def baseline_change(op: str, new: list[float | None], base: list[float | None], relative: float,
                    paired: bool) -> Difference | None:
    """New minus the baseline (per seed when `paired`), tested one-sided toward worse against
    a margin of `relative` x the baseline's mean; None for an operator with no 'worse' (==, !=)."""
    alternative = worse_side(op)
    if alternative is None:
        return None
    finite = [b for b in base if b is not None and math.isfinite(b)]
    margin = relative * (sum(finite) / len(finite)) if finite else 0.0
    return difference(base, new, paired=paired, alternative=alternative, margin=margin)


def change_words(d: Difference, new_mean: float | None, base_mean: float | None, relative: float = 0.0) -> str:
    """'regression: +23.0% vs baseline, limit +10% (one-sided paired t, p=0.003, d=2.1, 5 seeds)',
    or 'no significant change: ...'. `d` is the change over its standard deviation."""
    verdict = "regression" if d.significant(ALPHA) else "no significant change"
    if new_mean is None or base_mean is None or d.p_value is None:
        return f"{verdict}: no test (a seed had no value, or one seed a side)"
    rel = f"{(new_mean - base_mean) / abs(base_mean):+.1%}" if base_mean else f"{new_mean - base_mean:+.4g}"
    effect = "" if d.effect is None else f", d={d.effect:.2f}"
    return (f"{verdict}: {rel} vs baseline, limit {relative:+.0%} (one-sided {d.test}, p={d.p_value:.2g}{effect}, "
            f"{d.n} seeds)")
