"""CI performance gates: run the scenarios a gate file names, check thresholds.

The gate file format is documented in harness/gate/file.py (example:
harness/gate/ci.toml). `run_gate(path)` runs every (scenario, target) the
file needs once, in sim mode with the file's seed (deterministic, so a gate is
stable on a noisy CI machine), evaluates every check and returns a gate
result (`harness.results.gate.GateResult`: one `CheckOutcome` per check, the
run summaries the checks read, and `passed`).

Live runs: a gate judges saved runs instead of running sim when given them
(`run_gate(..., results=[...])`, `harness gate FILE --results RUN.json`):
each gate reads the given run of its scenario and target. A gate reads only
valid runs: when a run it judges, or a baseline run it compares with, is
marked invalid (harness.live.validity: the driver fell behind, or could not
reach the target), the result says it cannot judge (`cannot_judge`, exit 2)
rather than pass or fail.

Seeds: with `seeds` in the file or `run_gate(..., seeds=N)` every run is made under
each seed (separate jobs); a check then reads the mean or a bound of the figure's
95% interval, and a baseline check with a seeded baseline is a one-sided test for a
significant regression (`harness.gate.seeded`).

Canary gates (`[[canary]]`: a rollout plan on a canary day, checks on its
rollback share, time to decision, blast radius) run by `harness.gate.canary`
and add their checks to the same result; so do sweep gates (`[[sweep]]`: the knee
of a saved `harness sweep` result among `results`, `harness.gate.sweep`).

Checks address summary keys by dotted paths ("latency_s.p99",
"tenants.t0.p99_s"), resolved against the typed `RunSummary` as its result file
spells it. A gate result is also a valid `--baseline` for a later gate run, as
are run, compare and rank results.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

from pydantic import BaseModel

from harness.analysis.seeds import seed_set
from harness.analysis.shorten import Shortening
from harness.analysis.stats import interval, seeds_from
from harness.analysis.variants import OnDone, VariantJob, knobs_of
from harness.engine.jobs import Jobs
from harness.gate.file import COMPARE, Check, Gate, GateFile, check_keys, load_gate_file
from harness.gate.baseline import baseline_for, baseline_seeds, baseline_summaries
from harness.gate.canary import run_canary_gates
from harness.gate.sweep import run_sweep_gates
from harness.gate.seeded import baseline_change, change_words, read_bound
from workloads.loader import ConfigError
from harness.results import RunSummary
from harness.results.base import Result
from harness.results.canary import CanaryResult
from harness.results.llm import LlmResult
from harness.results.sweep import SweepResult
from harness.results.gate import CheckOutcome, GateResult
from harness.results.run import SeedSet

__all__ = ["evaluate", "lookup", "run_gate"]

Summary = RunSummary | Mapping[str, Any]



def _null_is_infinite(key: str) -> bool:
    """Seconds keys (a segment ending in _s: latency_s.p99, tenants.*.p99_s,
    recovery.recovered_after_s) are null when never reached: infinitely late."""
    return any(part.endswith("_s") for part in key.split("."))


def lookup(summary: Summary, key: str) -> list[tuple[str, float | None]]:
    """[(label, value)] for a dotted key of a run summary (typed, or as its file
    spells it); '*' expands to every entry of a table.

    Labels name the entry a wildcard picked (e.g. the tenant). A null latency
    becomes inf; any other null stays None ('no value').
    """
    tree = summary.model_dump(mode="python", by_alias=True) if isinstance(summary, BaseModel) else summary
    found: list[tuple[str, Any]] = [("", tree)]
    for part in key.split("."):
        nxt = []
        for label, node in found:
            if not isinstance(node, dict):
                continue
            if part == "*":
                nxt += [((f"{label}." if label else "") + str(k), v) for k, v in node.items()]
            elif part in node:
                nxt.append((label, node[part]))
        found = nxt
    out = []
    for label, v in found:
        if v is None and _null_is_infinite(key):
            v = math.inf
        out.append((label, None if v is None or isinstance(v, dict) else float(v)))
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b == 0:
        return 1.0 if a == 0 else math.inf
    if math.isinf(a) and math.isinf(b):
        return None
    return a / b


def _worst(op: str, values: list[tuple[str, float | None, float]]) -> tuple[str, float | None, float]:
    """The (label, measured, threshold) furthest on the wrong side of its threshold."""
    def badness(item: tuple[str, float | None, float]) -> float:
        _, v, t = item
        if v is None or (isinstance(t, float) and math.isnan(t)):
            return math.inf
        if op in ("<=", "<"):
            return v - t if not (math.isinf(v) and math.isinf(t)) else 0.0
        if op in (">=", ">"):
            return t - v if not (math.isinf(v) and math.isinf(t)) else 0.0
        return float(not COMPARE[op](v, t))
    return max(values, key=badness)


def _per_seed(runs: list[RunSummary], key: str) -> dict[str, list[float | None]]:
    """{label: [value under each seed]} of a dotted key (labels as `lookup` names them)."""
    found = [dict(lookup(s, key)) for s in runs]
    labels = list(dict.fromkeys(k for f in found for k in f))
    return {k: [f.get(k) for f in found] for k in labels}


def _evaluate_seeded(check: Check, gate: Gate, row: dict[str, Any], runs: list[RunSummary],
                     theirs: list[RunSummary] | None, base: SeedSet | None,
                     base_summary: RunSummary | None, seeds: list[int]) -> CheckOutcome:
    """One check over seeds: the mean or the named bound of each entry's interval against the
    threshold; a baseline check against a seeded baseline, a one-sided test (module doc)."""
    infinite = _null_is_infinite(check.key)
    mine = _per_seed(runs, check.key)
    if theirs is not None:
        ref_vals = _per_seed(theirs, check.key)
        mine = {k: [_ratio(v, r) for v, r in zip(vs, ref_vals.get(k, [None] * len(vs)))] for k, vs in mine.items()}
    if not mine:
        row["note"] = "no such entries in this run"
        return CheckOutcome(**row)
    cis = {k: interval(vs) for k, vs in mine.items()}
    n = len(runs)
    read = {k: read_bound(ci, check.bound, infinite) for k, ci in cis.items()}
    notes = [row["note"]] if row["note"] else []
    row["bound"] = check.bound.value
    if check.relative is None:
        assert check.value is not None  # a check without `relative` has its number (file.py)
        values = [(k, read[k], check.value) for k in mine]
        notes.append(f"mean of {n} seeds" if check.bound.value == "mean" else f"{check.bound.value} bound, {n} seeds")
    elif base is None or len(base.seeds) < 2:
        ref = dict(lookup(base_summary, check.key)) if base_summary is not None else {}
        values = [(k, read[k], r * (1 + check.relative) if (r := ref.get(k)) is not None else math.nan) for k in mine]
        notes.append(f"baseline has one seed: its value {check.relative:+.0%}, no test")
    else:
        paired = base.seeds == seeds
        base_vals = _per_seed(base.summaries, check.key)
        tests = {k: baseline_change(check.op, vs, base_vals.get(k, [None] * len(base.seeds)), check.relative,
                                    paired) for k, vs in mine.items()}
        tested = {k: t for k, t in tests.items() if t is not None}
        if len(tested) < len(tests):  # == and != have no 'worse': compare the means
            values = [(k, read[k], (interval(base_vals[k]).mean or math.nan) * (1 + check.relative))
                      for k in mine if k in base_vals]
        else:
            # The entry most likely worse (smallest p) speaks for the check.
            k = min(tested, key=lambda k: 2.0 if (p := tested[k].p_value) is None else p)
            d, measured = tested[k], read[k]
            new_mean, base_mean = cis[k].mean, interval(base_vals.get(k, [])).mean
            passed = not d.significant() if d.mean is not None else \
                COMPARE[check.op](measured if measured is not None else math.inf,
                                  (base_mean if base_mean is not None else math.inf) * (1 + check.relative))
            failing = sum(t.significant() for t in tested.values())
            notes.append(change_words(d, new_mean, base_mean, check.relative))
            if len(tests) > 1:
                notes.append(f"{failing} of {len(tests)} regressed; most likely {k}")
            row.update(measured=read[k], threshold=None if base_mean is None else base_mean * (1 + check.relative),
                       passed=passed and failing == 0, interval=cis[k], change=d, note="; ".join(notes))
            return CheckOutcome(**row)
    label, measured, threshold = _worst(check.op, values)
    ok = [v is not None and not (isinstance(t, float) and math.isnan(t)) and COMPARE[check.op](v, t)
          for _, v, t in values]
    if len(values) > 1:
        notes.append(f"{sum(not o for o in ok)} of {len(values)} fail; worst {label}" if not all(ok)
                     else f"all {len(values)} pass; worst {label}")
    if measured is None:
        notes.append("no value")
    row.update(measured=measured, threshold=threshold, passed=all(ok), interval=cis.get(label),
               note="; ".join(notes))
    return CheckOutcome(**row)


def evaluate(check: Check, gate: Gate, summaries: Mapping[tuple[str, str, float | None], Summary],
             baseline: Mapping[tuple[str, str], Summary] | None,
             seeded: dict[tuple[str, str, float | None], list[RunSummary]] | None = None,
             base_seeded: dict[tuple[str, str], SeedSet] | None = None, seeds: list[int] | None = None) -> CheckOutcome:
    """One check of one gate, decided. `seeded` (each seed's summaries, `seeds` in order) and
    `base_seeded` (the baseline's, where it has seeds) make it a check over seeds. A summary may be
    any mapping of figures (an LLM gate's run: harness.gate.llm)."""
    row: dict[str, Any] = {
        "scenario": gate.scenario, "target": gate.target if gate.b is None else f"{gate.target}/{gate.b}",
        "key": check.key, "op": check.op, "check": check.text, "threshold": check.value,
        "measured": None, "passed": False, "note": "", "skipped": False}
    if gate.b is not None and gate.b == gate.target:
        row.update(passed=True, skipped=True, note=f"skipped: A and B are both {gate.target} (--target is this "
                                                   "pair's reference); a ratio of a target with itself says nothing")
        return CheckOutcome(**row)
    if seeded is not None and seeds is not None and len(seeds) > 1:
        if gate.b is not None:
            row["note"] = f"ratio {gate.target} / {gate.b}"
        theirs = seeded[(gate.scenario, gate.b, gate.duration_s)] if gate.b is not None else None
        base = base_summary = None
        if check.relative is not None:
            if baseline is None:
                row.update(passed=True, skipped=True, note="skipped: no --baseline given")
                return CheckOutcome(**row)
            base_summary = baseline_for(baseline, gate.scenario, gate.target)
            base = baseline_for(base_seeded, gate.scenario, gate.target) if base_seeded else None
            if base_summary is None:
                row["note"] = f"no run of {gate.scenario} in the baseline"
                return CheckOutcome(**row)
        return _evaluate_seeded(check, gate, row, seeded[(gate.scenario, gate.target, gate.duration_s)], theirs,
                                base, base_summary, seeds)
    mine = dict(lookup(summaries[(gate.scenario, gate.target, gate.duration_s)], check.key))
    if gate.b is not None:
        their_vals = dict(lookup(summaries[(gate.scenario, gate.b, gate.duration_s)], check.key))
        mine = {k: _ratio(v, their_vals.get(k)) for k, v in mine.items()}
        row["note"] = f"ratio {gate.target} / {gate.b}"
    if check.relative is not None:
        if baseline is None:
            row.update(passed=True, skipped=True, note="skipped: no --baseline given")
            return CheckOutcome(**row)
        base = baseline_for(baseline, gate.scenario, gate.target)
        if base is None:
            row["note"] = f"no run of {gate.scenario} in the baseline"
            return CheckOutcome(**row)
        ref = dict(lookup(base, check.key))
        values = [(k, v, (r * (1 + check.relative)) if (r := ref.get(k)) is not None else math.nan)
                  for k, v in mine.items()]
        ref_value = _worst(check.op, values)[2] / (1 + check.relative)
        seconds = any(p.endswith("_s") and not p.endswith("tok_s") for p in check.key.split("."))  # tok_s: tokens/s
        row["note"] = f"baseline {_fmt(ref_value, seconds)} {check.relative:+.0%}"
    else:
        assert check.value is not None  # a check without `relative` has its number (file.py)
        values = [(k, v, check.value) for k, v in mine.items()]
    if not values:
        row["note"] = "no such entries in this run"
        return CheckOutcome(**row)
    label, measured, threshold = _worst(check.op, values)
    ok = [v is not None and not (isinstance(t, float) and math.isnan(t)) and COMPARE[check.op](v, t)
          for _, v, t in values]
    row.update(measured=measured, threshold=threshold, passed=all(ok))
    notes = [row["note"]] if row["note"] else []
    if len(values) > 1:
        notes.append(f"{sum(not o for o in ok)} of {len(values)} fail; worst {label}" if not all(ok)
                     else f"all {len(values)} pass; worst {label}")
    if measured is None:
        notes.append("no value")
    row["note"] = "; ".join(notes)
    return CheckOutcome(**row)


def _fmt(x: float | None, seconds: bool = False) -> str:
    """A baseline's value in a note; `seconds` (a latency key) in ms below 1 s."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "never"
    return f"{x * 1000:.3g} ms" if seconds and abs(x) < 1 else f"{x:.4g}" + (" s" if seconds else "")


Key = tuple[str, str, float | None]


def given_summaries(keys: list[Key], results: list[Result]) -> dict[Key, RunSummary]:
    """The saved run each (scenario, target) reads, matched by both names (a run of
    another target is never judged in its place); ConfigError names what is missing."""
    given: dict[tuple[str, str], RunSummary] = {}
    for r in results:
        given.update(baseline_summaries(r))
    out: dict[Key, RunSummary] = {}
    for w, t, dur in keys:
        if (w, t) not in given:
            have = ", ".join(f"{gw} on {gt}" for gw, gt in sorted(given)) or "none"
            raise ConfigError(f"--results: the gate needs a run of {w} on {t}; the given results hold: {have} "
                              "(--target names the target under test)")
        out[(w, t, dur)] = given[(w, t)]
    return out


def invalid_runs(gf: GateFile, summaries: dict[Key, RunSummary],
                 base: dict[tuple[str, str], RunSummary] | None) -> list[str]:
    """Why the gate cannot judge: each invalid run it reads, as judged or as a baseline."""
    out = [f"the {s.mode} run of {w} on {t} is invalid: {'; '.join(s.invalid_reasons) or 'no reason given'}"
           for (w, t, _), s in summaries.items() if not s.valid]
    if base:
        for g in gf.gates:
            ref = baseline_for(base, g.scenario, g.target) if any(c.relative is not None for c in g.checks) else None
            if ref is not None and not ref.valid:
                line = (f"the baseline run of {g.scenario} on {ref.target} is invalid: "
                        f"{'; '.join(ref.invalid_reasons) or 'no reason given'}")
                if line not in out:
                    out.append(line)
    return out


def run_gate(path: str, target: str | None = None, baseline: Result | None = None,
             jobs: Jobs = Jobs(), on_done: OnDone | None = None,
             results: list[Result] | None = None, result_files: list[str] | None = None,
             seeds: int | None = None) -> GateResult:
    """Parse (ConfigError on a bad file), run what the gates need, evaluate; the gate result.

    `baseline` is a loaded result (`harness.results.load_result`) of a kind
    `baseline_summaries` accepts (ValueError otherwise). `results`, when given, are
    saved runs (run, compare, gate or rank results; live or sim) judged instead of
    running sim; `result_files` their paths, recorded in the gate result. `seeds`
    replaces the file's `seeds` (sim only: saved runs are one seed each). `jobs`: where
    the sim runs go (default: this machine's worker processes).
    """
    started = time.perf_counter()
    gf: GateFile = load_gate_file(path, target)
    check_keys(gf)
    base = baseline_summaries(baseline) if baseline is not None else None
    base_seeded = baseline_seeds(baseline) if baseline is not None else None
    seed_list = seeds_from(gf.seed, 1 if results else (seeds or gf.seeds))
    # One run per (scenario, target, duration), however many gates read it.
    keys = sorted({(g.scenario, t, g.duration_s) for g in gf.gates for t in (g.target, g.b)
                   if t is not None and g.b != g.target},
                  key=lambda k: (k[0], k[1], k[2] or 0.0))
    seeded: dict[Key, list[RunSummary]] | None = None
    if results:
        summaries = given_summaries(keys, [r for r in results
                                           if not isinstance(r, (CanaryResult, SweepResult, LlmResult))])
    else:
        knobs = {t: knobs_of(t)[1] for _, t, _ in keys}
        sims = [VariantJob(t, knobs[t], w, s, None if dur is None else Shortening(run_s=dur))
                for s in seed_list for w, t, dur in keys]
        # Keyed by duration too (two gates may cut one scenario differently), so not run_summaries.
        done = [r.summary for r in jobs.run(sims, on_done)]
        seeded = {k: done[i::len(keys)] for i, k in enumerate(keys)}
        summaries = {k: runs[0] for k, runs in seeded.items()}
    checks = [evaluate(c, g, summaries, base, seeded, base_seeded, seed_list) for g in gf.gates for c in g.checks]
    canary_checks, canary_runs = run_canary_gates(gf, None if results else seeds, jobs, results)
    checks += canary_checks
    sweep_checks, sweep_cannot = run_sweep_gates(gf, results)  # [[sweep]]: saved sweep results (harness.gate.sweep)
    checks += sweep_checks
    cannot = invalid_runs(gf, summaries, base) + sweep_cannot
    nested: dict[str, dict[str, RunSummary]] = {}
    durations: dict[str, dict[str, float]] = {}
    for (w, t, _), s in summaries.items():
        nested.setdefault(w, {})[t] = s
        durations.setdefault(w, {})[t] = s.duration_s
    over: dict[str, dict[str, SeedSet]] | None = None
    if seeded is not None and len(seed_list) > 1:
        over = {}
        for (w, t, _), runs in seeded.items():
            over.setdefault(w, {})[t] = seed_set(seed_list, runs)
    return GateResult(
        gate_file=gf.path, seed=gf.seed, target=target, checks=checks,
        seeds=seed_list if over else None, over_seeds=over,
        passed=all(c.passed for c in checks) and not cannot, summaries=nested, durations=durations,
        wall_s=time.perf_counter() - started, cannot_judge=cannot, results=list(result_files or []),
        canary=canary_runs or None,
    )
