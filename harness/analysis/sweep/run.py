"""`harness sweep`: the highest offered rate a target serves within its SLO, found by search.

A sweep runs a target (sim, a live host, or a URL) under constant Poisson
traffic at one rate per step (``sweep.steps``), each step stopped as soon as
it has certainly failed (an invalid live step is run again, up to twice, and
the search stops on a rate invalid in every try; a valid live failure is run
again once, and the rate fails only when it fails every time: ``sweep.repeat``), and lets ``sweep.search.RateSearch`` choose the next
rate: gallop from the target's design peak, then bisect to ``rel_tol``. A step
passes when at least ``min_ratio`` of its unique requests answer within the
SLO (requests never answered count as late): the same verdict as
`harness capacity`'s p99 <= SLO, so on sim targets the two agree, which a
``capacity_check`` checks by asking capacity's own search for the fleet it would
buy at the swept rate (the CLI's --check-capacity passes
``harness.analysis.capacity.capacity_agreement``: features do not import each other).

The result (``harness.results.sweep.SweepResult``) holds every step (the curve
of goodput and p99 against offered rate), ``max_rate_within_slo`` (the knee) and
``first_failing_rate``; ``inconclusive`` when it stopped on invalid steps with no
valid knee below them. ``repeats > 1`` runs the whole search again and again and
keeps every search, with the knee's spread.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

from harness.analysis.sweep.repeat import MAX_RETRIES, inconclusive, knee_spread, median_repeat, search_with_retries
from harness.analysis.sweep.search import RateSearch
from harness.analysis.sweep.steps import SWEEP_LIMITS, StepRunner, live_step, sim_step
from harness.analysis.traffic import QUICK_PROBE
from harness.results.sweep import CapacityAgreement, SweepRepeat, SweepResult, SweepStep
from targets.config import TargetConfig
from targets.spec import resolve_target

__all__ = ["CapacityCheck", "run_sweep", "step_duration_s"]

OnStep = Callable[[SweepStep], None]
OnRepeat = Callable[[int, int], None]  # (repeat, of N), before each search of a --repeats N sweep
# The fleet `harness capacity` buys for (config, swept rate in req/s, seed).
CapacityCheck = Callable[[TargetConfig, float, int], CapacityAgreement]
MAX_REPEATS = 20
CONFIRM_FAILURES = 1  # live: a valid failing step is run once more before its rate is believed to fail


def step_duration_s(rate_rps: float, duration_s: float | None, slo_s: float, rel_tol: float) -> float:
    """Seconds a step runs: the given duration, else long enough to expose an overload of
    ``rel_tol``: a queue growing by rel_tol x rate for t seconds adds rel_tol x t seconds of
    wait, so after 2 x slo / rel_tol seconds it has added twice the SLO and the step fails
    (a 2 s run at 8% over capacity still looks fine). Never shorter than capacity's quick
    point at this rate (``traffic.QUICK_PROBE``: 2-5 s)."""
    if duration_s is not None:
        return duration_s
    return max(QUICK_PROBE.duration_s(rate_rps), 2 * slo_s / rel_tol)


def search(run_step: StepRunner, start_rps: float, duration_s: float | None, slo_s: float, rel_tol: float,
           on_step: OnStep | None = None, max_rps: float | None = None,
           retries: int = MAX_RETRIES, confirm: int = 0) -> list[SweepStep]:
    """Every try the search ran, in order (an invalid step re-run up to ``retries`` times, a
    valid failure up to ``confirm`` times: ``sweep.repeat.search_with_retries``)."""
    return search_with_retries(RateSearch(start_rps, rel_tol=rel_tol, max_rps=max_rps), run_step,
                               lambda rate: step_duration_s(rate, duration_s, slo_s, rel_tol), on_step, retries,
                               confirm=confirm)


def one_search(run_step: StepRunner, repeat: int, start_rps: float, duration_s: float | None, slo_s: float,
               rel_tol: float, on_step: OnStep | None, retries: int, confirm: int = 0) -> SweepRepeat:
    """One search, its knee and first (valid) failing rate above it."""
    started = time.perf_counter()
    steps = search(run_step, start_rps, duration_s, slo_s, rel_tol, on_step, retries=retries, confirm=confirm)
    ok = [s.rate_rps for s in steps if s.passed]
    bad = [s.rate_rps for s in steps if s.valid and not s.passed and (not ok or s.rate_rps > max(ok))]
    return SweepRepeat(repeat=repeat, max_rate_within_slo=max(ok) if ok else None,
                       first_failing_rate=min(bad) if bad else None, inconclusive=inconclusive(steps),
                       steps=steps, wall_s=time.perf_counter() - started)


def run_sweep(target: str, mode: str = "sim", *, overrides: dict[str, Any] | None = None, seed: int = 1,
              start_rps: float | None = None, duration_s: float | None = None, rel_tol: float = 0.05,
              min_ratio: float = 0.99, scale: float | None = None, model: str = "mlp", device: str = "auto",
              pad_to_s: float | None = None, allow_remote: bool = False, capacity_check: CapacityCheck | None = None,
              on_step: OnStep | None = None, warmup_s: float | None = None,
              send_lag_limit_s: float = SWEEP_LIMITS.send_lag_p999_s, driver_procs: int = 1,
              balancer: str = "python", repeats: int = 1, retries: int = MAX_RETRIES,
              confirm_failures: int = CONFIRM_FAILURES, on_repeat: OnRepeat | None = None) -> SweepResult:
    """Sweep ``target`` (a spec, TOML file or http URL) in ``mode`` ("sim" or "live").

    ``start_rps`` defaults to the target's peak (live: as scaled for this machine).
    ``capacity_check`` (sim only) adds `harness capacity`'s fleet at the swept rate
    (``harness.analysis.capacity.capacity_agreement``).
    ``warmup_s`` (live only; None: harness.live.warmup's default): warm-up traffic at each
    step's rate before the step's clock starts, left out of its figures.
    ``send_lag_limit_s`` (live only): a step whose send lag p99.9 is over it is invalid, as is
    one with over 1% of its sends over 10 ms late (``harness.live.validity.driver_behind``).
    ``driver_procs`` (live only): driver processes each step's schedule is split over.
    ``balancer`` (live only): "python" (the project's proxy) or "haproxy" in front of the API servers.
    ``repeats`` (live only): run the whole search this many times; the result's knee and steps
    are the median repeat's, ``repeats`` keeps every one and ``knee_spread`` their spread.
    ``retries``: how many times an invalid step is run again before the search stops on it.
    ``confirm_failures`` (live only; a sim step under one seed fails the same way every time):
    how many times a valid failing step is run again; its rate fails only if every try fails.
    Raises ValueError / ConfigError naming the problem.
    """
    started = time.perf_counter()
    overrides = overrides or {}
    notes: list[str] = []
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"--repeats must be 1-{MAX_REPEATS}, got {repeats}")
    if not 0 <= confirm_failures <= 3:
        raise ValueError(f"--confirm-failures must be 0-3, got {confirm_failures}")
    if mode == "sim":
        if warmup_s is not None:
            raise ValueError("--warmup applies to --mode live only (this sweep is sim)")
        if driver_procs != 1:
            raise ValueError("--driver-procs applies to --mode live only (this sweep is sim)")
        if balancer != "python":
            raise ValueError("--balancer applies to --mode live only (this sweep is sim)")
        if repeats != 1:
            raise ValueError("--repeats applies to --mode live only (a sim sweep under one seed finds one knee)")
        if "://" in target:
            raise ValueError(f"'{target}' is a URL: sweep it with --mode live")
        cfg = resolve_target(target, overrides)
        runner, start, kind = sim_step(cfg, seed, min_ratio), start_rps or cfg.peak_qps, "sim"
    elif mode == "live":
        from harness.live.plan import plan_live

        plan = plan_live(target, "steady", seed, overrides, scale=scale, model=model, device=device,
                         pad_to_s=pad_to_s, allow_remote=allow_remote, warmup_s=warmup_s,
                         driver_procs=driver_procs, balancer=balancer)
        cfg, kind = plan.config, "url" if plan.url else "live"
        limits = replace(SWEEP_LIMITS, send_lag_p999_s=send_lag_limit_s)
        runner, start = live_step(plan, min_ratio, limits=limits), start_rps or plan.workload.peak_rps
        if plan.url:
            notes.append("a URL target: its SLO is the one given (--set slo_s=...), its client policy naive's")
    else:
        raise ValueError(f"unknown mode '{mode}': valid are sim, live")
    done: list[SweepRepeat] = []
    for i in range(1, repeats + 1):
        if on_repeat is not None and repeats > 1:
            on_repeat(i, repeats)
        done.append(one_search(runner, i, start, duration_s, cfg.slo_s, rel_tol, on_step, retries,
                               confirm_failures if kind != "sim" else 0))
    mid = median_repeat(done)
    best, steps = mid.max_rate_within_slo, mid.steps
    agreement = capacity_check(cfg, best, seed) if capacity_check is not None and kind == "sim" and best else None
    note = fleet_note(cfg, best, kind, scale)
    if note:
        notes.append(note)
    if steps and not steps[-1].valid and best is not None:
        last = steps[-1]
        notes.append(f"stopped at {last.rate_rps:,.0f} req/s: the step was invalid in every try "
                     f"({last.invalid_reasons[0]}); a rate the driver could not offer on time is not shown "
                     "sustainable, and the knee is a lower bound set by the driver, not the target")
    why = _inconclusive(done)
    spread = knee_spread(done) if repeats > 1 else None
    return SweepResult(target=target, mode=kind, seed=seed, slo_s=cfg.slo_s, min_goodput_ratio=min_ratio,
                       rel_tol=rel_tol, step_duration_s=step_duration_s(start, duration_s, cfg.slo_s, rel_tol),
                       max_rate_within_slo=best, first_failing_rate=mid.first_failing_rate,
                       steps=steps, inconclusive=why, repeats=done if repeats > 1 else [], knee_spread=spread,
                       capacity_check=agreement, send_lag_limit_s=send_lag_limit_s,
                       late_share_limit=SWEEP_LIMITS.late_share, notes=notes,
                       wall_s=time.perf_counter() - started)


def _inconclusive(repeats: list[SweepRepeat]) -> str | None:
    """Why the sweep found no valid knee (None: every search concluded)."""
    bad = [r for r in repeats if r.inconclusive]
    if not bad:
        return None
    if len(repeats) == 1:
        return bad[0].inconclusive
    return (f"{len(bad)} of {len(repeats)} repeats found no valid knee (repeat {bad[0].repeat}: "
            f"{bad[0].inconclusive})")


FLEET_BOUND = 0.85  # a knee at this share of the fleet's ceiling or more is the fleet's


def fleet_note(cfg: TargetConfig, knee_rps: float | None, kind: str, scale: float | None) -> str | None:
    """A note when the knee sits near the fleet's ceiling (GPUs x B / batch time): then the GPUs
    bound it, not the front end, and no saving of CPU moves it (measured: the default live
    fleet, 3 GPUs, capped the live knee at 923 req/s, 96% of its 960, while the front end
    of the same machine served 1,445 req/s within the SLO with 15 GPUs)."""
    if knee_rps is None or kind == "url" or cfg.batch_time_s <= 0:
        return None
    if kind == "sim" and cfg.frontend_cost_s <= 0:
        return None  # a sim without a front end's cost has nothing else to bind it
    ceiling = cfg.fleet_gpus * cfg.batch_size / cfg.batch_time_s
    if knee_rps < FLEET_BOUND * ceiling:
        return None
    more = (" (a bigger fleet: --scale S with S above "
            f"{scale if scale is not None else 'the default'})" if kind == "live" else " (a bigger fleet: --set gpus=N)")
    return (f"the knee is {knee_rps / ceiling:.0%} of the fleet's ceiling ({cfg.fleet_gpus} GPUs x {cfg.batch_size} "
            f"/ {cfg.batch_time_s * 1000:g} ms = {ceiling:,.0f} req/s): the GPUs bound it, not the front end; "
            f"to find the front end's own knee, sweep{more}")

