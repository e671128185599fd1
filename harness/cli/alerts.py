"""`harness alerts`: write a target's Prometheus alert rules and Grafana dashboard, and prove the rules in sim.

Parses options, calls ``harness.ops`` (the files) and ``harness.analysis.alerts.days``
(the rules on each scenario), writes the promtool unit tests built from those scenarios
(``harness.analysis.alerts.promtest``), writes the result and renders it with ``reports.alerts``.
``--mode live`` runs the scenarios live instead (``harness.analysis.alerts.live``), with
``--prometheus`` a real Prometheus scraping the target beside the project's evaluator.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.cli.common import (DEVICE, HTML, JOBS, JSON, LIVE_SCALE, MODE, QUIET, SEED, bounded, err,
                                existing_file, fail, publish)
from harness.cli.live import BALANCER, WARMUP

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
    mode: str = MODE,
    workload: Optional[List[str]] = typer.Option(None, "--workload", "-w", help="live: scenario to run live "
                                                 "(repeatable; default: spike)."),
    prometheus: bool = typer.Option(False, "--prometheus", help="live: a real Prometheus (Debian's `prometheus`) on "
                                    "loopback scrapes the target with the rules loaded; its firing times go beside "
                                    "the project's evaluator's."),
    interval: float = typer.Option(1.0, "--interval", help="live, --prometheus: its scrape and evaluation interval.",
                                   callback=bounded("--interval", ge=0.1, le=60, unit=" s")),
    scale: Optional[float] = LIVE_SCALE,
    duration: Optional[float] = typer.Option(None, "--duration", help="live: seconds of each scenario (default: "
                                             "its own).", callback=bounded("--duration", gt=0, unit=" s")),
    device: str = DEVICE,
    balancer: str = BALANCER,
    warmup: Optional[float] = WARMUP,
    review: Optional[Path] = typer.Option(None, "--review", help="A saved `harness review` result: the dashboard's "
                                          "first row is the one it chose (else: chosen on these days).",
                                          callback=existing_file("--review")),
) -> None:
    """Prometheus alert rules (goodput burn rate, leading signals) and a Grafana dashboard, proven on the bad days.

    With --eval, also `TARGET-alerts.test.yaml` beside the rules: `promtool test rules` unit
    tests built from the same days' series (each day's alerts fire when the sim evaluator says,
    the calm days fire none). The dashboard's first row is the goodput SLI and the leading signals
    that caught these bad days first (the ranking `harness review` prints), or a saved review's."""
    from harness.cli.applies import Kind, Mode, Where, check

    check("alerts", Where(Kind.DESIGN, Mode(mode)), alerts, dict(locals()))  # --workload, --scale, ...: live only

    from harness.analysis.alerts import leading_from_days, leading_row, prove_days, rule_figures, write_promtool_tests
    from harness.engine.jobs import Jobs
    from harness.ops.files import write_ops_files
    from harness.ops.rules import build_rules
    from harness.results.alerts import AlertsResult
    from targets.spec import resolve_target
    from workloads.loader import load_suite, suite_durations

    if mode == "live":
        return _alerts_live(target, out_dir, hour_s, objective, list(workload or ["spike"]), prometheus, interval,
                            scale, duration, device, balancer, warmup, seed, as_json, quiet, html)
    try:
        config = resolve_target(target)
        rules = build_rules(config, hour_s, objective)
        chosen, source = _saved_row(review) if review is not None else ([], None)
        days: list = []  # ProvenDay, when evaluated
        if evaluate:
            names = list(dict.fromkeys([*load_suite(suite), *CALM]))
            done = (lambda name: err.print(f"  {name} done", style="dim")) if not (quiet or as_json) else None
            result, days = prove_days(target, config, rules, names, suite_durations(suite), seed, hour_s, objective,
                                      calm=CALM, jobs=Jobs(workers=n_jobs), on_done=done)
            if review is None:
                chosen = leading_from_days(target, days, rules, config)
                source = f"measured detection on these {len(days)} days (the ranking `harness review` uses)"
        else:
            result = AlertsResult(target=target, hour_s=hour_s, objective=objective, seed=seed,
                                  rules=rule_figures(config, rules))
        files = write_ops_files(config, rules, out_dir, hour_s, objective, leading_row(chosen) or None, source)
        if days:
            files.append(str(write_promtool_tests(config, rules, days, Path(files[0]))))
    except ValueError as exc:
        fail(str(exc))
    result = result.model_copy(update={"files": files, "leading": chosen, "leading_source": source})
    publish(result, out_dir / f"{config.name.replace('/', '_')}-alerts-result.json", html, as_json)


def _saved_row(path: Path):
    """The first row a saved review chose, and where it came from; exits 2 when the file holds none."""
    from harness.results import ReviewResult, load_result

    try:
        saved = load_result(path)
    except (OSError, ValueError) as exc:
        fail(f"--review {path}: {exc}")
    if not isinstance(saved, ReviewResult) or saved.alerts is None or not saved.alerts.metrics:
        fail(f"--review {path}: not a `harness review` result with the alerts follow-up")
    return saved.alerts.metrics, f"the review in {path} ({saved.design}: {saved.alerts.source})"


def _alerts_live(target: str, out_dir: Path, hour_s: float, objective: float, workloads: list[str], prometheus: bool,
                 interval_s: float, scale: float | None, duration_s: float | None, device: str, balancer: str,
                 warmup_s: float | None, seed: int, as_json: bool, quiet: bool, html: Optional[Path]) -> None:
    """`harness alerts --mode live`: the scenarios live, the rule and dashboard files of the live fleet."""
    from harness.analysis.alerts.live import live_alerts
    from harness.cli.live import invalid_line
    from harness.ops.files import write_ops_files
    from harness.ops.prometheus import prometheus_path
    from workloads.loader import ConfigError

    if prometheus and prometheus_path() is None:
        fail("--prometheus needs Prometheus installed (Debian: apt-get install prometheus)", code=1)

    def run_one(plan):
        if not (quiet or as_json):
            err.print(f"live: {target} on {plan.workload.name} ({plan.workload.duration_s:g} s, peak "
                      f"{plan.workload.peak_rps:,.0f} req/s){' with Prometheus scraping' if prometheus else ''}",
                      highlight=False)
        res = plan.run()
        invalid_line(res)
        return res

    try:
        done = live_alerts(target, workloads, seed, hour_s=hour_s, objective=objective, prometheus=prometheus,
                           interval_s=interval_s, scale=scale, duration_s=duration_s, device=device,
                           balancer=balancer, warmup_s=warmup_s, run_plan=run_one)
        files = write_ops_files(done.config, done.rules, out_dir, hour_s, objective)
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    except RuntimeError as exc:
        fail(str(exc), code=1)
    result = done.result.model_copy(update={"files": files})
    publish(result, out_dir / f"{done.config.name.replace('/', '_')}-alerts-live-result.json", html, as_json)
