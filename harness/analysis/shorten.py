"""Shorter runs of the bad-day scenarios that keep what exposes each flaw.

Rates are never scaled (the fleet's per-GPU and per-server load must stay the
design's), so a run's cost is its request count, and the only lever is time.
Two ways to shorten a scenario:

- *stationary* scripts (no spike, fault or burst) are cut (uniformly
  compressed, the same for one phase) to `request_budget / mean rate`
  seconds, never below `min_s`;
- scripts with a *disturbance* (the hull of spike windows, faults and tenant
  bursts) keep `before_s` of calm before it, the disturbance itself for up to
  `disturbance_s`, and `after_s` of recovery: the calm stretches are what is
  cut. Compressing the whole script uniformly instead would shrink a 10 s
  slowdown to 1.5 s, too short for queues to pass the 1 s client timeout, so
  the retry storm it exists to expose would never start.

`DISTURBANCE_S` and `AFTER_S` (times `scale`) are defaults; `needs` (from
`harness.analysis.exposure.scenario_needs`) raise them per scenario to what
the flaws it exposes need to show, and no `scale` shortens below that. The
plan records what each run kept of its disturbance, so the ranking can warn
per flaw where a run still kept too little (a script shorter than the need,
or no shortening plan for disturbances, as with `request_budget` None).

A `Shortening` is plain data (it travels to worker processes with the job);
`shorten(wl, sh)` applies it. All times are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from harness.analysis.exposure import Need
from workloads.loader import load_workload
from workloads.model import SpikePhase, WorkloadConfig

REQUEST_BUDGET = 20_000   # expected requests of a shortened stationary run
MIN_S = 2.0               # shortest stationary run
BEFORE_S = 1.0            # calm kept before a disturbance (queues and caches warm up)
DISTURBANCE_S = 3.0       # longest disturbance kept: queues pass the 1 s timeout and retries start
AFTER_S = 5.0             # recovery kept after it (long enough to see a metastable storm outlive its trigger)


@dataclass(frozen=True)
class Shortening:
    """How to shorten one scenario; None fields keep the full script."""

    run_s: float | None = None            # stationary: the cut length
    before_s: float | None = None         # disturbance: calm kept before it
    disturbance_s: float | None = None    # ... its longest kept length
    after_s: float | None = None          # ... recovery kept after it


def disturbance(wl: WorkloadConfig) -> tuple[float, float] | None:
    """(start, end) hull of the script's spike windows, faults and bursts."""
    spans, start = [], 0.0
    for p in wl.phases:
        if isinstance(p, SpikePhase):
            spans.append((start + p.at_s, start + p.at_s + p.spike_s))
        start += p.duration_s
    spans += [(f.at_s, f.at_s + f.duration_s) for f in wl.faults]
    spans += [(b.start_s, b.end_s) for t in wl.tenants for b in t.bursts]
    if not spans:
        return None
    return min(a for a, _ in spans), min(max(b for _, b in spans), wl.duration_s)


def _warp(wl: WorkloadConfig, d0: float, d1: float, before: float, dist: float, after: float):
    """A piecewise-linear map of old times to new: calm cut, disturbance squeezed to `dist`."""
    pre, k = min(d0, before), (dist / (d1 - d0) if d1 > d0 else 1.0)
    post = min(wl.duration_s - d1, after)
    total = pre + (d1 - d0) * k + post

    def t(x: float) -> float:
        if x <= d0:
            return max(0.0, pre - (d0 - x))
        if x <= d1:
            return pre + (x - d0) * k
        return min(total, pre + (d1 - d0) * k + (x - d1))
    return t, total


def shorten(wl: WorkloadConfig, sh: Shortening | None) -> WorkloadConfig:
    """`wl` shortened as `sh` says (see the module doc); unchanged when it says nothing."""
    if sh is None:
        return wl
    span = disturbance(wl)
    if span is None or sh.before_s is None or len(wl.phases) != 1:
        if sh.run_s is None or sh.run_s >= wl.duration_s - 1e-9:
            return wl
        return wl.scaled(1.0, sh.run_s)
    d0, d1 = span
    dist = min(d1 - d0, sh.disturbance_s if sh.disturbance_s is not None else d1 - d0)
    t, total = _warp(wl, d0, d1, sh.before_s, dist, sh.after_s if sh.after_s is not None else wl.duration_s)
    if total >= wl.duration_s - 1e-9:
        return wl
    phase = wl.phases[0]
    upd: dict = {"duration_s": total}
    if isinstance(phase, SpikePhase):
        upd.update(at_s=t(phase.at_s), spike_s=t(phase.at_s + phase.spike_s) - t(phase.at_s))
    faults = tuple(f.model_copy(update={"at_s": t(f.at_s), "duration_s": t(f.at_s + f.duration_s) - t(f.at_s)})
                   for f in wl.faults)
    tenants = tuple(tn.model_copy(update={"bursts": tuple(
        b.model_copy(update={"start_s": t(b.start_s), "end_s": t(b.end_s)}) for b in tn.bursts)})
        for tn in wl.tenants)
    return wl.model_copy(update={"phases": (phase.model_copy(update=upd),), "faults": faults, "tenants": tenants})


def expected_requests(wl: WorkloadConfig) -> float:
    """Expected unique requests: the integral of the rate, tenant bursts included."""
    n = 4000
    t = (np.arange(n) + 0.5) * (wl.duration_s / n)  # midpoints: exact for piecewise-constant rates
    rate = wl.rate(t)
    extra = np.zeros_like(t)
    for tn in wl.tenants:
        for b in tn.bursts:
            extra += np.where((t >= b.start_s) & (t < b.end_s), rate * tn.share * (b.factor - 1), 0.0)
    return float(np.sum(rate + extra) * (wl.duration_s / n))


def plan(names: list[str], scale: float = 1.0, request_budget: float | None = REQUEST_BUDGET,
         min_s: float = MIN_S, before_s: float = BEFORE_S, disturbance_s: float = DISTURBANCE_S,
         after_s: float = AFTER_S, needs: Mapping[str, Need] | None = None) -> dict[str, dict]:
    """{scenario: {"shortening", "full_s", "run_s", "expected_requests", "kept", "disturbance_s",
    "after_s"}} for a suite.

    `scale` multiplies every kept length, but a disturbance and its recovery are
    never kept shorter than `needs[scenario]` says (the script's own lengths
    permitting); `request_budget` None keeps every scenario whole (or, with
    `scale` under 1, compresses it uniformly). `disturbance_s` and `after_s` in
    the plan are what the run kept: None where the script has no disturbance,
    0.0 where the cut lost it.
    """
    out: dict[str, dict] = {}
    needs = needs or {}
    for name in names:
        wl = load_workload(name)
        need = needs.get(name)
        if request_budget is None:
            sh = Shortening(run_s=wl.duration_s * scale) if scale < 1 else None
        elif disturbance(wl) is not None and len(wl.phases) == 1:
            sh = Shortening(before_s=before_s * scale,
                            disturbance_s=max(disturbance_s * scale, need.disturbance_s if need else 0.0),
                            after_s=max(after_s * scale, need.after_s if need else 0.0))
        else:
            mean = max(expected_requests(wl) / wl.duration_s, 1e-9)
            sh = Shortening(run_s=min(wl.duration_s, max(min_s, request_budget / mean)) * scale)
        short = shorten(wl, sh)
        span = disturbance(short)
        simple = len(wl.phases) == 1 and wl.phases[0].kind == "constant" and span is None
        if short.duration_s >= wl.duration_s - 1e-9:
            kept = "whole"
        elif span and sh and sh.before_s is not None:
            kept = f"{span[0]:.3g} s calm, {span[1] - span[0]:.3g} s disturbance, {short.duration_s - span[1]:.3g} s after"
        else:
            kept = f"first {short.duration_s:.3g} s" if simple else f"whole script in {short.duration_s:.3g} s"
        kept_d = kept_a = None
        if disturbance(wl) is not None:
            kept_d, kept_a = ((max(0.0, span[1] - span[0]), max(0.0, short.duration_s - span[1])) if span
                              else (0.0, 0.0))
        out[name] = {"shortening": sh, "full_s": wl.duration_s, "run_s": short.duration_s,
                     "expected_requests": expected_requests(short), "kept": kept,
                     "disturbance_s": kept_d, "after_s": kept_a}
    return out


def plan_for_json(p: dict[str, dict]) -> dict[str, dict]:
    """The plan as a result document stores it (no dataclasses)."""
    return {w: {k: v for k, v in d.items() if k != "shortening"} for w, d in p.items()}
