"""`harness sweep`: the highest offered rate within the SLO, for a sim target, a live one or a URL.

Parses options, calls ``harness.analysis.sweep.run_sweep`` (with ``harness.analysis.capacity``'s
fleet as its capacity check under --check-capacity), prints each step as it
ends, writes the result and renders it with ``reports.sweep``; `--check` judges it
(``harness.gate.sweep``) and exits 1 when a check fails, or when the search found
no valid knee (its lowest steps invalid: `inconclusive`), after writing the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.cli.common import (ALLOW_REMOTE, API_KEY_ENV, DEVICE, EXECUTOR, HTML, JSON, LIVE_SCALE, MODE, OUT, QUIET,
                                SEED, SERVER_METRICS, SERVER_METRICS_URL, SET, TOKENIZER, URL_MODEL, URL_TEMPLATE, bounded,
                                check_target_mode, err, fail, out, publish,
                                torch_model)
from harness.cli.live import BALANCER, DRIVER_PROCS, WARMUP
from harness.cli.llm_traffic import CONCURRENCY_LEVELS, DATASET, DATASET_FORMAT, PREFIX_GROUPS, PREFIX_TOKENS, THINK_TIME
from harness.results import io as results
from workloads.loader import ConfigError


def sweep(
    target: str = typer.Argument(..., help="Target spec, TOML file, or http URL (--mode live); an OpenAI-compatible "
                                 "LLM URL (always live): the highest rate within its TTFT + TPOT SLO."),
    mode: str = MODE,
    start: Optional[float] = typer.Option(None, "--start-rate", help="First rate to try (default: the target's peak).",
                                          callback=bounded("--start-rate", gt=0, unit=" req/s")),
    duration: Optional[float] = typer.Option(None, "--step-duration", help="Seconds per step (default: 2-5 s).",
                                             callback=bounded("--step-duration", gt=0, unit=" s")),
    rel_tol: float = typer.Option(0.05, "--tolerance", help="Stop when the bracket is within this ratio.",
                                  callback=bounded("--tolerance", gt=0, le=0.5)),
    min_ratio: float = typer.Option(0.99, "--min-goodput", help="Share of requests that must meet the SLO.",
                                    callback=bounded("--min-goodput", gt=0, le=1)),
    check: Optional[List[str]] = typer.Option(None, "--check", help='Gate check, e.g. "max_rate_within_slo >= 800".'),
    check_capacity: bool = typer.Option(False, "--check-capacity", help="sim: also ask `capacity` for the fleet."),
    send_lag: float = typer.Option(0.05, "--send-lag-limit", help="live: a step whose send lag p99.9 exceeds this "
                                   "(s) is invalid, as is one with over 1% of its sends over 10 ms late; an invalid "
                                   "step is run again, twice at most.",
                                   callback=bounded("--send-lag-limit", gt=0, unit=" s")),
    repeats: int = typer.Option(1, "--repeats", help="live: run the whole search N times; print the knee's median, "
                                "min, max and spread.", callback=bounded("--repeats", ge=1, le=20)),
    confirm_failures: int = typer.Option(1, "--confirm-failures", help="live: run a failing step again up to N "
                                         "times; its rate fails only if every try fails (0: believe one failure).",
                                         callback=bounded("--confirm-failures", ge=0, le=3)),
    set_: Optional[List[str]] = SET,
    seed: int = SEED,
    scale: Optional[float] = LIVE_SCALE,
    model: Optional[str] = URL_MODEL,
    device: str = DEVICE,
    pad_to_s: Optional[float] = typer.Option(None, "--pad-to-s", help="live host: pad batches to this (0: off).",
                                             callback=bounded("--pad-to-s", ge=0, unit=" s")),
    allow_remote: bool = ALLOW_REMOTE,
    api_key_env: str = API_KEY_ENV,
    server_metrics: bool = SERVER_METRICS,
    server_metrics_url: Optional[str] = SERVER_METRICS_URL,
    tokenizer: Optional[str] = TOKENIZER,
    template: Optional[Path] = URL_TEMPLATE,
    workload: Optional[str] = typer.Option(None, "--workload", "-w", help="LLM URL: the length mix or LLM trace "
                                           "file of every step (default short), or an LLM workload .toml "
                                           "without a load (its mix, data set, prefix)."),
    warmup: Optional[float] = WARMUP,
    driver_procs: int = DRIVER_PROCS,
    executor: str = EXECUTOR,
    balancer: str = BALANCER,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
    dataset: Optional[Path] = DATASET,
    dataset_format: Optional[str] = DATASET_FORMAT,
    concurrency: Optional[str] = CONCURRENCY_LEVELS,
    think_time: float = THINK_TIME,
    prefix_tokens: int = PREFIX_TOKENS,
    prefix_groups: int = PREFIX_GROUPS,
) -> None:
    """Find the highest offered rate whose goodput stays within the SLO (binary search, early stops).

    An LLM URL: the highest rate at which --min-goodput of the requests meet the TTFT + TPOT SLO
    (--set slo_ttft_s=, slo_tpot_s=), from --start-rate (default 1 req/s), --step-duration s of
    arrivals per step (default 10), at most 10 steps."""
    from harness.cli.dispatch import dispatch

    dispatch("sweep", sweep, dict(locals()))  # the job for the target's kind (harness.cli.dispatch.JOBS)


def sweep_llm(target: str, workload: Optional[str], seed: int, start: Optional[float], duration: Optional[float],
              rel_tol: float, min_ratio: float, set_: Optional[List[str]], model: Optional[str], api_key_env: str,
              template: Optional[Path], allow_remote: bool, as_json: bool, out_path: Optional[Path], quiet: bool,
              html: Optional[Path], check: Optional[List[str]], dataset: Optional[Path] = None,
              dataset_format: Optional[str] = None, concurrency: Optional[str] = None,
              think_time: float = 0.0, prefix_tokens: int = 0, prefix_groups: int = 1,
              server_metrics: bool = False, server_metrics_url: Optional[str] = None,
              tokenizer: Optional[str] = None, driver_procs: int = 1, executor: str = "process") -> None:
    """`sweep` of an OpenAI-compatible LLM URL: its TTFT + TPOT SLO, its own rate search; with
    --concurrency LEVELS (and a data set), a closed-loop run at each level and the knee."""
    from harness.analysis.sweep.search import RateSearch
    from harness.cli.llm_traffic import workload_file
    from harness.cli.llm_url import sweep_llm_url

    workload, o = workload_file(workload, dict(dataset=dataset, dataset_format=dataset_format, think_time=think_time,
                                               prefix_tokens=prefix_tokens, prefix_groups=prefix_groups),
                                own_load=True)
    dataset, dataset_format, think_time, prefix_tokens, prefix_groups = o.values()
    if concurrency is not None or dataset is not None or dataset_format is not None or think_time or \
            prefix_tokens or prefix_groups != 1:
        from harness.cli.llm_traffic import sweep_traffic_of
        from harness.cli.llm_url import sweep_llm_url_concurrency

        for flag, given in (("--start-rate", start is not None), ("--tolerance", rel_tol != 0.05),
                            ("--check", bool(check))):
            if given:
                fail(f"{flag}: not used by a concurrency sweep of an LLM URL (--concurrency LEVELS)")
        traffic, levels = sweep_traffic_of(dataset, dataset_format, concurrency, think_time, prefix_tokens,
                                           prefix_groups, driver_procs, executor)
        return sweep_llm_url_concurrency(target, workload, seed, duration, set_, model, api_key_env, template,
                                         allow_remote, as_json, out_path, quiet, html, traffic, levels,
                                         (server_metrics, server_metrics_url, tokenizer))
    sweep_llm_url(target, workload, seed, start, duration, rel_tol, min_ratio, set_, model, api_key_env, template,
                  allow_remote, as_json, out_path, quiet, html,
                  lambda start_rps, tol: RateSearch(start_rps, rel_tol=tol), list(check or []),
                  (server_metrics, server_metrics_url, tokenizer), driver_procs, executor)


def sweep_target(target: str, mode: str, start: Optional[float], duration: Optional[float], rel_tol: float,
                 min_ratio: float, check: Optional[List[str]], check_capacity: bool, send_lag: float,
                 set_: Optional[List[str]], seed: int, scale: Optional[float], model: Optional[str], device: str,
                 pad_to_s: Optional[float], allow_remote: bool, warmup: Optional[float], driver_procs: int,
                 balancer: str, as_json: bool, out_path: Optional[Path], quiet: bool, html: Optional[Path],
                 repeats: int = 1, confirm_failures: int = 1) -> None:
    """`sweep` of a target the harness drives (a design, a framework, a /predict URL), sim or live.
    The options that do not apply were refused before (harness.cli.applies)."""
    model = torch_model(model)
    from harness.analysis.capacity import capacity_agreement
    from harness.analysis.sweep import run_sweep
    from harness.gate.sweep import judge_sweep
    from reports.sweep import step_row
    from targets.spec import parse_overrides

    check_target_mode(target, mode)

    def shown(step) -> None:
        if not (quiet or as_json):
            err.print("  " + "  ".join(step_row(step, None)), highlight=False)

    def repeat_header(i: int, n: int) -> None:
        if not (quiet or as_json):
            err.print(f"repeat {i} of {n}", highlight=False)

    try:
        result = run_sweep(target, mode, overrides=parse_overrides(set_ or []), seed=seed, start_rps=start,
                           duration_s=duration, rel_tol=rel_tol, min_ratio=min_ratio, scale=scale, model=model,
                           device=device, pad_to_s=pad_to_s, allow_remote=allow_remote,
                           capacity_check=capacity_agreement if check_capacity else None, on_step=shown,
                           warmup_s=warmup, send_lag_limit_s=send_lag, driver_procs=driver_procs,
                           balancer=balancer, repeats=repeats, confirm_failures=confirm_failures,
                           on_repeat=repeat_header)
        outcomes = judge_sweep(result, list(check or []))
    except (ConfigError, ValueError, OSError) as exc:
        fail(str(exc))
    except RuntimeError as exc:
        fail(str(exc), code=1)
    label = target.split("://")[-1].replace("/", "_").replace(":", "_")
    publish(result, out_path or results.default_path("sweep", label), html, as_json)
    for o in outcomes:
        if not as_json:
            out.print(f"{o.status}: {o.check} ({o.note})", highlight=False)
    if result.inconclusive:
        if not as_json:
            err.print(f"error: no knee found: {result.inconclusive}", highlight=False)
        raise typer.Exit(1)
    if any(not o.passed for o in outcomes):
        raise typer.Exit(1)
