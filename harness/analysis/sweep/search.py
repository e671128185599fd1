"""The pure half of `harness sweep`: which rate to try next, and when a step has certainly failed.

``RateSearch`` is a step machine over offered rates (requests/s), as
``capacity.sim.FleetSearch`` is over fleets: it gallops by ``growth`` from a
start rate until it holds a passing rate below a failing one, then bisects
(geometrically) until the bracket is within ``rel_tol``. It assumes that a
rate that fails makes every higher rate fail too (monotone), which holds for
one seeded workload shape scaled in rate.

``certain_failures`` decides early stopping without guessing: a step passes
only if at least ``min_ratio`` of its unique requests end within the SLO, so
once more requests than ``allowed_failures`` have already ended badly (late,
shed, timed out, failed) or are still unanswered past the SLO, no future can
save the step and it may stop at once. Nothing here reads a clock.
"""

from __future__ import annotations

import math

import numpy as np

from harness.engine.outcomes import OUTCOME_CODES, PENDING
from targets.protocol import Status

__all__ = ["RateSearch", "allowed_failures", "certain_failures"]

_OK = OUTCOME_CODES[Status.OK]


def allowed_failures(unique: int, min_ratio: float) -> int:
    """How many of ``unique`` requests may miss the SLO while p(min_ratio) still meets it."""
    return unique - math.ceil(min_ratio * unique - 1e-9)


def certain_failures(outcome: np.ndarray, latency_s: np.ndarray, sched_s: np.ndarray, now_s: float,
                     slo_s: float) -> int:
    """Requests already certain to miss the SLO at ``now_s`` (s since the schedule's start).

    ``outcome`` holds the recorder's client outcome codes (-1 pending, 0 OK),
    ``latency_s`` each OK answer's end-to-end latency, ``sched_s`` each request's
    scheduled start: a request ended otherwise than OK within ``slo_s``, or still
    pending although scheduled more than ``slo_s`` ago, can no longer be on time.
    """
    done = outcome != PENDING
    on_time = (outcome == _OK) & (latency_s <= slo_s)
    overdue = ~done & (sched_s < now_s - slo_s)
    return int(np.count_nonzero(done & ~on_time) + np.count_nonzero(overdue))


class RateSearch:
    """Highest passing rate, to within ``rel_tol``, by galloping then geometric bisection.

    ``next_rate()`` is the rate to try (None once done); ``update(rate, passed)``
    records its verdict. ``lo`` is the highest passing rate seen (None: none yet),
    ``hi`` the lowest failing one (None: none yet). The search gives up downward
    below ``min_rps`` (nothing passes) and upward above ``max_rps`` (never failed).
    """

    def __init__(self, start_rps: float, *, growth: float = 2.0, rel_tol: float = 0.05,
                 min_rps: float | None = None, max_rps: float | None = None) -> None:
        if not (start_rps > 0 and math.isfinite(start_rps)):
            raise ValueError(f"start rate must be finite and > 0, got {start_rps}")
        if growth <= 1:
            raise ValueError(f"growth must be > 1, got {growth}")
        if not 0 < rel_tol < 1:
            raise ValueError(f"rel_tol must be in (0, 1), got {rel_tol}")
        self.start, self.growth, self.rel_tol = start_rps, growth, rel_tol
        self.min_rps = min_rps if min_rps is not None else start_rps / growth ** 8
        self.max_rps = max_rps if max_rps is not None else start_rps * growth ** 8
        self.lo: float | None = None
        self.hi: float | None = None
        self.tried: list[tuple[float, bool]] = []

    @property
    def done(self) -> bool:
        if self.lo is not None and self.hi is not None:
            return self.hi / self.lo <= 1 + self.rel_tol
        if self.hi is not None and self.hi <= self.min_rps:
            return True  # nothing passes even at the floor
        return self.lo is not None and self.lo >= self.max_rps

    def next_rate(self) -> float | None:
        if self.done:
            return None
        if self.lo is None:
            return self.start if self.hi is None else max(self.min_rps, self.hi / self.growth)
        if self.hi is None:
            return min(self.max_rps, self.lo * self.growth)
        return math.sqrt(self.lo * self.hi)

    def update(self, rate_rps: float, passed: bool) -> None:
        self.tried.append((rate_rps, passed))
        if passed:
            self.lo = rate_rps if self.lo is None else max(self.lo, rate_rps)
        else:
            self.hi = rate_rps if self.hi is None else min(self.hi, rate_rps)
        if self.lo is not None and self.hi is not None and self.lo >= self.hi:
            # Noise broke monotonicity (live): trust the failure, search below it again.
            self.lo = None if all(r >= self.hi for r, ok in self.tried if ok) else \
                max(r for r, ok in self.tried if ok and r < self.hi)
