"""What each flaw's exposing mechanism needs of a run, and whether a shortened run kept it.

A shortened run (`harness.analysis.shorten`) that keeps too little of a
scenario's disturbance hides the flaw it exists to expose: a slowdown kept for
1.5 s never lets a retry storm start, so blind retries look harmless (measured
on slowdown, hardened with blind retries put back, 0.5 s calm and 2.5 s after:
-2.5 points of goodput lost with 1.5 s of slowdown kept, +13.6 with 4 s, +21.7
with 8 s). So each flaw states what its mechanism needs, derived from the
knobs of the design that has the flaw (its client's timeout, retries and
backoff), and the plan keeps at least that; where a run still kept less (a
script whose disturbance is shorter, a `--scale` or budget that cut it, a suite
without the scenario), the ranking carries a `ShortRun` warning for the flaw.

Needs, in seconds (a request's life is `(retries + 1) x timeout` plus the
longest backoff pauses between its attempts: 4 s at the doc's 1 s and 3
retries):

- blind-retries: a retry storm needs several timeout-and-retry cycles:
  STORM_LIVES request lives of disturbance, one life of recovery after it (a
  metastable storm outlives its trigger; the last retries need a life to end);
- no-admission-control, no-headroom, no-tenant-limits: an overloaded queue
  must grow past the client timeout before requests time out; at 1.5x overload
  the wait grows 0.5 s a second, so QUEUE_TIMEOUTS timeouts of disturbance and
  one timeout after;
- no-failure-handling: batches lost with a GPU are noticed only when their
  clients time out: one timeout of disturbance and one after;
- the other flaws are exposed by stationary traffic, with nothing to keep.

Plain functions of configs and the plan; no runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.results.rank import KeptSpan, ShortRun
from targets.config import Backoff, TargetConfig

__all__ = ["QUEUE_TIMEOUTS", "STORM_LIVES", "Need", "need", "request_life_s", "scenario_needs", "short_run"]

STORM_LIVES = 2.0      # request lives of disturbance a retry storm needs to build and show
QUEUE_TIMEOUTS = 2.0   # client timeouts of overload a queue needs to outgrow the timeout


@dataclass(frozen=True)
class Need:
    """Seconds of disturbance (and of recovery after it) a run must keep to show a mechanism."""

    mechanism: str
    disturbance_s: float
    after_s: float

    def covers(self, other: "Need") -> "Need":
        """The larger of two needs (a scenario shared by two flaws must show both)."""
        if other.disturbance_s > self.disturbance_s or other.after_s > self.after_s:
            return Need(self.mechanism if self.disturbance_s >= other.disturbance_s else other.mechanism,
                        max(self.disturbance_s, other.disturbance_s), max(self.after_s, other.after_s))
        return self


def request_life_s(c: TargetConfig) -> float:
    """How long a client keeps one request alive at most: every attempt timing out, plus the
    longest pauses between attempts (seconds)."""
    pause = c.backoff_cap_s if c.client_backoff is Backoff.EXPONENTIAL else 0.0
    return (c.client_retries + 1) * c.client_timeout_s + c.client_retries * pause


def need(flaw_id: str, knobs: Mapping[str, Any]) -> Need | None:
    """What `flaw_id`'s mechanism needs, from `knobs` (a design that has the flaw); None for
    flaws that stationary traffic exposes."""
    c = TargetConfig.model_validate(dict(knobs))
    t, life = c.client_timeout_s, request_life_s(c)
    if flaw_id == "blind-retries":
        return Need(f"a retry storm needs several timeout-and-retry cycles: {STORM_LIVES:g} request lives of "
                    f"{life:g} s ({c.client_retries + 1} attempts x {t:g} s timeout"
                    + (f" + backoff up to {c.backoff_cap_s:g} s" if c.client_backoff is Backoff.EXPONENTIAL else "")
                    + ")", STORM_LIVES * life, life)
    if flaw_id in ("no-admission-control", "no-headroom", "no-tenant-limits"):
        return Need(f"an overloaded queue must outgrow the {t:g} s client timeout ({QUEUE_TIMEOUTS:g} timeouts "
                    f"of overload)", QUEUE_TIMEOUTS * t, t)
    if flaw_id == "no-failure-handling":
        return Need(f"requests lost with a GPU show only when their clients time out ({t:g} s)", t, t)
    return None


def scenario_needs(flaw_scenarios: Mapping[str, list[str]], exposed_by: Mapping[str, tuple[str, ...]],
                   knobs: Mapping[str, Mapping[str, Any]]) -> dict[str, Need]:
    """{scenario: what it must keep}: the largest need of the flaws it exposes.

    `exposed_by` maps a flaw id to its exposing scenarios, `knobs` a flaw id to
    the knobs of a design that has it.
    """
    out: dict[str, Need] = {}
    for fid, scenarios in flaw_scenarios.items():
        n = need(fid, knobs[fid])
        if n is None:
            continue
        for w in set(scenarios) & set(exposed_by[fid]):
            out[w] = out[w].covers(n) if w in out else n
    return out


def short_run(flaw_id: str, scenarios: list[str], exposed_by: tuple[str, ...], knobs: Mapping[str, Any],
              kept: Mapping[str, KeptSpan]) -> ShortRun | None:
    """The warning for one flaw, or None when a run that exposes it kept what it needs.

    `scenarios` are the ones measured for the flaw, `kept` what each run kept
    of its disturbance (`harness.analysis.shorten.plan`; None where the script
    has none: stationary traffic exposes the flaw there, with nothing to keep).
    A flaw is warned about when none of its exposing scenarios was run, or when
    an exposing run kept less of its disturbance than the mechanism needs
    (every such run is named).
    """
    ran = [w for w in exposed_by if w in scenarios]
    n = need(flaw_id, knobs)
    if not ran:
        return ShortRun(mechanism=n.mechanism if n else "only the scenarios that expose it show it",
                        needed_disturbance_s=n.disturbance_s if n else None,
                        needed_after_s=n.after_s if n else None, missing=list(exposed_by))
    if n is None:
        return None
    slack = 1e-6
    short = {w: k for w in ran if (k := kept.get(w)) is not None and k.disturbance_s is not None
             and (k.disturbance_s < n.disturbance_s - slack or (k.after_s or 0.0) < n.after_s - slack)}
    if not short:
        return None
    return ShortRun(mechanism=n.mechanism, needed_disturbance_s=n.disturbance_s, needed_after_s=n.after_s, runs=short)
