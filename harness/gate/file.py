"""Gate files: the thresholds a CI performance gate checks, parsed and validated.

A gate file is TOML (example: harness/gate/ci.toml)::

    [defaults]                  # all optional
    target = "hardened"         # the target under test (`--target` replaces it)
    seed = 1                    # one seed for every run: sim mode is deterministic
    seeds = 1                   # or seeds seed..seed+N-1 (`--seeds N` replaces it):
                                # every figure then gets a 95% interval
    duration_s = 5              # each scenario shortened to this, exactly as
                                # `harness run --duration` does; omit for full length
    tolerance = 0.05            # default relative tolerance of `baseline` checks

    [[scenario]]                # thresholds on one scenario's run summary
    name = "steady"             # a built-in scenario or a workload TOML path
    target = "hardened"         # optional; default: defaults.target
    duration_s = 3              # optional; default: defaults.duration_s
    checks = [
      "latency_s.p99 <= 0.3",             # seconds; a never-answered tail fails
      "goodput_ratio >= 0.99",
      "amplification <= 1.1",
      "requests.lost == 0",
      "tenants.*.p99_s <= 0.3",           # * = every tenant must pass (worst shown)
      "latency_s.p99 <= baseline +10%",   # relative to --baseline RESULT
      "goodput_ratio >= baseline",        # ... within defaults.tolerance
      { check = "latency_s.p99 <= 0.3", bound = "upper" },  # with seeds: the
                                          # interval's upper bound must pass
    ]

    [[paired]]                  # ratio of target A's value to target B's,
    scenario = "slowdown"       # both measured in this same run (noise cancels)
    a = "hardened"              # optional; default: defaults.target
    b = "naive"
    duration_s = 6
    checks = ["goodput_ratio >= 1.2", "amplification <= 0.8"]

    [[canary]]                  # a canary rollout plan on one canary bad day
    plan = "fast"               # a built-in plan (careful, fast) or a plan TOML path
    day = "slow"                # a canary day: good, slow, erroring, wrong, ...
    target = "hardened"         # optional; default: defaults.target
    seeds = 4                   # optional; default: defaults.seeds (`--seeds` replaces both)
    checks = [
      "rollback_share >= 0.75",           # the share of seeds rolled back
      "median_decision_s <= 10",          # s into the rollout; never decided = never
      { check = "rollback_share >= 0.4", bound = "lower" },  # Clopper-Pearson
    ]

    [[sweep]]                   # a saved `harness sweep` result, given with --results
    target = "hardened"         # optional; default: defaults.target (or the URL swept)
    checks = ["max_rate_within_slo >= 500", "first_failing_rate <= 2000"]

A check is ``KEY OP VALUE``. KEY is a dotted path into the run summary (the
keys of `harness run --json`; ``*`` matches every entry of a table). OP is one
of <=, <, >=, >, ==, !=. VALUE is a number, ``never`` (an infinite latency),
or ``baseline`` optionally followed by ``+N%`` / ``-N%``: the same key in the
baseline result file given with ``--baseline`` (a gate, run, compare or
rank result), moved by N%; a bare ``baseline`` with <= or < allows
``defaults.tolerance`` above it, with >= or > that much below it, and with ==
or != none. Latency values that are null in results (never answered) count
as infinite. Without ``--baseline`` the baseline checks are skipped.

Seeds: with ``seeds = N`` (or ``--seeds N``) every run is made under each seed
and a check reads the mean over the seeds, or the bound of its 95% interval that
the check names as a table, ``{ check = "...", bound = "upper" }`` ("lower",
"upper" or "mean"; one seed has no interval, so the mean, i.e. the value, is
read). A baseline check over seeds, against a baseline result with seeds, fails
only on a significant regression: a one-sided t test (paired when both used the
same seeds, else Welch's) that the figure is worse than the baseline moved by the
tolerance, at p < 0.05 (harness/gate/seeded.py); else "no significant change".

`--target T` replaces the target under test, and only it: every target
that is omitted or names defaults.target becomes T; a gate that names another
target (a paired gate's reference `b = "naive"`) keeps it. A paired gate whose
sides become the same target (`--target naive` against `b = "naive"`) is
skipped: a ratio of a target with itself says nothing.

Canary checks read the figures of one (plan, day) cell of a canary result
(`harness canary`): `rollback_share` and `promote_share` (of its seeds),
`median_decision_s`, `median_blast_radius` (attempts the canary served) and
`wrong_version` (answers from the other version's cache, summed). On a good
day, `rollback_share` is the false-rollback rate. A bound reads the exact
95% interval over the seeds: Clopper-Pearson for a share (scipy's binomtest),
the order-statistic interval for a median (scipy's quantile_test), which needs
at least 6 runs; with fewer, the bound is unbounded (inf or -inf) and such a
check fails. Canary checks have no baseline.

Sweep checks read `max_rate_within_slo` (the knee: the highest offered rate whose
goodput met the SLO, req/s; no rate met it: the check fails) or `first_failing_rate`
(never failed: infinite) of the sweep result of that target among `--results`
(`harness sweep TARGET --out SWEEP.json`; an LLM URL's sweep is its URL's); they have
no baseline. A live sweep that ended at an invalid step (its driver fell behind) has a
knee that is only a lower bound: a check it fails cannot be judged (exit 2), one it
passes stands.

`harness gate FILE --results RUN.json` judges saved runs (live ones, say)
instead of running sim; each gate then needs a run of its scenario and
target among them (harness/gate/check.py; example harness/gate/live.toml).

Errors name the file, the key and the problem: ``ci.toml: key
'scenario[0].checks[1]': unknown summary key 'latency.p99' ...``.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Collection, Iterator

from pydantic import BaseModel

from harness.gate.keys import CANARY_KEYS, SWEEP_KEYS, key_problem
from harness.results.run import RunSummary
from targets.spec import resolve_target
from workloads.canary_days import CANARY_DAYS
from workloads.canary_plan import load_plan
from workloads.loader import ConfigError, load_workload, read_toml

OPS = ("<=", ">=", "==", "!=", "<", ">")
COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq, "!=": operator.ne,
}
_CHECK = re.compile(r"^\s*(?P<key>[A-Za-z0-9_.*\-]+)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>.+?)\s*$")
_BASE = re.compile(r"^baseline(?:\s*(?P<pct>[+-]\s*\d+(?:\.\d+)?)\s*%)?$")


class Bound(StrEnum):
    """Which figure of a 95% interval over seeds a check reads."""

    MEAN = "mean"
    LOWER = "lower"
    UPPER = "upper"


@dataclass(frozen=True)
class Check:
    """One parsed check. `value` is a number (inf for 'never') or None for baseline checks."""

    key: str
    op: str
    value: float | None
    relative: float | None = None  # baseline checks: the allowed relative move (+0.1 = +10%)
    text: str = ""
    bound: Bound = Bound.MEAN       # which figure of the interval over seeds the check reads


@dataclass(frozen=True)
class Gate:
    """The checks on one (scenario, target) run, or on a pair when `b` is set."""

    scenario: str
    target: str
    duration_s: float | None
    checks: tuple[Check, ...]
    b: str | None = None
    where: str = ""


@dataclass(frozen=True)
class CanaryGate:
    """The checks on one canary plan's rollouts on one canary day; `seeds` None: the file's."""

    plan: str
    day: str
    target: str
    seeds: int | None
    checks: tuple[Check, ...]
    where: str = ""


@dataclass(frozen=True)
class SweepGate:
    """The checks on the saved sweep result of one target (a spec, or the URL swept)."""

    target: str
    checks: tuple[Check, ...]
    where: str = ""


@dataclass(frozen=True)
class GateFile:
    path: str
    seed: int
    tolerance: float
    gates: tuple[Gate, ...] = field(default_factory=tuple)
    seeds: int = 1
    canary: tuple[CanaryGate, ...] = field(default_factory=tuple)
    sweep: tuple[SweepGate, ...] = field(default_factory=tuple)


def parse_check(text: Any, tolerance: float, path: str, key: str) -> Check:
    """A check string, or a table `{check = "...", bound = "upper"}` naming the bound it reads."""
    if isinstance(text, dict):
        _table(text, path, key, {"check", "bound"}, ("check",))
        bound = text.get("bound", "mean")
        if bound not in tuple(Bound):
            raise _err(path, f"{key}.bound", f"'{bound}': valid are {', '.join(tuple(Bound))}")
        return replace(parse_check(text["check"], tolerance, path, f"{key}.check"), bound=Bound(bound))
    if not isinstance(text, str):
        raise _err(path, key, 'must be a string like "latency_s.p99 <= 0.3"')
    m = _CHECK.match(text)
    if not m:
        raise _err(path, key, f"cannot parse '{text}': expected KEY OP VALUE with OP one of {', '.join(OPS)}")
    name, op, raw = m["key"], m["op"], m["value"]
    if raw == "never":
        return Check(name, op, math.inf, None, text)
    b = _BASE.match(raw)
    if b:
        if b["pct"] is not None:
            rel = float(b["pct"].replace(" ", "")) / 100
        else:
            rel = tolerance if op in ("<=", "<") else -tolerance if op in (">=", ">") else 0.0
        return Check(name, op, None, rel, text)
    try:
        value = float(raw)
    except ValueError:
        raise _err(path, key, f"value '{raw}' in '{text}' is not a number, 'never' or 'baseline [+-N%]'") from None
    if math.isnan(value):
        raise _err(path, key, f"value '{raw}' in '{text}' is not a number")
    return Check(name, op, value, None, text)


def _err(path: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"{path}: key '{key}': {problem}")


def _table(data: Any, path: str, key: str, allowed: set[str], required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _err(path, key, "must be a table")
    for k in data:
        if k not in allowed:
            raise _err(path, f"{key}.{k}" if key else k, f"unknown key (allowed here: {', '.join(sorted(allowed))})")
    for k in required:
        if k not in data:
            raise _err(path, f"{key}.{k}" if key else k, "missing (required)")
    return data


def _number(data: dict[str, Any], path: str, key: str, name: str, default: Any) -> Any:
    v = data.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (v == 0 and name != "tolerance"):
        raise _err(path, f"{key}.{name}", f"must be a positive number, not {v!r}")
    return float(v)


def _resolvable(value: Any, resolve: Callable[[str], Any], what: str, path: str, key: str) -> str:
    """`value` must be a string that `resolve` accepts; its error names the key."""
    if not isinstance(value, str):
        raise _err(path, key, f"must be {what}")
    try:
        resolve(value)
    except ConfigError as exc:
        raise _err(path, key, str(exc)) from None
    return value


def _target(spec: Any, path: str, key: str) -> str:
    return _resolvable(spec, resolve_target, "a target spec string (naive, hardened+blind-retries, a .toml design)", path, key)


def _scenario(name: Any, path: str, key: str) -> str:
    return _resolvable(name, load_workload, "a scenario name or workload TOML path", path, key)


def load_gate_file(path: str | Path, target: str | None = None) -> GateFile:
    """Parse and validate a gate file; `target` replaces the target under test."""
    p = str(path)
    data = read_toml(Path(path))
    _table(data, p, "", {"defaults", "scenario", "paired", "canary", "sweep", "description"})
    d = _table(data.get("defaults", {}), p, "defaults", {"target", "seed", "seeds", "duration_s", "tolerance"})
    seed = d.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _err(p, "defaults.seed", f"must be an integer, not {seed!r}")
    seeds = d.get("seeds", 1)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise _err(p, "defaults.seeds", f"must be an integer >= 1, not {seeds!r}")
    tol = _number(d, p, "defaults", "tolerance", 0.05)
    default_duration = _number(d, p, "defaults", "duration_s", None)
    if target:
        if "://" in target:
            raise ConfigError(f"--target '{target}' is a URL: a gate runs its scenarios in sim; to gate a live run, "
                              "save it (`harness run ... --mode live --out RUN.json`) and pass --results RUN.json")
        try:
            resolve_target(target)
        except ConfigError as exc:
            raise ConfigError(f"--target: {exc}") from None
    under_test = _target(d.get("target", "hardened"), p, "defaults.target")

    def tested(spec: str) -> str:
        """`--target` replaces the target under test wherever it appears, nothing else."""
        return target if target and spec == under_test else spec
    gates: list[Gate] = []
    for section in ("scenario", "paired"):
        for key, item in _tables(data.get(section, []), p, section):
            if section == "scenario":
                _table(item, p, key, {"name", "target", "duration_s", "checks"}, ("name", "checks"))
                scen = _scenario(item["name"], p, f"{key}.name")
                a = tested(_target(item.get("target", under_test), p, f"{key}.target"))
                b = None
            else:
                _table(item, p, key, {"scenario", "a", "b", "duration_s", "checks"}, ("scenario", "b", "checks"))
                scen = _scenario(item["scenario"], p, f"{key}.scenario")
                a_spec = _target(item.get("a", under_test), p, f"{key}.a")
                b_spec = _target(item["b"], p, f"{key}.b")
                if a_spec == b_spec:
                    raise _err(p, f"{key}.b", f"A and B are both '{a_spec}': a ratio of a target with itself says nothing")
                a, b = tested(a_spec), tested(b_spec)
            dur = _number(item, p, key, "duration_s", default_duration)
            checks = item["checks"]
            if not isinstance(checks, list) or not checks:
                raise _err(p, f"{key}.checks", "must be a non-empty list of checks")
            parsed = tuple(parse_check(c, tol, p, f"{key}.checks[{j}]") for j, c in enumerate(checks))
            if b is not None:
                for j, c in enumerate(parsed):
                    if c.relative is not None:
                        raise _err(p, f"{key}.checks[{j}]", "a paired check compares A with B, not with a baseline")
            gates.append(Gate(scen, a, dur, parsed, b, key))
    canary = _canary_gates(data.get("canary", []), p, tol, lambda t, k: tested(_target(t, p, k)), under_test)
    sweep = _sweep_gates(data.get("sweep", []), p, tol, lambda t, k: tested(_target(t, p, k)), under_test)
    if not gates and not canary and not sweep:
        raise _err(p, "scenario", "the file has no [[scenario]], [[paired]], [[canary]] or [[sweep]] gates")
    return GateFile(p, seed, tol, tuple(gates), seeds, canary, sweep)


def _tables(items: Any, p: str, section: str) -> Iterator[tuple[str, Any]]:
    """Each table of the array `[[section]]` with its key for messages (`section[i]`)."""
    if not isinstance(items, list):
        raise _err(p, section, f"must be an array of tables ([[{section}]])")
    for i, item in enumerate(items):
        yield f"{section}[{i}]", item


def _sweep_gates(items: Any, p: str, tol: float, target: Callable[[Any, str], str],
                 under_test: str) -> tuple[SweepGate, ...]:
    """The [[sweep]] tables: a target (a spec, or an http URL as swept), keys of a sweep, no baselines."""
    out = []
    for key, item in _tables(items, p, "sweep"):
        _table(item, p, key, {"target", "checks"}, ("checks",))
        spec = item.get("target", under_test)
        swept = spec if isinstance(spec, str) and "://" in spec else target(spec, f"{key}.target")
        out.append(SweepGate(swept, _threshold_checks(item["checks"], tol, p, key, "sweep", SWEEP_KEYS), key))
    return tuple(out)


def _canary_gates(items: Any, p: str, tol: float, target: Callable[[Any, str], str],
                  under_test: str) -> tuple[CanaryGate, ...]:
    """The [[canary]] tables: plan and day known, keys of a canary cell, no baseline checks."""
    out = []
    for key, item in _tables(items, p, "canary"):
        _table(item, p, key, {"plan", "day", "target", "seeds", "checks"}, ("plan", "day", "checks"))
        plan = _resolvable(item["plan"], load_plan, "a canary plan name or plan TOML path", p, f"{key}.plan")
        if not isinstance(item["day"], str) or item["day"] not in CANARY_DAYS:
            raise _err(p, f"{key}.day", f"unknown canary day {item['day']!r}: valid are {', '.join(CANARY_DAYS)}")
        n = item.get("seeds")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise _err(p, f"{key}.seeds", f"must be an integer >= 1, not {n!r}")
        parsed = _threshold_checks(item["checks"], tol, p, key, "canary", CANARY_KEYS)
        out.append(CanaryGate(plan, item["day"], target(item.get("target", under_test), f"{key}.target"), n,
                              parsed, key))
    return tuple(out)


def _threshold_checks(checks: Any, tol: float, p: str, key: str, kind: str,
                      keys: Collection[str], baseline: bool = False) -> tuple[Check, ...]:
    """A [[sweep]], [[canary]] or [[llm]] table's checks: a non-empty list, each naming one of
    `keys`; each compares with its threshold unless `baseline` (an LLM gate's may compare with
    a baseline too)."""
    if not isinstance(checks, list) or not checks:
        raise _err(p, f"{key}.checks", "must be a non-empty list of checks")
    parsed = tuple(parse_check(c, tol, p, f"{key}.checks[{j}]") for j, c in enumerate(checks))
    for j, c in enumerate(parsed):
        if c.relative is not None and not baseline:
            raise _err(p, f"{key}.checks[{j}]", f"a {kind} check compares with its threshold, not a baseline")
        if c.key not in keys:
            raise _err(p, f"{key}.checks[{j}]", f"unknown {kind} key '{c.key}': one of {', '.join(keys)}")
    return parsed


def check_keys(gf: GateFile, schema: type[BaseModel] = RunSummary) -> None:
    """Every check's KEY must name a number in a run summary (`schema`'s fields).

    Tables whose entries depend on the run (tenants, attempt_status) accept
    any name; under `tenants` a name must be a tenant of that scenario.
    """
    for g in gf.gates:
        tenants = {t.name for t in load_workload(g.scenario).tenants}
        for j, c in enumerate(g.checks):
            problem = key_problem(c.key, schema, tenants)
            if problem:
                raise _err(gf.path, f"{g.where}.checks[{j}]", problem)
