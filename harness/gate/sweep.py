"""Gate checks on a sweep result: `max_rate_within_slo >= 800` and the like.

Two ways in: `harness sweep ... --check "max_rate_within_slo >= 800"` judges the
sweep it just ran (`judge_sweep`; an LLM URL's sweep too, whose `search` has the same
two figures: `parse_sweep_checks`, then `judge_sweep_checks`), and a gate file's
`[[sweep]]` tables judge the saved sweep of their target given to `harness gate FILE
--results SWEEP.json` (`run_sweep_gates`, called by harness.gate.check.run_gate). A sweep's figures are
top-level keys of its result (`max_rate_within_slo`, `first_failing_rate`), so a
check reads one number; the check syntax is the gate file's (harness/gate/file.py:
KEY OP VALUE). A null knee (no rate met the SLO) fails every check; a null first
failing rate (none failed) is infinite. An LLM URL's saved sweep (an `llm` result
with a `search`) is read as the sweep of its URL. Baseline checks (`>= baseline`) make no
sense for a single sweep and are refused.

A live sweep that stopped at an invalid step (the driver fell behind) found a knee
that is only a lower bound set by the driver: a check it passes stands, a check it
fails cannot be judged (the gate says so and exits 2, as for an invalid run).
"""

from __future__ import annotations

import math
from typing import Any

from harness.gate.file import COMPARE, Check, GateFile, parse_check
from harness.gate.keys import SWEEP_KEYS
from harness.results.gate import CheckOutcome
from harness.results.llm import LlmResult, LlmSearch
from harness.results.sweep import SweepResult
from workloads.loader import ConfigError

__all__ = ["SWEEP_KEYS", "judge_sweep", "judge_sweep_checks", "parse_sweep_checks", "run_sweep_gates"]


def parse_sweep_checks(checks: list[str]) -> list[Check]:
    """The `--check` texts parsed; ConfigError naming a check a sweep cannot read."""
    parsed = []
    for i, text in enumerate(checks):
        c = parse_check(text, 0.0, "--check", str(i))
        if c.key not in SWEEP_KEYS:
            raise ConfigError(f"--check '{text}': a sweep has {', '.join(SWEEP_KEYS)}, not '{c.key}'")
        if c.value is None:
            raise ConfigError(f"--check '{text}': a sweep has no baseline to compare with")
        parsed.append(c)
    return parsed


def judge_sweep(result: SweepResult, checks: list[str]) -> list[CheckOutcome]:
    """One decided outcome per `--check` text; ConfigError naming a check it cannot read."""
    return judge_sweep_checks(result, parse_sweep_checks(checks))


def judge_sweep_checks(result: SweepResult | LlmSearch,
                       checks: list[Check] | tuple[Check, ...]) -> list[CheckOutcome]:
    """One decided outcome per parsed check (keys in SWEEP_KEYS, thresholds not baselines), of a
    sweep result or of an LLM URL's sweep (`LlmResult.search`: the same two figures)."""
    out = []
    for c in checks:
        measured = getattr(result, c.key)
        value = math.inf if measured is None and c.key == "first_failing_rate" else measured
        passed = value is not None and c.value is not None and COMPARE[c.op](value, c.value)
        none = "no valid knee found" if getattr(result, "inconclusive", None) else "no rate met the SLO"
        note = none if value is None else f"{_rate(value)} req/s {c.op} {_rate(c.value)}"
        out.append(CheckOutcome(scenario="sweep", target=result.target, key=c.key, op=c.op, check=c.text,
                                threshold=c.value, measured=value, passed=passed, note=note, skipped=False))
    return out


def _rate(x: float | None) -> str:
    """A rate as people read it: whole from 100 req/s up (a fleet's knee), three figures below
    (an LLM endpoint's: 2.5 req/s)."""
    if x is None:
        return "-"
    return "never" if math.isinf(x) else f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def driver_bound(result: SweepResult) -> str | None:
    """Why the sweep's knee is only a lower bound (its last step invalid), else None."""
    if result.steps and not result.steps[-1].valid:
        last = result.steps[-1]
        why = last.invalid_reasons[0] if last.invalid_reasons else "invalid"
        return f"sweep of {result.target} stopped at an invalid step, {last.rate_rps:,.0f} req/s ({why})"
    return None


def _swept(result: Any) -> tuple[str, SweepResult | LlmSearch] | None:
    """(what was swept, its knee) of a sweep result, or of an LLM URL's sweep (`harness sweep URL`:
    an llm result with a search, named by its URL), else None."""
    if isinstance(result, SweepResult):
        return result.target, result
    if isinstance(result, LlmResult) and result.search is not None and result.settings.targets:
        return result.settings.targets[0].url, result.search
    return None


def run_sweep_gates(gf: GateFile, results: list[Any] | None) -> tuple[list[CheckOutcome], list[str]]:
    """Every [[sweep]] gate decided from the sweep results among `results` (the last one of
    its target), and the lines that say which failed checks cannot be judged. ConfigError
    when a gate has no sweep result to read."""
    if not gf.sweep:
        return [], []
    sweeps = [swept for r in results or [] if (swept := _swept(r)) is not None]
    checks: list[CheckOutcome] = []
    cannot: list[str] = []
    for g in gf.sweep:
        mine = [r for target, r in sweeps if target == g.target]
        if not mine:
            have = ", ".join(sorted({target for target, _ in sweeps})) or "none"
            raise ConfigError(f"{gf.path}: key '{g.where}': a [[sweep]] gate reads a saved sweep of '{g.target}' "
                              f"(harness sweep {g.target} --out SWEEP.json; then --results SWEEP.json); "
                              f"sweeps given: {have}")
        result = mine[-1]
        outcomes = judge_sweep_checks(result, g.checks)
        bound = driver_bound(result) if isinstance(result, SweepResult) else None
        if bound is not None and any(not o.passed for o in outcomes):
            cannot.append(f"{bound}: its knee is a lower bound set by the driver, so a failed check says "
                          "nothing about the target")
        checks += outcomes
    return checks, cannot
