"""LLM URL targets on the command line: `run URL`, `compare URL_A URL_B` and `sweep URL` for any
OpenAI-compatible server (`/v1/completions` or `/v1/chat/completions`, streaming).

Parses options into a `harness.live.openai.UrlTarget` and an `LlmSweep` (mixes, rates,
duration, seed, SLO) and calls ``harness.analysis.llm.url``; no arithmetic lives here.
`--set` takes the SLO keys (slo_ttft_s, slo_tpot_s, attainment) and the URL knobs
(`harness.live.openai.URL_KNOBS`). An option given that an LLM URL cannot honour was refused
before (exit 2 naming it: `harness.cli.applies`). A server that cannot be reached or refuses the
probe request ends it with exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import typer

from harness.cli.common import err, fail, out, publish
from harness.results import io as results

__all__ = ["DEFAULT_MIX", "DEFAULT_RATE_RPS", "DEFAULT_RUN_S", "DEFAULT_STEP_S", "URL_RATES", "compare_llm_urls",
           "gate_llm_url", "run_llm_url", "sweep_llm_url", "sweep_llm_url_concurrency"]

DEFAULT_MIX = "short"              # fits a small model's context (the tiny decoder's 512 tokens)
DEFAULT_RATE_RPS = 2.0             # `run URL` without --rate
DEFAULT_RUN_S = 20.0               # `run URL` without --duration: seconds of arrivals
URL_RATES = (2.0, 4.0, 8.0)        # `compare URL_A URL_B` without --rate: each side at each rate
DEFAULT_COMPARE_S = 10.0           # ... for this many seconds of arrivals each
DEFAULT_STEP_S = 10.0              # `sweep URL`: seconds of arrivals per step
DEFAULT_START_RPS = 1.0
_SLO_KEYS = ("slo_ttft_s", "slo_tpot_s", "attainment")


Extras = tuple[bool, str | None, str | None]   # (--server-metrics, --server-metrics-url, --tokenizer)
NO_EXTRAS: Extras = (False, None, None)


def _target(url: str, allow_remote: bool, model: str | None, api_key_env: str, template: Path | None,
            set_: list[str] | None, extras: Extras = NO_EXTRAS) -> tuple[Any, dict[str, float]]:
    from harness.live.openai import UrlTarget

    knobs: dict[str, str] = {}
    slo: dict[str, float] = {}
    for pair in set_ or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"--set '{pair}' is not KEY=VALUE")
        if key in _SLO_KEYS:
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if not value > 0 or (key == "attainment" and value > 1):
                fail(f"--set {key}: expected a number > 0{' and <= 1' if key == 'attainment' else ''}, got {raw!r}")
            slo[key] = value
        else:
            knobs[key] = raw
    try:
        text = template.read_text() if template is not None else None
        target = UrlTarget.parse(url, allow_remote, model, api_key_env, text, knobs)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        fail(str(exc))
    return _with_extras(target, allow_remote, extras), slo


def _with_extras(target: Any, allow_remote: bool, extras: Extras) -> Any:
    """The target with --server-metrics (its own /metrics, or --server-metrics-url) and --tokenizer
    (loaded once here, so a path that is not a tokenizer ends it before anything is sent)."""
    from dataclasses import replace

    from harness.live.openai import load_tokenizer
    from harness.live.plan import parse_url

    scrape, scrape_url, tokenizer = extras
    if scrape_url is not None and not scrape:
        fail("--server-metrics-url needs --server-metrics")
    if scrape:
        if scrape_url is not None:
            try:
                parse_url(scrape_url, allow_remote)
            except ValueError as exc:
                fail(f"--server-metrics-url: {exc}")
        target = replace(target, server_metrics_url=scrape_url or target.metrics_url)
    if tokenizer is not None:
        if target.tokenizer is not None:
            fail("--tokenizer and --set tokenizer= both name a tokenizer: give one of them")
        try:
            load_tokenizer(tokenizer)
        except ValueError as exc:
            fail(str(exc))
        target = replace(target, tokenizer=tokenizer)
    return target


def _plan(labels: tuple[str, ...], mixes: list[str] | None, rates: tuple[float, ...], duration_s: float, seed: int,
          slo: dict[str, Any]) -> Any:
    from harness.analysis.llm import LlmSweep

    try:
        return LlmSweep(policies=labels, mixes=tuple(mixes or [DEFAULT_MIX]), rates_rps=rates, duration_s=duration_s,
                        seed=seed, **slo)
    except ValueError as exc:
        fail(str(exc))


def _drive(what: str, quiet: bool, work: Callable[[Callable[[str], None] | None], Any]) -> Any:
    from harness.live.openai.run import ProbeFailed

    show = not quiet and err.is_terminal
    try:
        if show:
            with err.status(what) as status:
                return work(lambda text: status.update(f"{what}: {text}"))
        return work(None)
    except ProbeFailed as exc:
        fail(str(exc), code=1)
    except ValueError as exc:
        fail(str(exc))


def run_llm_url(target: str, workload: str | None, seed: int, duration: float | None, rate: float | None,
                set_: list[str] | None, model: str | None, api_key_env: str, template: Path | None,
                allow_remote: bool, as_json: bool, out_path: Path | None, quiet: bool, dataset: Path | None = None,
                dataset_format: str | None = None, concurrency: int | None = None,
                max_concurrency: int | None = None, think_time: float = 0.0, prefix_tokens: int = 0,
                prefix_groups: int = 1, server_metrics: bool = False, server_metrics_url: str | None = None,
                tokenizer: str | None = None, driver_procs: int = 1, executor: str = "process") -> None:
    """`harness run URL -w MIX`: one run at `rate` (default DEFAULT_RATE_RPS) for `duration` s; with
    a data set, a load mode or `--driver-procs N` (`llm_traffic.traffic_of`), that traffic."""
    from harness.analysis.llm.traffic import traffic_url_run
    from harness.analysis.llm.url import url_run
    from harness.cli.llm_traffic import traffic_of, workload_file

    workload, o = workload_file(workload, dict(
        rate=rate, duration=duration, dataset=dataset, dataset_format=dataset_format, concurrency=concurrency,
        max_concurrency=max_concurrency, think_time=think_time, prefix_tokens=prefix_tokens,
        prefix_groups=prefix_groups))
    rate, duration, dataset, dataset_format, concurrency, max_concurrency, think_time, prefix_tokens, \
        prefix_groups = o.values()
    traffic = traffic_of(dataset, dataset_format, rate, concurrency, max_concurrency, think_time, DEFAULT_RATE_RPS,
                         prefix_tokens, prefix_groups, driver_procs, executor)

    url, slo = _target(target, allow_remote, model, api_key_env, template, set_,
                       (server_metrics, server_metrics_url, tokenizer))
    sweep = _plan((url.label,), [workload] if workload else None, (rate or DEFAULT_RATE_RPS,),
                  duration or DEFAULT_RUN_S, seed, slo)
    result = _drive(f"llm: driving {url.label}", quiet or as_json,
                    lambda on: url_run(url, sweep, on) if traffic is None else traffic_url_run(url, sweep, traffic))
    publish(result, out_path or results.default_path("llm", f"run-{_file_label(url.label)}"), None, as_json)


def compare_llm_urls(a: str, b: str, workload: list[str] | None, suite: str, seed: int, duration: float | None,
                     rate: float | None, set_: list[str] | None, model: str | None, api_key_env: str,
                     template: Path | None, allow_remote: bool, as_json: bool, out_path: Path | None,
                     quiet: bool, dataset: Path | None = None, dataset_format: str | None = None,
                     concurrency: int | None = None, max_concurrency: int | None = None,
                     think_time: float = 0.0, prefix_tokens: int = 0, prefix_groups: int = 1,
                     server_metrics: bool = False, server_metrics_url: str | None = None,
                     tokenizer: str | None = None, driver_procs: int = 1, executor: str = "process") -> None:
    """`harness compare URL_A URL_B`: both on the same arrivals at each rate (default URL_RATES,
    DEFAULT_COMPARE_S s each) of each mix (-w, or an LLM suite: `--suite llm-bad-day`), B's capacity
    at the SLO against A's; with a data set, a load mode or `--driver-procs N` (`llm_traffic.traffic_of`),
    that traffic (each side's runs over N driver processes, or Ray actors with `--executor ray`)."""
    from harness.analysis.llm.traffic import traffic_url_compare
    from harness.analysis.llm.url import url_compare
    from harness.cli.llm_traffic import traffic_of, workload_file
    from harness.cli.llm import DEFAULT_SUITE
    from workloads.llm import llm_suite
    from workloads.llm_file import is_llm_workload_file

    workloads = workload
    if any(is_llm_workload_file(w) for w in workload or []):
        if len(workload or []) > 1:
            fail("--workload FILE.toml names the whole traffic of a compare of LLM URLs: give it alone")
        mix, o = workload_file((workload or [""])[0], dict(
            rate=rate, duration=duration, dataset=dataset, dataset_format=dataset_format, concurrency=concurrency,
            max_concurrency=max_concurrency, think_time=think_time, prefix_tokens=prefix_tokens,
            prefix_groups=prefix_groups))
        workloads = [mix] if mix else None
        rate, duration, dataset, dataset_format, concurrency, max_concurrency, think_time, prefix_tokens, \
            prefix_groups = o.values()
    if suite != DEFAULT_SUITE:
        if workloads:
            fail("--workload and --suite both name the mixes: give one of them")
        try:
            workloads = list(llm_suite(suite))
        except ValueError as exc:
            fail(str(exc))

    if server_metrics_url is not None:
        fail("--server-metrics-url names one server: a compare scrapes each side's own /metrics")
    extras = (server_metrics, None, tokenizer)
    ta, slo = _target(a, allow_remote, model, api_key_env, template, set_, extras)
    tb, _ = _target(b, allow_remote, model, api_key_env, template, set_, extras)
    if ta.url == tb.url:
        fail(f"A and B are both '{a}': compare two different servers")
    same_path = ta.path == tb.path
    labels = (f"A {ta.host}:{ta.port}" if same_path else f"A {ta.label}",
              f"B {tb.host}:{tb.port}" if same_path else f"B {tb.label}")
    sweep = _plan(labels, workloads, (rate,) if rate else URL_RATES, duration or DEFAULT_COMPARE_S, seed, slo)
    traffic = traffic_of(dataset, dataset_format, rate, concurrency, max_concurrency, think_time, URL_RATES[0],
                         prefix_tokens, prefix_groups, driver_procs, executor)
    result = _drive("llm: driving A then B", quiet or as_json,
                    lambda on: url_compare([ta, tb], sweep, on) if traffic is None
                    else traffic_url_compare([ta, tb], sweep, traffic, on))
    publish(result, out_path or results.default_path("llm", f"{_file_label(ta.label)}-vs-{_file_label(tb.label)}"),
            None, as_json)


def sweep_llm_url(url: str, workload: str | None, seed: int, start_rps: float | None, step_s: float | None,
                  rel_tol: float, attainment: float, set_: list[str] | None, model: str | None, api_key_env: str,
                  template: Path | None, allow_remote: bool, as_json: bool, out_path: Path | None, quiet: bool,
                  html: Path | None, search: Callable[[float, float], Any], checks: list[str] | None = None,
                  extras: Extras = NO_EXTRAS, driver_procs: int = 1, executor: str = "process") -> None:
    """`harness sweep URL`: the highest rate within the TTFT + TPOT SLO (`attainment`: --min-goodput);
    `checks` (--check) judge its knee as the request-level sweep's are (exit 1 when one fails);
    `driver_procs` over 1: each step's length mix sent as traffic over that many processes (Ray actors
    with `executor` "ray")."""
    from harness.analysis.llm.traffic import traffic_url_rate_sweep
    from harness.analysis.llm.url import url_sweep
    from harness.cli.llm_traffic import traffic_of
    from harness.gate.sweep import judge_sweep_checks, parse_sweep_checks
    from workloads.loader import ConfigError

    try:
        parsed = parse_sweep_checks(checks or [])
    except ConfigError as exc:
        fail(str(exc))
    target, slo = _target(url, allow_remote, model, api_key_env, template, set_, extras)
    slo.setdefault("attainment", attainment)
    start = start_rps or DEFAULT_START_RPS
    sweep = _plan((target.label,), [workload] if workload else None, (start,), step_s or DEFAULT_STEP_S, seed, slo)
    traffic = traffic_of(None, None, start, None, None, 0.0, start, driver_procs=driver_procs, executor=executor)

    def shown(run: Any) -> None:
        if not (quiet or as_json):
            met = run.slo_attainment >= sweep.attainment
            err.print(f"  {run.rate_rps:g} req/s: {run.slo_attainment:.0%} within the SLO, TTFT p90 "
                      f"{(run.ttft_s.p90 or 0) * 1000:,.0f} ms, TPOT p90 {(run.tpot_s.p90 or 0) * 1000:,.1f} ms: "
                      f"{'pass' if met else 'fail'}", highlight=False)

    result = _drive(f"sweep: driving {target.label}", True,
                    lambda _on: url_sweep(target, sweep, search(start, rel_tol), start, rel_tol, shown)
                    if traffic is None else
                    traffic_url_rate_sweep(target, sweep, traffic, search(start, rel_tol), start, rel_tol, shown))
    publish(result, out_path or results.default_path("llm", f"sweep-{_file_label(target.label)}"), html, as_json)
    outcomes = judge_sweep_checks(result.search, parsed) if parsed else []
    for o in outcomes:
        if not as_json:
            out.print(f"{o.status}: {o.check} ({o.note})", highlight=False)
    if any(not o.passed for o in outcomes):
        raise typer.Exit(1)


def sweep_llm_url_concurrency(url: str, workload: str | None, seed: int, step_s: float | None, set_: list[str] | None,
                              model: str | None, api_key_env: str, template: Path | None, allow_remote: bool,
                              as_json: bool, out_path: Path | None, quiet: bool, html: Path | None, traffic: Any,
                              levels: list[int], extras: Extras = NO_EXTRAS) -> None:
    """`harness sweep URL --concurrency 1,2,4,...`: each level closed loop for `step_s` s, and the knee."""
    from harness.analysis.llm.traffic import traffic_url_sweep

    target, slo = _target(url, allow_remote, model, api_key_env, template, set_, extras)
    sweep = _plan((target.label,), [workload] if workload else None, (1.0,), step_s or DEFAULT_STEP_S, seed, slo)

    def shown(run: Any) -> None:
        if not (quiet or as_json) and run.traffic is not None:
            err.print(f"  concurrency {run.traffic.concurrency}: {run.traffic.requests_per_s:.2f} req/s, TTFT p50 "
                      f"{(run.ttft_s.p50 or 0) * 1000:,.0f} ms, E2E p50 {(run.e2e_s.p50 or 0) * 1000:,.0f} ms",
                      highlight=False)

    result = _drive(f"sweep: driving {target.label}", True,
                    lambda _on: traffic_url_sweep(target, sweep, traffic, levels, shown))
    publish(result, out_path or results.default_path("llm", f"sweep-{_file_label(target.label)}"), html, as_json)


def gate_llm_url(gate_file: str, target: str | None, baseline: Any, given: list[Any], result_files: list[str],
                 allow_remote: bool, quiet: bool) -> Any:
    """`harness gate FILE` of [[llm]] gates: each endpoint driven live (or the saved runs `given`
    judged), the gate result (`harness.gate.llm.run_llm_gate`); the caller publishes it."""
    from harness.gate.llm import run_llm_gate

    def work(on: Callable[[str], None] | None) -> Any:
        return run_llm_gate(gate_file, target, baseline, given or None, result_files, allow_remote, on)
    return _drive("gate: driving", quiet, work)


def _file_label(label: str) -> str:
    return label.replace("/", "_").replace(":", "_")
