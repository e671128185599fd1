"""Gate checks on a sweep result: `max_rate_within_slo >= 800` and the like.

A sweep's figures are top-level keys of its result (`max_rate_within_slo`,
`first_failing_rate`), so a check reads one number; the check syntax is the
gate file's (harness/gate/file.py: KEY OP VALUE). A null rate (no rate met the
SLO) fails every check but `== never`-style ones, as no figure to compare.
Baseline checks (`>= baseline`) make no sense for a single sweep and are refused.
"""

from __future__ import annotations

import math

from harness.gate.check import COMPARE
from harness.gate.file import parse_check
from harness.results.gate import CheckOutcome
from harness.results.sweep import SweepResult
from workloads.loader import ConfigError

__all__ = ["SWEEP_KEYS", "judge_sweep"]

SWEEP_KEYS = ("max_rate_within_slo", "first_failing_rate")


def judge_sweep(result: SweepResult, checks: list[str]) -> list[CheckOutcome]:
    """One decided outcome per check; ConfigError naming a check it cannot read."""
    out = []
    for i, text in enumerate(checks):
        c = parse_check(text, 0.0, "--check", str(i))
        if c.key not in SWEEP_KEYS:
            raise ConfigError(f"--check '{text}': a sweep has {', '.join(SWEEP_KEYS)}, not '{c.key}'")
        if c.value is None:
            raise ConfigError(f"--check '{text}': a sweep has no baseline to compare with")
        measured = getattr(result, c.key)
        value = math.inf if measured is None and c.key == "first_failing_rate" else measured
        passed = value is not None and COMPARE[c.op](value, c.value)
        note = "no rate met the SLO" if value is None else f"{value:,.0f} req/s {c.op} {c.value:,.0f}"
        out.append(CheckOutcome(scenario="sweep", target=result.target, key=c.key, op=c.op, check=text,
                                threshold=c.value, measured=value, passed=passed, note=note, skipped=False))
    return out
