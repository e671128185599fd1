"""`harness compare llm-fleet:... llm-fleet:...`: two fleets of LLM replicas behind routers, in sim.

`compare` hands over here when both targets are fleets (`targets.llm.fleet`). Options
keep their `compare` meaning: `--workload` names days (`workloads.llm_days.FLEET_DAYS`,
repeatable; default chat), `--suite llm-bad-day` the fleet's bad days, `--rate` one
offered rate (requests/s) for every day instead of each day's own, `--duration` seconds
of each day, `--jobs`/`--executor` where the runs go, and `--set` engine knobs for
both sides (a side's own `KEY=VALUE` wins) and slo_ttft_s, slo_tpot_s; `--also` more fleets
beside A and B (all four routers side by side: A, B and two `--also`), ranked with them, the
verdicts staying B against A. An option it
cannot honour (`--seeds`, `--scale`, ...) ends it with exit 2 naming it.
Builds a ``FleetCompare``, calls ``harness.analysis.llm.fleet.run_fleets`` and publishes
the ``fleet`` result. No arithmetic lives here.

`--mode live` serves each fleet on loopback in turn (its replicas of the tiny decoder and
its router: any sim router, or `router=sglang:POLICY` or `router=vllm:POLICY`) and drives the live chat day
against each (`harness.analysis.llm.fleet_live`): `--rate` and `--duration` size the day
(its own 4 req/s for 30 s by default), `--set cost=FILE` (from `harness profile llm`) prices
the sim run beside each live one, and the day is the chat day only.

`--dataset FILE` (sim; with `--dataset-format`, `--think-time`, `--prefix-tokens`, `--prefix-groups`)
makes the file's conversations the day (`harness.analysis.llm.fleet.dataset_day`): the conversations
and shared prefixes a live `run URL --dataset FILE` sends, as blocks the replicas' prefix caches see.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli.common import err, fail, publish
from harness.engine.jobs import Jobs
from harness.results import io as results
from targets.llm import LlmEngineSpec
from targets.llm.fleet import is_fleet, parse_fleet
from targets.llm.knobs import engine_with
from workloads.llm_days import FLEET_SUITES, fleet_suite

__all__ = ["compare_fleets", "is_fleet"]

_SLO_KNOBS = ("slo_ttft_s", "slo_tpot_s")
_COST_FILE = "cost"  # --set cost=FILE (live): the step cost `harness profile llm` fitted, for the sim beside
DEFAULT_SUITE = "bad-day"  # compare's --suite default: for fleets, the chat day
DataDay = tuple[Path | None, str | None, float, int, int]   # --dataset, --dataset-format, --think-time, --prefix-*


def compare_fleets(a: str, b: str, workload: list[str] | None, suite: str, seed: int, seeds: int,
                   duration: float | None, rate: float | None, set_: list[str] | None, jobs: Jobs, unused: list[str],
                   as_json: bool, out_path: Path | None, quiet: bool, mode: str, also: list[str] | None = None,
                   data: DataDay | None = None) -> None:
    """`data`: (--dataset, --dataset-format, --think-time, --prefix-tokens, --prefix-groups), the day
    a data set file's conversations (sim only; `harness.analysis.llm.fleet.dataset_day`)."""
    from harness.analysis.llm.fleet import FleetCompare, run_fleets

    more = list(also or [])
    for side, spec in (("A", a), ("B", b), *(("--also", x) for x in more)):
        if not is_fleet(spec):
            fail(f"{side} '{spec}': compare a fleet with a fleet (llm-fleet:router=...,replicas=...)")
    unused = unused + [flag for flag, given in (("--seeds", seeds > 1),) if given]
    if unused:
        fail(f"{', '.join(unused)}: not used by a compare of LLM fleets (one seed)")
    if workload and suite != DEFAULT_SUITE:
        fail("--workload and --suite both name the days: give one of them")
    engine: dict[str, str] = {}
    slo: dict[str, float] = {}
    cost_file: str | None = None
    for pair in set_ or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"--set '{pair}' is not KEY=VALUE")
        if key == _COST_FILE:
            if mode == "sim":
                fail("--set cost=FILE: a sim compare of fleets takes the cost knobs themselves (base_s=..., "
                     "frontend_in_s=...); the file prices the sim beside a --mode live compare")
            cost_file = raw
        elif key in _SLO_KNOBS:
            try:
                slo[key] = float(raw)
            except ValueError:
                fail(f"--set {key}: expected a number > 0, got {raw!r}")
            if not slo[key] > 0:
                fail(f"--set {key}: expected a number > 0, got {raw!r}")
        else:
            engine[key] = raw
    traffic: dict[str, Any] = {}
    if data is not None:
        traffic = _data_day(data, workload, suite)
    if mode != "sim":
        return _compare_live(a, b, more, workload, suite, seed, duration, rate, engine, slo, cost_file, as_json,
                             out_path, quiet)
    try:
        if suite != DEFAULT_SUITE and suite not in FLEET_SUITES:
            fail(f"unknown fleet suite '{suite}': valid are {', '.join(FLEET_SUITES)}")
        days = tuple(workload) if workload else (fleet_suite(suite) if suite != DEFAULT_SUITE else ("chat",))
        if traffic:
            days = (traffic["dataset"],)
        base = engine_with(LlmEngineSpec(prefix_caching=True), engine)
        fleets = tuple(parse_fleet(x, base) for x in (a, b, *more))
        if fleets[0].name == fleets[1].name:
            fail(f"A and B are both '{a}': compare two different fleets")
        names = [f.name for f in fleets]
        twice = next((x for x in names if names.count(x) > 1), None)
        if twice is not None:
            fail(f"--also: '{twice}' is given twice: each fleet once")
        keys: dict[str, Any] = {**slo, **traffic}
        compare = FleetCompare(fleets=fleets, days=days, rate_rps=rate, duration_s=duration, seed=seed, **keys)
    except ValueError as exc:
        fail(str(exc))
    if not (quiet or as_json) and err.is_terminal:
        with err.status("fleet") as status:
            result = run_fleets(compare, jobs, on_done=lambda what: status.update(f"fleet: simulated {what}"))
    else:
        result = run_fleets(compare, jobs)
    publish(result, out_path or results.default_path("fleet", f"{a}-vs-{b}"), None, as_json)


def _data_day(data: DataDay, workload: list[str] | None, suite: str) -> dict[str, Any]:
    """The FleetCompare keys of a data set's day, the file read once here (exit 2 naming file and line);
    sim only (a live compare was refused before: harness.cli.applies)."""
    from workloads.datasets import load_dataset

    dataset, fmt, think_s, prefix_tokens, prefix_groups = data
    if dataset is None:
        if fmt is not None or think_s or prefix_tokens or prefix_groups != 1:
            fail("--dataset-format, --think-time, --prefix-tokens and --prefix-groups of a compare of LLM fleets "
                 "shape a data set's day: give --dataset FILE too")
        return {}
    if workload or suite != DEFAULT_SUITE:
        fail("--dataset is the day of this compare: give it without --workload or --suite")
    if prefix_groups != 1 and not prefix_tokens:
        fail("--prefix-groups counts shared system prompts: give --prefix-tokens N too")
    try:
        load_dataset(str(dataset), fmt, think_s)
    except ValueError as exc:
        fail(str(exc))
    return {"dataset": str(dataset), "dataset_format": fmt, "think_time_s": think_s, "prefix_tokens": prefix_tokens,
            "prefix_groups": prefix_groups}


def _with_knobs(spec: str, engine: dict[str, str]) -> str:
    """`spec` with --set's engine knobs put first (the side's own KEY=VALUE, later, wins)."""
    head, _, rest = spec.partition(":")
    pairs = [f"{k}={v}" for k, v in engine.items()] + [p for p in rest.split(",") if p]
    return head + (":" + ",".join(pairs) if pairs else "")


def _compare_live(a: str, b: str, more: list[str], workload: list[str] | None, suite: str, seed: int,
                  duration: float | None, rate: float | None, engine: dict[str, str], slo: dict[str, float],
                  cost_file: str | None, as_json: bool, out_path: Path | None, quiet: bool) -> None:
    from dataclasses import replace

    from harness.analysis.llm.fleet_live import LIVE_DAY, LiveFleetCompare, run_live_fleets
    from harness.live.llm_fleet_drive import LIVE_CHAT
    from harness.live.llm_fleet_external import EXTERNAL_ROUTERS, external_available
    from harness.live.llm_fleet_serve import parse_live_fleet
    from harness.live.llm_profile import load_cost

    if suite != DEFAULT_SUITE:
        fail(f"--suite {suite}: a live compare of fleets drives the {LIVE_DAY} day only (sized for the tiny decoder)")
    if workload and any(w != LIVE_DAY for w in workload):
        bad = next(w for w in workload if w != LIVE_DAY)
        fail(f"--workload {bad}: a live compare of fleets drives the {LIVE_DAY} day only (sized for the tiny "
             "decoder's 512 tokens)")
    try:
        fleets = tuple(replace(parse_live_fleet(_with_knobs(x, engine)), label=x) for x in (a, b, *more))
        if fleets[0].fleet == fleets[1].fleet and fleets[0].router_name == fleets[1].router_name:
            fail(f"A and B are both '{a}': compare two different fleets")
        names = [f.label for f in fleets]
        twice = next((x for x in names if names.count(x) > 1), None)
        if twice is not None:
            fail(f"--also: '{twice}' is given twice: each fleet once")
        missing = next((f.external for f in fleets if f.external and not external_available(f.external)), None)
        if missing is not None:
            fail(f"router={missing}:... needs {missing}-router: {EXTERNAL_ROUTERS[missing].install}")
        cost = load_cost(cost_file) if cost_file is not None else None
        compare = LiveFleetCompare(fleets=fleets, rate_rps=rate or LIVE_CHAT.rate_rps,
                                   duration_s=duration or LIVE_CHAT.duration_s, seed=seed, cost=cost,
                                   slo_ttft_s=slo.get("slo_ttft_s", 2.0), slo_tpot_s=slo.get("slo_tpot_s", 0.1))
    except ValueError as exc:
        fail(str(exc))
    try:
        if not (quiet or as_json) and err.is_terminal:
            with err.status("fleet live") as status:
                result = run_live_fleets(compare, on_run=lambda what: status.update(f"fleet live: {what}"))
        else:
            result = run_live_fleets(compare)
    except ValueError as exc:
        fail(str(exc))
    except (OSError, RuntimeError) as exc:
        fail(str(exc), code=1)
    publish(result, out_path or results.default_path("fleet", f"{a}-vs-{b}-live"), None, as_json)
