"""`harness alerts`: write a target's Prometheus alert rules and Grafana dashboard, and prove the rules in sim.

Parses options, calls ``harness.ops`` (the files) and ``harness.analysis.alerts.days``
(the rules on each scenario), writes the promtool unit tests built from those scenarios
(``harness.analysis.alerts.promtest``), writes the result and renders it with ``reports.alerts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import HTML, JOBS, JSON, QUIET, SEED, bounded, err, fail, publish

CALM = ("steady", "diurnal", "night")


def alerts(
    target: str = typer.Argument(..., help="Target spec (see `harness targets`) or a target TOML file."),
    out_dir: Path = typer.Option(Path("runs/alerts"), "--out", help="Folder for the rule file, dashboard and result."),
    hour_s: float = typer.Option(60.0, "--hour-s", help="Seconds that play the SRE workbook's hour in every window "
                                 "(3600: the workbook's own windows).", callback=bounded("--hour-s", gt=0, unit=" s")),
    objective: float = typer.Option(0.99, "--objective", help="Goodput SLO: share of answers OK within the SLO.",
                                    callback=bounded("--objective", gt=0, le=0.9999)),
    suite: str = typer.Option("bad-day", "--suite", help="Scenarios to prove the rules on (the calm days are added)."),
    evaluate: bool = typer.Option(True, "--eval/--no-eval", help="Run the scenarios in sim and evaluate the rules."),
    n_jobs: Optional[int] = JOBS,
    seed: int = SEED,
    as_json: bool = JSON,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
) -> None:
    """Prometheus alert rules (goodput burn rate, leading signals) and a Grafana dashboard, proven on the bad days.

    With --eval, also `TARGET-alerts.test.yaml` beside the rules: `promtool test rules` unit
    tests built from the same days' series (each day's alerts fire when the sim evaluator says,
    the calm days fire none)."""
    from harness.analysis.alerts import prove_days, rule_figures, write_promtool_tests
    from harness.engine.jobs import Jobs
    from harness.ops.files import write_ops_files
    from harness.ops.rules import build_rules
    from harness.results.alerts import AlertsResult
    from targets.spec import resolve_target
    from workloads.loader import load_suite, suite_durations

    try:
        config = resolve_target(target)
        rules = build_rules(config, hour_s, objective)
        files = write_ops_files(config, rules, out_dir, hour_s, objective)
        if evaluate:
            names = list(dict.fromkeys([*load_suite(suite), *CALM]))
            done = (lambda name: err.print(f"  {name} done", style="dim")) if not (quiet or as_json) else None
            result, days = prove_days(target, config, rules, names, suite_durations(suite), seed, hour_s, objective,
                                      calm=CALM, jobs=Jobs(workers=n_jobs), on_done=done)
            files.append(str(write_promtool_tests(config, rules, days, Path(files[0]))))
        else:
            result = AlertsResult(target=target, hour_s=hour_s, objective=objective, seed=seed,
                                  rules=rule_figures(config, rules))
    except ValueError as exc:
        fail(str(exc))
    result = result.model_copy(update={"files": files})
    publish(result, out_dir / f"{config.name.replace('/', '_')}-alerts-result.json", html, as_json)
