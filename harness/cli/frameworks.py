"""The framework targets in `harness targets`: each one's version, flaws by default and knobs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.cli.common import fail, out
from reports.fmt import fmt_s, fmt_share
from targets.frameworks.registry import FRAMEWORKS, installed_version
from workloads.config_files import ConfigError

__all__ = ["render_frameworks", "review_framework_cmd"]


def render_frameworks(console: Console, knobs: bool = False) -> None:
    """One table of the framework targets (their declared flaws, the knob that fixes each);
    with `knobs`, each framework's knobs and defaults too."""
    t = Table(title="framework targets (live only; FRAMEWORK[:KEY=VALUE,...], its knobs or the design's)",
              header_style="bold")
    t.add_column("target", no_wrap=True)
    t.add_column("installed")
    t.add_column("flaws at its defaults", overflow="fold")
    t.add_column("knob that fixes it", overflow="fold")
    for fw in FRAMEWORKS.values():
        got = installed_version(fw) or "no: pip install -e '.[frameworks]'"
        for i, flaw in enumerate(fw.flaws):
            fix = ", ".join(f"{k}={json.dumps(v)}" for k, v in flaw.fix.items()) or "none"
            t.add_row(fw.name if i == 0 else "", got if i == 0 else "", f"{flaw.id}: {flaw.why}",
                      fix + (f" ({flaw.fix_note})" if flaw.fix_note else ""))
        t.add_row("", "", f"[dim]{fw.summary}[/]", f"[dim]tuned: {fw.tuned_spec()}[/]", end_section=True)
    console.print(t)
    if not knobs:
        return
    for fw in FRAMEWORKS.values():
        k = Table(title=f"{fw.name} knobs (defaults)", header_style="bold")
        k.add_column("knob", no_wrap=True)
        k.add_column("default")
        k.add_column("meaning", overflow="fold")
        defaults = fw.knobs().model_dump(mode="json")
        for name, field in fw.knobs.model_fields.items():
            k.add_row(name, json.dumps(defaults[name]), field.description or "")
        console.print(k)


def review_framework_cmd(spec: str, seed: int, scale: float | None, warmup_s: float | None, as_json: bool,
                         out_path: Path | None, quiet: bool, duration_s: float | None = None,
                         flaws: list[str] | None = None) -> None:
    """`harness review FRAMEWORK`: each declared flaw's cost at the defaults and its fix, measured live
    (harness.analysis.review.frameworks); one compare result file per measured flaw."""
    from harness.analysis.review.frameworks import chosen, plan_trials, review_framework
    from harness.cli.live import _shown_run
    from harness.results import io as results

    try:
        planned = chosen(plan_trials(spec), flaws, spec)
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    if not quiet and not as_json:
        runs = sorted({w for t in planned if t.skipped is None for w in t.scenarios})
        out.print(f"review of {spec}, live: {len(planned)} flaw(s); bad days {', '.join(runs) or 'none'}: "
                  f"each run as given and with each flaw's fix", highlight=False)
    try:
        trials = review_framework(spec, seed, scale, warmup_s, run_one=_shown_run(quiet or as_json),
                                  duration_s=duration_s, flaws=flaws)
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))
    doc: dict[str, Any] = {"target": spec, "flaws": []}
    t = Table(title=f"{spec}: each flaw's cost at its defaults, and its fix (live)", header_style="bold")
    for col in ("flaw", "fix", "bad day", "goodput", "p99 ok", "timed out", "shed"):
        t.add_column(col, overflow="fold")
    unmeasured = []
    for trial in trials:
        fix = ", ".join(f"{k}={json.dumps(v)}" for k, v in trial.flaw.fix.items()) or "none"
        entry = {"flaw": trial.flaw.id, "fix": trial.flaw.fix, "fixed_target": trial.fixed,
                 "scenarios": list(trial.scenarios), "skipped": trial.skipped, "result": None}
        doc["flaws"].append(entry)
        if trial.result is None:
            unmeasured.append(f"  {trial.flaw.id} ({', '.join(trial.scenarios) or 'no bad day'}): not measured, "
                              f"{trial.skipped}")
            continue
        path = results.write_atomic(out_path.with_name(f"{out_path.stem}-{trial.flaw.id}.json") if out_path
                                    else results.default_path("review", f"{spec}-{trial.flaw.id}"), trial.result)
        entry["result"] = str(path)
        entry["compare"] = trial.result.summary_json()
        r = trial.result
        for i, day in enumerate(r.scenarios):
            a, b = r.pair(day)
            bang = lambda s: "" if s.valid else "!"  # noqa: E731
            t.add_row(trial.flaw.id if i == 0 else "", fix if i == 0 else "", day,
                      f"{fmt_share(a.goodput_ratio)}{bang(a)} -> {fmt_share(b.goodput_ratio)}{bang(b)}",
                      f"{fmt_s(a.latency_ok_s.p99)} -> {fmt_s(b.latency_ok_s.p99)}",
                      f"{fmt_share(a.outcomes.timed_out.share)} -> {fmt_share(b.outcomes.timed_out.share)}",
                      f"{fmt_share(a.outcomes.shed.share)} -> {fmt_share(b.outcomes.shed.share)}",
                      end_section=i == len(r.scenarios) - 1)
    if as_json:
        sys.stdout.write(results.dumps(doc) + "\n")  # strict JSON, as publish prints
        return
    out.print(t)
    out.print("as given -> with the fix; goodput: share of requests answered within the SLO; '!': an invalid run "
              "(`harness report FILE` says why and how to get a valid one)", highlight=False, soft_wrap=True)
    for line in unmeasured:
        out.print(line, highlight=False, soft_wrap=True)
    for e in doc["flaws"]:
        if e["result"]:
            out.print(f"{e['flaw']}: {e['result']}", highlight=False, soft_wrap=True)
