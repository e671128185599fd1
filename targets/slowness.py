"""How much slower than their cost model the GPUs run now: measured / expected batch
time, smoothed over completed batches (admission must see a slowdown, such as
throttling or a bad node, in the service rate it predicts from).

The estimate fades back to 1 while no batch completes: if admission sheds everything,
no batch would ever report that the slowdown is over (a trap), so old evidence expires.
Pure: every call takes the loop's `now`.
"""

from __future__ import annotations

import math

__all__ = ["Slowness"]


class Slowness:
    """`at(now)` is the estimate; `observe` folds in a completed batch. `value` is the
    answer of the last `at` and `asked_s` its instant (NaN once a batch moved the
    estimate): admission and the batcher both ask on every request, at the same
    instant, and the second may read `value` without a call."""

    def __init__(self, tau_s: float) -> None:
        self.tau_s = tau_s       # the fading's time constant
        self.level = 1.0         # the estimate as of the last completed batch...
        self.at_s = 0.0          # ...which completed then
        self.asked_s = math.nan
        self.value = 1.0

    def at(self, now: float) -> float:
        if now != self.asked_s:
            self.asked_s = now
            self.value = 1.0 + (self.level - 1.0) * math.exp(-(now - self.at_s) / self.tau_s)
        return self.value

    def observe(self, now: float, measured_s: float, expected_s: float) -> None:
        """A batch expected to take `expected_s` took `measured_s`, completing now."""
        slow = self.at(now)
        self.level = slow + 0.2 * (measured_s / expected_s - slow)
        self.at_s = now
        self.asked_s = math.nan
