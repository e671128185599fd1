"""`harness run` and `harness compare`: one target under one workload, or two side by side."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from harness.analysis.compare import compare as run_compare
from harness.analysis.seeds import run_seeds
from harness.analysis.stats import seeds_from
from harness.cli.common import (ALLOW_REMOTE, API_KEY_ENV, DEVICE, DURATION, SERVER_METRICS, SERVER_METRICS_URL, TOKENIZER, EXECUTOR, INTERRUPTED, JOBS, JSON,
                                LIVE_SCALE, MODE, NO_CACHE, OUT, QUIET, RATE, SEED, SEEDS, SET, URL_MODEL, URL_TEMPLATE, bounded,
                                cache_noted, check_target_mode, err, existing_file, fail, interruptible, one_of,
                                publish, sim_jobs, torch_model)
from harness.cli.live import BALANCER, DRIVER_PROCS, WARMUP
from harness.cli.llm_traffic import (CONCURRENCY, DATASET, DATASET_FORMAT, MAX_CONCURRENCY, PREFIX_GROUPS, PREFIX_TOKENS,
                                     THINK_TIME)
from harness.engine.jobs import Executor, Jobs, SimJob
from harness.results import CompareResult
from harness.results import io as results
from targets.spec import parse_overrides, resolve_target
from workloads.loader import ConfigError, load_suite, load_workload, suite_durations


def run(
    target: str = typer.Argument(..., help="Target spec (naive, hardened+blind-retries, ...) or TOML file; or an "
                                 "http URL (--mode live): /predict, or any OpenAI-compatible .../v1/completions or "
                                 ".../v1/chat/completions (an LLM URL, always live)."),
    workload: Optional[str] = typer.Option(None, "--workload", "-w", help="Workload name or TOML file (default "
                                           "steady); an LLM URL: a length mix or LLM trace file (default short, "
                                           "at --rate 2 req/s for --duration 20 s), or an LLM workload .toml "
                                           "(its mix, data set and load; options given win)."),
    mode: str = MODE,
    seed: int = SEED,
    seeds: int = SEEDS,
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    duration: Optional[float] = DURATION,
    rate: Optional[float] = RATE,
    set_: Optional[List[str]] = SET,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    scale: Optional[float] = LIVE_SCALE,
    model: Optional[str] = URL_MODEL,
    device: str = DEVICE,
    template: Optional[Path] = URL_TEMPLATE,
    allow_remote: bool = ALLOW_REMOTE,
    api_key_env: str = API_KEY_ENV,
    server_metrics: bool = SERVER_METRICS,
    server_metrics_url: Optional[str] = SERVER_METRICS_URL,
    tokenizer: Optional[str] = TOKENIZER,
    warmup: Optional[float] = WARMUP,
    driver: str = typer.Option("builtin", "--driver", help="live: builtin (open loop) or locust (closed-loop users).",
                               callback=one_of("--driver", ("builtin", "locust"))),
    workers: int = typer.Option(2, "--workers", help="live, --driver locust: Locust worker processes.",
                                callback=bounded("--workers", ge=1, le=64)),
    driver_procs: int = DRIVER_PROCS,
    balancer: str = BALANCER,
    no_cache: bool = NO_CACHE,
    dataset: Optional[Path] = DATASET,
    dataset_format: Optional[str] = DATASET_FORMAT,
    concurrency: Optional[int] = CONCURRENCY,
    max_concurrency: Optional[int] = MAX_CONCURRENCY,
    think_time: float = THINK_TIME,
    prefix_tokens: int = PREFIX_TOKENS,
    prefix_groups: int = PREFIX_GROUPS,
) -> None:
    """Run one target under one workload and write its result file.

    An LLM URL (any OpenAI-compatible server, streaming) gets an `llm` result: TTFT, ITL, TPOT, E2E and
    goodput under a TTFT + TPOT SLO (--set slo_ttft_s=, slo_tpot_s=, attainment=), per tenant."""
    from harness.cli.dispatch import dispatch

    dispatch("run", run, dict(locals()))  # the job for the target's kind (harness.cli.dispatch.JOBS)


def run_target(target: str, workload: Optional[str], mode: str, seed: int, seeds: int, n_jobs: Optional[int],
               executor: str, duration: Optional[float], rate: Optional[float], set_: Optional[List[str]],
               as_json: bool, out_path: Optional[Path], quiet: bool, scale: Optional[float], model: Optional[str],
               device: str, template: Optional[Path], allow_remote: bool, warmup: Optional[float], driver: str,
               workers: int, driver_procs: int, balancer: str, no_cache: bool = False) -> None:
    """`run` of a target the harness drives (a design, a framework, a /predict URL): sim, live or
    by Locust. The options that do not apply were refused before (harness.cli.applies)."""
    workload = workload or "steady"
    model = torch_model(model)
    check_target_mode(target, mode)
    try:
        job = SimJob(target, workload, seed, parse_overrides(set_ or []), duration, rate)
        if "://" not in target:  # a URL target has no knobs to resolve
            resolve_target(target, job.overrides)
        load_workload(workload)
    except ConfigError as exc:
        fail(str(exc))
    if driver == "locust":
        from harness.cli.locust import run_with_locust  # Locust runs in subprocesses only

        result = run_with_locust(job, workers, scale, model, device, template, allow_remote)
    elif mode != "sim":
        from harness.cli.live import run_live  # live mode lives in its own module

        result = run_live(job, mode, quiet or as_json, scale=scale, model=model, device=device,
                          template=template, allow_remote=allow_remote, warmup_s=warmup,
                          driver_procs=driver_procs, balancer=balancer)
    elif seeds > 1:
        from harness.cli.progress import job_progress

        jobs = sim_jobs(executor, n_jobs, no_cache)
        with job_progress(seeds, enabled=not (quiet or as_json) and err.is_terminal, console=err) as tick:
            result = cache_noted(run_seeds(job, seeds_from(seed, seeds), jobs, on_done=tick), jobs)
    else:
        from harness.cli.progress import sim_progress

        jobs = sim_jobs(executor, n_jobs, no_cache)
        with sim_progress(enabled=not (quiet or as_json) and err.is_terminal, console=err) as progress:
            result = (job.run(progress) if jobs.cache is None else
                      cache_noted(jobs.cache.one(job, lambda: job.run(progress)), jobs))
    publish(result, out_path or results.default_path("run", f"{target}-{workload}"), None, as_json)
    if mode == "live":
        from harness.cli.live import nothing_succeeded

        nothing_succeeded(result)  # exit 1 with the first error's text


def compare(
    a: str = typer.Argument(..., help="Target A (spec or TOML file)."),
    b: str = typer.Argument(..., help="Target B (spec or TOML file). Two LLM policies (llm-static, ...): a rate "
                            "sweep of each; two LLM URLs (OpenAI-compatible servers): each driven live."),
    workload: Optional[List[str]] = typer.Option(None, "--workload", "-w", help="Workload (repeatable); default: the suite."),
    suite: str = typer.Option("bad-day", "--suite", help="Suite to run when no --workload is given."),
    seed: int = SEED,
    seeds: int = SEEDS,
    duration: Optional[float] = DURATION,
    rate: Optional[float] = RATE,
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Knob KEY=VALUE for BOTH sides (repeatable)."),
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    mode: str = MODE,
    scale: Optional[float] = LIVE_SCALE,
    warmup: Optional[float] = WARMUP,
    driver_procs: int = DRIVER_PROCS,
    model: Optional[str] = typer.Option(None, "--model", help="LLM URLs: the served model's name (default: the first "
                                        "each server's /v1/models lists)."),
    api_key_env: str = API_KEY_ENV,
    server_metrics: bool = SERVER_METRICS,
    server_metrics_url: Optional[str] = SERVER_METRICS_URL,
    tokenizer: Optional[str] = TOKENIZER,
    template: Optional[Path] = typer.Option(None, "--template", help="LLM URLs: a JSON object of fields added to "
                                            "every request.", callback=existing_file("--template")),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="LLM URLs: allow servers outside loopback."),
    balancer: str = BALANCER,
    no_cache: bool = NO_CACHE,
    dataset: Optional[Path] = DATASET,
    dataset_format: Optional[str] = DATASET_FORMAT,
    concurrency: Optional[int] = CONCURRENCY,
    max_concurrency: Optional[int] = MAX_CONCURRENCY,
    think_time: float = THINK_TIME,
    prefix_tokens: int = PREFIX_TOKENS,
    prefix_groups: int = PREFIX_GROUPS,
    also: Optional[List[str]] = typer.Option(None, "--also", help="LLM fleets: more fleets beside A and B "
                                             "(repeatable), simulated on the same days and ranked with them."),
) -> None:
    """Run two targets side by side over a suite (same seeds, same arrivals); two LLM policies: a rate sweep;
    two LLM URLs: both driven live on the same arrivals at each rate (default 2, 4 and 8 req/s, 10 s each),
    B's output tokens/s within the SLO against A's.
    Ctrl-C or SIGTERM: the scenarios that finished are written and judged (exit 130).

    Two LLM policies (llm-static, llm-dynamic, llm-continuous): -w mixes or trace files, or --suite
    llm-bad-day; --seeds N gives intervals. With --mode live each is served and driven in turn (the short
    mix at 4 req/s for 20 s unless given): each policy and mix ends within --duration + 120 s (a request
    unanswered ten SLO budgets after its arrival counts as unfinished) plus the server's start."""
    from harness.cli.dispatch import dispatch

    dispatch("compare", compare, dict(locals()))  # the job for the pair's kind (harness.cli.dispatch.JOBS)


def compare_targets(a: str, b: str, workload: Optional[List[str]], suite: str, seed: int, seeds: int,
                    duration: Optional[float], rate: Optional[float], set_: Optional[List[str]],
                    n_jobs: Optional[int], executor: str, as_json: bool, out_path: Optional[Path], quiet: bool,
                    mode: str, scale: Optional[float], warmup: Optional[float], driver_procs: int,
                    balancer: str, no_cache: bool = False) -> None:
    """`compare` of two targets the harness builds (designs, frameworks: live), sim or live, over a
    suite. The options that do not apply were refused before (harness.cli.applies)."""
    for side, spec in (("A", a), ("B", b)):
        check_target_mode(spec, mode, side)
        if "://" in spec:
            fail(f"{side} '{spec}' is a URL: compare builds both targets itself, or drives two OpenAI-compatible "
                 f"LLM URLs; drive another server with `harness run {spec} --mode live`")
    try:
        overrides = parse_overrides(set_ or [])
        resolve_target(a, overrides)
        resolve_target(b, overrides)
        names = list(workload) if workload else load_suite(suite)
        durations = {} if workload else suite_durations(suite)
        for w in names:
            load_workload(w)
    except ConfigError as exc:
        fail(str(exc))
    with interruptible():  # SIGTERM stops it as Ctrl-C does: the finished scenarios are kept
        if mode != "sim":
            from harness.cli.live import compare_live

            result = compare_live(a, b, names, seed, overrides, duration, rate, scale, mode, quiet or as_json,
                                  warmup_s=warmup, driver_procs=driver_procs, balancer=balancer)
        else:
            from harness.cli.progress import job_progress

            jobs = sim_jobs(executor, n_jobs, no_cache)
            with job_progress(2 * len(names) * seeds, enabled=not (quiet or as_json) and err.is_terminal,
                              console=err) as tick:
                result = cache_noted(run_compare(a, b, names, seed, overrides, duration, rate, jobs, on_done=tick,
                                                 durations=durations, seeds=seeds_from(seed, seeds)), jobs)
    publish(result, out_path or results.default_path("compare", f"{a}-vs-{b}"), None, as_json)
    _interrupted(result)


def _interrupted(result: CompareResult) -> None:
    """An interrupted compare (written by now) says what it covers on stderr and exits 130."""
    if result.partial is None:
        return
    p = result.partial
    planned = len(p.finished) + len(p.unfinished)
    covers = (f"the result covers the {len(p.finished)} of {planned} scenarios that finished" if p.finished
              else f"none of the {planned} scenarios finished; the result keeps what ran")
    err.print(f"[bold red]interrupted[/]: {covers}; not judged: {', '.join(p.unfinished)}", highlight=False,
              soft_wrap=True)
    raise typer.Exit(INTERRUPTED)
