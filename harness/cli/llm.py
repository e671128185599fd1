"""`harness compare llm-A llm-B`: LLM batching policies over a rate sweep in sim, or served live.

`compare` hands over here when both targets are LLM policies. Options keep
their `compare` meaning: `--workload` names length mixes or trace files
(repeatable; default lognormal and sharegpt-like), `--suite` an LLM suite of
them (`workloads.llm.LLM_SUITES`: llm-bad-day), `--rate` one offered rate instead
of the sweep, `--duration` seconds of arrivals per point, `--seeds` the sweep
under each seed with intervals, `--jobs`/`--executor` where its points run, `--set`
engine knobs and cost coefficients (`targets.llm.knobs`), cost=FILE (from
`harness profile llm`), and slo_ttft_s, slo_tpot_s and attainment. An option it
cannot honour (`--scale`, `--warmup`, `--driver-procs`; live: `--seeds`, `--jobs`,
`--executor`) ends it with exit 2 naming it (harness.cli.applies' table, before it gets here).
Builds an ``LlmSweep``, calls ``harness.analysis.llm.seeds.run_sweep_seeds`` and
publishes the ``llm`` result; `--mode live` serves the tiny decoder with each policy
instead (``harness.analysis.llm.live``: each mix, default short, at `--rate`, default
4 req/s, for `--duration`, default 20 s). No arithmetic lives here.

`harness serve llm-POLICY` hands over here too (`serve_llm_cmd`): the tiny
decoder with that policy's scheduler behind the OpenAI-compatible
`/v1/completions` (``harness.live.llm_serve``), until Ctrl-C.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.analysis.llm import LlmSweep
from harness.cli.common import err, fail, publish
from harness.engine.jobs import Executor, Jobs
from harness.results import io as results
from targets.llm import LlmEngineSpec, LlmPolicy, create_scheduler, policy_names
from targets.llm.knobs import engine_with
from targets.spec import parse_value
from workloads.llm import llm_suite

__all__ = ["DEFAULT_SUITE", "compare_llm", "is_llm", "serve_llm_cmd"]

_SWEEP_KNOBS = ("slo_ttft_s", "slo_tpot_s", "attainment")
DEFAULT_SUITE = "bad-day"   # compare's --suite default: for LLM policies, the default mixes
LIVE_MIX = "short"          # --mode live: the mix the tiny decoder's context takes...
LIVE_RATE_RPS = 4.0         # ...at this rate...
LIVE_DURATION_S = 20.0      # ...for this many seconds of arrivals, unless given
_COST_FILE = "cost"  # --set cost=FILE: the step cost `harness profile llm` fitted


def is_llm(spec: str) -> bool:
    return spec.startswith("llm-")


def _split_set(pairs: list[str]) -> tuple[dict[str, str], dict[str, float]]:
    engine, sweep = {}, {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"--set '{pair}' is not KEY=VALUE")
        if key == _COST_FILE:
            engine[key] = raw
        elif key in _SWEEP_KNOBS:
            value = parse_value(raw)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                fail(f"--set {key}: expected a number > 0, got {raw!r}")
            sweep[key] = float(value)
        else:
            engine[key] = raw
    return engine, sweep


def compare_llm(a: str, b: str, workload: list[str] | None, suite: str, seed: int, seeds: int, duration: float | None,
                rate: float | None, set_: list[str] | None, n_jobs: int | None, executor: str, as_json: bool,
                out_path: Path | None, quiet: bool, mode: str, also: list[str] | None = None,
                dataset: Path | None = None, dataset_format: str | None = None, think_time: float = 0.0,
                prefix_tokens: int = 0, prefix_groups: int = 1) -> None:
    """`compare llm-A llm-B` (the options it cannot honour were refused before: harness.cli.applies).
    `--jobs` or `--executor` given: the sweep's points run there (sim). Two fleets (`llm-fleet:...`)
    go to `harness.cli.llm_fleet` (with `--dataset FILE`, in sim: that file's day)."""
    from harness.cli.llm_fleet import compare_fleets, is_fleet

    data = (dataset, dataset_format, think_time, prefix_tokens, prefix_groups)
    if is_fleet(a) or is_fleet(b):
        return compare_fleets(a, b, workload, suite, seed, seeds, duration, rate, set_,
                              Jobs(Executor(executor), n_jobs), [], as_json, out_path, quiet, mode, also or [], data)
    if data != (None, None, 0.0, 0, 1):
        fail("--dataset, --dataset-format, --think-time and --prefix-*: a sim day of a data set is a fleet's "
             "(compare llm-fleet:... llm-fleet:...; one engine's schedule carries no shared blocks)")
    if also:
        fail("--also: more fleets beside A and B; two LLM policies are compared as a pair")
    for side, spec in (("A", a), ("B", b)):
        if spec not in policy_names():
            fail(f"{side} '{spec}': LLM policies are {', '.join(policy_names())}")
    if a == b:
        fail(f"A and B are both '{a}': compare two different LLM policies")
    jobs, jobs_given = Jobs(Executor(executor), n_jobs), n_jobs is not None or executor != "process"
    if workload and suite != DEFAULT_SUITE:
        fail("--workload and --suite both name the mixes: give one of them")
    engine_knobs, sweep_knobs = _split_set(set_ or [])
    try:
        mixes = tuple(workload) if workload else (llm_suite(suite) if suite != DEFAULT_SUITE else None)
        base = LlmEngineSpec()
        if mode != "sim":
            from harness.live.llm_profile import LIVE_ENGINE

            base = LIVE_ENGINE
            mixes = mixes or (LIVE_MIX,)
        if _COST_FILE in engine_knobs:
            from harness.live.llm_profile import load_cost

            base = replace(base, cost=load_cost(engine_knobs.pop(_COST_FILE)))
        engine = engine_with(base, engine_knobs)
        for policy in (a, b):
            create_scheduler(replace(engine, policy=LlmPolicy(policy)))  # bad knob values fail here, early
        given: dict[str, Any] = dict(sweep_knobs)  # _SWEEP_KNOBS: none of the three below
        if mixes:
            given["mixes"] = mixes
        if rate is not None or mode != "sim":
            given["rates_rps"] = (rate or LIVE_RATE_RPS,)
        if duration is not None or mode != "sim":
            given["duration_s"] = duration or LIVE_DURATION_S
        sweep = LlmSweep(policies=(a, b), seed=seed, engine=engine, **given)
    except ValueError as exc:
        fail(str(exc))
    show = not (quiet or as_json) and err.is_terminal
    if mode != "sim":
        from harness.analysis.llm.live import live_compare

        try:
            with err.status("llm: serving and driving the tiny decoder") as status:
                result = live_compare(sweep, on_run=(lambda what: status.update(f"llm: serving {what}")) if show
                                      else None)
        except ValueError as exc:
            fail(str(exc))
    else:
        from harness.analysis.llm.seeds import run_sweep_seeds
        from harness.analysis.stats import seeds_from

        chosen = jobs if (seeds > 1 or jobs_given) else None
        if show:
            with err.status("llm") as status:
                result = run_sweep_seeds(sweep, seeds_from(seed, seeds), chosen,
                                         on_done=lambda what: status.update(f"llm: simulated {what}"))
        else:
            result = run_sweep_seeds(sweep, seeds_from(seed, seeds), chosen)
    publish(result, out_path or results.default_path("llm", f"{a}-vs-{b}"), None, as_json)


def profile_llm_cmd(out_path: Path | None, repeats: int, threads: int | None) -> None:
    """`harness profile llm`: serve the tiny decoder, drive a calibration load, fit the step cost to the
    live engine's steps and write it for `--set cost=FILE`. (`--repeats` does not apply.)"""
    from harness.cli.common import out
    from harness.live.llm_profile import profile_llm

    with err.status("profile llm: serving and driving the tiny decoder (20 s)"):
        try:
            prof = profile_llm(threads=threads)
        except ValueError as exc:
            fail(str(exc))
    path = out_path or Path("runs") / "costs-llm-cpu.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.to_json(path)
    c = prof.cost
    out.print(f"tiny decoder, torch {prof.torch}, {prof.threads} threads, {len(prof.rows)} live steps: step = "
              f"{c.base_s * 1000:.3f} ms + {c.per_prefill_token_s * 1e6:.1f} us/prefill token + "
              f"{c.per_decode_seq_s * 1e6:.1f} us/decode row + {c.per_context_token_s * 1e9:.1f} ns/context token",
              highlight=False)
    out.print(f"front end, median of {prof.requests} requests: {c.frontend_in_s * 1000:.2f} ms from scheduled start "
              f"to the engine, {c.frontend_out_s * 1000:.2f} ms from a token made to its SSE chunk read",
              highlight=False)
    out.print(f"cost file: {path}  (use: harness compare llm-static llm-continuous --set cost={path})",
              highlight=False)


def serve_llm_cmd(policy: str, port: int, host: str, expose: bool, token: str | None, set_: list[str],
                  unused: list[str], tokenizer: str | None = None) -> None:
    """`harness serve llm-POLICY`: the tiny decoder behind /v1/completions on host:port until Ctrl-C.
    `--set` takes the engine knobs (and cost=FILE) as `compare llm-A llm-B`; `unused`: the `serve` flags
    given that an LLM target cannot honour (an exit 2 naming them)."""
    import asyncio

    from harness.cli.common import out, served_notice, until_stopped
    from harness.live.driver_loop import new_loop
    from harness.live.llm_profile import LIVE_ENGINE
    from harness.live.llm_serve import MAX_LEN, MODEL_NAME, start_llm_server
    from targets.http.limits import check_exposure

    if policy not in policy_names():
        fail(f"unknown LLM policy '{policy}': valid are {', '.join(policy_names())}")
    if unused:
        fail(f"{', '.join(unused)}: not used by an LLM target (serve {policy} takes --port, --host, --expose, "
             "--token and --set)")
    knobs: dict[str, str] = {}
    for pair in set_:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"--set '{pair}' is not KEY=VALUE")
        knobs[key] = raw
    try:
        exposed = check_exposure(host, expose)
        base = replace(LIVE_ENGINE, policy=LlmPolicy(policy))
        if _COST_FILE in knobs:
            from harness.live.llm_profile import load_cost

            base = replace(base, cost=load_cost(knobs.pop(_COST_FILE)))
        spec = engine_with(base, knobs)
        create_scheduler(spec)  # bad knob values fail here, before binding
        counter = None
        if tokenizer is not None:
            from harness.live.openai import load_tokenizer

            counter = load_tokenizer(tokenizer).count
    except ValueError as exc:
        fail(str(exc))

    async def main() -> None:
        try:
            server = await start_llm_server(spec, host, port, token=token or None, count_tokens=counter)
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc}", code=1)
        out.print(f"serving {policy} at {server.url} (and /v1/models, /metrics)\n"
                  f"  the tiny decoder (model \"{MODEL_NAME}\", {MAX_LEN} tokens of context) on the CPU, "
                  f"{spec.max_seqs if policy == LlmPolicy.CONTINUOUS.value else spec.batch_size} sequences at "
                  "most per step\n"
                  '  body: OpenAI completions {"model", "prompt" (text or token ids), "max_tokens", "stream"?, '
                  '"user"?}; Ctrl-C stops', highlight=False, soft_wrap=True)
        served_notice(exposed, host, server.port, "/v1/completions and /v1/models", "every /v1/ path",
                      token)
        try:
            await until_stopped()
        finally:
            await server.close()
        out.print("stopped", highlight=False)

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
