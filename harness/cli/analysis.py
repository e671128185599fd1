"""`harness rank`, `harness review` and `harness gate`: option parsing only.

The library does the work (harness/analysis/rank/ablation.py, harness/analysis/review/run.py,
harness/gate/check.py) and returns a typed result; these commands write its file
and hand it to its view (reports/rank.py, reports/review.py, reports/gate.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from harness.analysis.stats import seeds_from
from harness.analysis.variants import OnDone, OnPlanned
from harness.cli.common import (ALLOW_REMOTE, EXECUTOR, HTML, JOBS, JSON, NO_CACHE, OUT, QUIET, SEED, SEEDS, bounded,
                                cache_noted, err, existing_file, fail, publish, sim_jobs, writable_file)
from harness.cli.live import WARMUP
from harness.results import io as results
from harness.results import load_result
from harness.results.canary import CanaryResult
from harness.results.rank import RankResult
from reports import gate as gate_view
from workloads.loader import ConfigError, load_suite

@contextmanager
def _runs_progress(quiet: bool) -> Iterator[Callable[[], tuple[OnPlanned | None, OnDone | None]]]:
    """Yields `callbacks() -> (on_planned, on_done)` for a bar whose total grows as
    the library plans runs (an ablation, then its interaction probes); (None, None) when off."""
    if quiet or not err.is_terminal:
        yield lambda: (None, None)
        return
    cols = (TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.completed}/{task.total} runs  {task.fields[last]}"), TimeElapsedColumn())
    with Progress(*cols, console=err, transient=True) as progress:
        task = progress.add_task("runs", total=0, last="")

        def planned(n: int) -> None:
            progress.update(task, total=(progress.tasks[0].total or 0) + n)

        def done(_i: int, job: Any, result: Any) -> None:
            s = result.summary
            p99 = s.latency_s.p99
            last = (f"{job.target} on {job.workload}: goodput {100 * (s.goodput_ratio or 0):.1f}%, "
                    f"p99 {'never' if p99 is None else f'{p99 * 1000:.0f} ms'}")
            progress.update(task, advance=1, last=last)

        yield lambda: (planned, done)


def rank(
    suite: str = typer.Option("bad-day", "--suite", help="Suite of scenarios to rank the flaws over."),
    seed: int = SEED,
    seeds: int = SEEDS,
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    scale: float = typer.Option(1.0, "--scale", help="Multiply every shortened run's length by this (see harness/analysis/shorten.py).",
                                callback=bounded("--scale", gt=0)),
    budget: int = typer.Option(0, "--budget", help="Expected requests per run (0: the default plan; -1: full lengths).",
                               callback=bounded("--budget", ge=-1)),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
    no_cache: bool = NO_CACHE,
) -> None:
    """Rank the design doc's flaws: each put back into hardened, each fixed alone in naive."""
    jobs = sim_jobs(executor, n_jobs, no_cache)
    from harness.analysis.llm import llm_rank
    from harness.analysis.rank import REQUEST_BUDGET
    from harness.analysis.rank import rank as run_rank

    try:
        load_suite(suite)
    except ConfigError as exc:
        fail(str(exc))
    with _runs_progress(quiet or as_json) as callbacks:
        on_planned, on_done = callbacks()
        with jobs.sharing() as shared:  # the ablation, its interactions and the LLM section on one pool
            result = run_rank(suite, seed, shared, scale, None if budget < 0 else (budget or REQUEST_BUDGET),
                              on_done=on_done, on_planned=on_planned, seeds=seeds_from(seed, seeds), llm=llm_rank)
    result = cache_noted(result, jobs)
    publish(result, out_path or results.default_path("rank", suite), html, as_json)


def review(
    design: Optional[str] = typer.Argument(None, help="Design to review: a target spec or TOML file (default: naive, the doc)."),
    html: Optional[Path] = HTML,
    quick: bool = typer.Option(False, "--quick", help="Shorter runs where no flaw needs the length (each disturbance keeps what its flaws need)."),
    rank_file: Optional[Path] = typer.Option(None, "--rank", help="Reuse a saved rank result instead of running the ablation.",
                                             callback=existing_file("--rank")),
    no_parts: bool = typer.Option(False, "--no-parts", help="Skip Part 2 (capacity), Part 3 (pool) and the follow-ups "
                                  "that need runs of their own (canary; alerts when --rank is reused)."),
    canary_file: Optional[Path] = typer.Option(None, "--canary", help="Reuse a saved `harness canary` result for the "
                                               "canary follow-up.", callback=existing_file("--canary")),
    canary_seeds: Optional[int] = typer.Option(None, "--canary-seeds", help="Seeds a canary plan and day for the canary "
                                               "follow-up (default 1 with --quick, else 5; 0 skips it).",
                                               callback=bounded("--canary-seeds", ge=0, le=100)),
    seed: int = SEED,
    seeds: int = SEEDS,
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    scale: Optional[float] = typer.Option(None, "--scale", help="A framework target (litserve, ray-serve, bentoml), "
                                          "reviewed live: shrink rates and fleet together, 0 < S <= 1.",
                                          callback=bounded("--scale", gt=0, le=1)),
    duration: Optional[float] = typer.Option(None, "--duration", help="A framework target reviewed live: cut every "
                                             "bad day to its first S seconds (a quick look) instead of keeping each "
                                             "disturbance whole.", callback=bounded("--duration", gt=0, unit=" s")),
    warmup: Optional[float] = WARMUP,
    flaw: Optional[List[str]] = typer.Option(None, "--flaw", help="A framework target reviewed live: only this "
                                             "declared flaw (repeatable; default: every one it has)."),
    no_cache: bool = NO_CACHE,
) -> None:
    """The design-review demo: each doc item's flaw, experiment, cost, fix and gain, then the ranking.
    A framework target (litserve, ray-serve, bentoml) is reviewed live: each flaw it declares, on the bad
    days that expose it, as given and with the knob that fixes it."""
    from harness.cli.applies import Kind, Mode, Where, check
    from targets.frameworks import framework_name

    framework = bool(design and framework_name(design))
    check("review", Where(Kind.FRAMEWORK, Mode.LIVE) if framework else Where(Kind.DESIGN, Mode.SIM), review,
          dict(locals()))  # --scale: a framework's review only
    if design and framework_name(design):
        from harness.cli.frameworks import review_framework_cmd

        return review_framework_cmd(design, seed, scale, warmup, as_json, out_path, quiet, duration, flaw)
    jobs = sim_jobs(executor, n_jobs, no_cache)
    from harness.analysis.review import check_design, default_parts
    from harness.analysis.review import review as run_review

    saved: RankResult | None = None
    saved_canary: CanaryResult | None = None
    if rank_file is not None and seeds > 1:
        fail("--seeds runs the ablation under each seed; --rank reuses a saved one: give one of them")
    try:
        if design:
            check_design(design)
        if rank_file is not None:
            loaded = load_result(rank_file)
            if not isinstance(loaded, RankResult):
                fail(f"{rank_file}: not a rank result (kind '{loaded.kind}')")
            saved = loaded
        if canary_file is not None:
            loaded = load_result(canary_file)
            if not isinstance(loaded, CanaryResult):
                fail(f"{canary_file}: not a canary result (kind '{loaded.kind}')")
            saved_canary = loaded
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    parts = [] if no_parts else default_parts(seed, jobs)
    with _runs_progress(quiet or as_json) as callbacks:
        on_planned, on_done = callbacks()
        n_canary = canary_seeds if canary_seeds is not None else (0 if no_parts else (1 if quick else 5))
        result = run_review(design, quick, seed, jobs, parts, saved, on_done=on_done, on_planned=on_planned,
                            seeds=seeds_from(seed, seeds), alerts=saved is None or not no_parts,
                            canary_seeds=n_canary, canary=saved_canary)
    result = cache_noted(result, jobs)
    publish(result, out_path or results.default_path("review", design or "naive"), html, as_json)


def gate(
    gate_file: Path = typer.Argument(..., help="Gate file (TOML; format: harness/gate/file.py, example harness/gate/ci.toml).",
                                     callback=existing_file("GATE_FILE")),
    target: Optional[str] = typer.Option(None, "--target", help="Replace the target under test (wherever the file names it; never a paired gate's reference)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Result file (gate, run, compare or rank) the 'baseline' checks compare with.",
                                            callback=existing_file("--baseline")),
    results_: Optional[List[Path]] = typer.Option(None, "--results", help="Judge these saved runs (run or compare results, live or sim; sweep results for sweep gates, canary results for canary gates; repeatable) instead of running sim.",
                                                  callback=existing_file("--results")),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write a JUnit XML report here.", callback=writable_file("--junit")),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown report here.",
                                            callback=writable_file("--markdown")),
    seeds: Optional[int] = typer.Option(None, "--seeds", help="sim: run every scenario under seeds SEED..SEED+N-1 "
                                        "(default: the file's `seeds`, else 1); checks read the mean or a bound of "
                                        "the 95% interval, baseline checks test for a significant regression.",
                                        callback=bounded("--seeds", ge=1, le=100)),
    n_jobs: Optional[int] = JOBS,
    executor: str = EXECUTOR,
    allow_remote: bool = ALLOW_REMOTE,
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    html: Optional[Path] = HTML,
    no_cache: bool = NO_CACHE,
) -> None:
    """CI performance gate: run the gate file's scenarios (sim, seeded) or judge saved runs (--results);
    a file of llm gates drives an OpenAI-compatible endpoint live (--target URL replaces it).
    Exit 0 pass, 1 violation, 2 bad file or cannot judge (an invalid live run, an endpoint not reached)."""
    jobs = sim_jobs(executor, n_jobs, no_cache)
    from harness.gate.check import run_gate
    from harness.gate.llm import has_llm_gates

    try:
        base = load_result(baseline) if baseline is not None else None
        given = [load_result(f) for f in results_ or []]
        if has_llm_gates(gate_file):
            from harness.cli.applies import Kind, Mode, Where, check
            from harness.cli.llm_url import gate_llm_url

            check("gate", Where(Kind.LLM_URL, Mode.LIVE), gate,  # --seeds, --jobs, --executor: sim only
                  {"seeds": seeds, "n_jobs": n_jobs, "executor": executor})
            result = gate_llm_url(str(gate_file), target, base, given, [str(f) for f in results_ or []],
                                  allow_remote, as_json)
        else:
            if given and seeds is not None and seeds > 1:
                fail("--seeds runs sim under each seed; --results judges saved runs: give one of them")
            result = run_gate(str(gate_file), target, base, jobs, results=given or None, seeds=seeds,
                              result_files=[str(f) for f in results_ or []])
    except (ConfigError, ValueError) as exc:
        fail(str(exc), code=2)
    for report, text in ((junit, gate_view.junit_xml), (markdown, gate_view.markdown)):
        if report is not None:
            results.write_text_atomic(report, text(result), mode=0o644)
    result = cache_noted(result, jobs)
    publish(result, out_path or results.default_path("gate", gate_file.stem), html, as_json)
    if result.cannot_judge and as_json:  # the view says it otherwise; --json keeps stdout for the document
        err.print("[bold red]CANNOT JUDGE[/] (exit 2): neither pass nor fail, a run the gate reads is invalid\n"
                  + "\n".join(f"  - {line}" for line in result.cannot_judge), highlight=False, soft_wrap=True)
    raise typer.Exit(result.exit_code)
