"""What the rate-aware batching policy measures, and the one test it applies.

A partial batch costs the fleet a whole GPU start (one batch time) for fewer
than B requests. Whether that start is affordable depends on the arrival rate,
not on how many GPUs happen to be idle this instant: under a constant batch
time every busy GPU frees within one batch time, so the fleet has G starts per
batch time whatever the free count says. Serving rate lambda with batches of q
needs lambda * t(q) / q GPUs, so a batch of q is worth dispatching when

    G * u * q / t(q) >= lambda

(`u` the utilisation the fleet may run at when it batches this small). Below
that size, waiting for the batch to fill is what keeps the fleet's throughput
above the arrival rate; at or above it, waiting only adds latency. At a low
rate the test passes for q = 1 (dispatch at once); on a tight fleet at peak it
fails for every q < B (full batches, as one shared full-batch queue does).

Everything here is pure: times come in as arguments, no clock is read.
"""

from __future__ import annotations

import math
from typing import Callable, Final

# math.expm1 held once: compiled (targets.native), math.exp is a native call but expm1 a
# Python-level one, and reading it off the module on each call was a lookup more.
_expm1: Final = math.expm1


class ArrivalRate:
    """Arrivals per second from enqueue times: an exponentially decayed count
    over `horizon_s`, so a lull shows as a falling rate without a new arrival.

    Until one horizon has passed since the first arrival the count is scaled
    up by the share of the horizon seen (unbiased for a steady rate); the very
    first arrival alone (or a burst at one instant) says nothing, so the rate
    reads 0 (dispatch at once).
    `observe` runs once per request: a multiply, an exp and two stores.
    """

    def __init__(self, horizon_s: float) -> None:
        if horizon_s <= 0:
            raise ValueError(f"horizon_s must be > 0, got {horizon_s}")
        self.horizon_s = horizon_s
        self._count = 0.0
        self._last_s = 0.0
        self._first_s = 0.0

    def observe(self, now: float) -> None:
        if self._count:
            self._count = self._count * math.exp((self._last_s - now) / self.horizon_s) + 1.0
        else:
            self._count, self._first_s = 1.0, now
        self._last_s = now

    def rps(self, now: float) -> float:
        span = now - self._first_s
        if not self._count or span <= 0:
            return 0.0
        h = self.horizon_s
        decayed = self._count * math.exp((self._last_s - now) / h)
        # (at least a billionth of the horizon seen: arrivals a hair apart read
        # as a huge rate, never an infinite one). Past 40 horizons -expm1(-x) is 1.0
        # exactly in floating point, and is not called (compiled, math.exp is a native
        # call and math.expm1 a Python one).
        x = span / h
        return decayed / (h * (1.0 if x > 40.0 else max(-_expm1(-x), 1e-9)))


def per_gpu_rps(batch_s: Callable[[int], float], max_batch: int) -> tuple[float, ...]:
    """Requests/s one GPU serves running batches of q, for q = 0..max_batch
    (index q): the table `worth_dispatching` reads, built once per target."""
    return (0.0,) + tuple(q / batch_s(q) for q in range(1, max_batch + 1))


def worth_dispatching(queued: int, rate_rps: float, gpus: float, utilization: float,
                      per_gpu: tuple[float, ...]) -> bool:
    """Whether `gpus` GPUs running batches of `queued` would serve `rate_rps`
    at `utilization`: then a partial batch of `queued` costs no throughput
    that the rate needs, and should go now. `queued` must be within the table."""
    return gpus * utilization * per_gpu[queued] >= rate_rps


def fill_wait_s(queued: int, rate_rps: float, gpus: float, utilization: float, per_gpu: tuple[float, ...],
                cap_s: float) -> float:
    """How long a queue of `queued` (the newcomer counted) waits to become a
    batch `worth_dispatching` lets go, filling at `rate_rps`: (q* - queued) /
    rate for the smallest such q* >= queued (B when none is), at most `cap_s`
    (the batcher's max wait). 0 at no measured rate (the batch goes at once).
    `per_gpu` must rise with q, as q / t(q) does for any batch time that grows
    slower than the batch."""
    if rate_rps <= 0.0:
        return 0.0
    capacity = gpus * utilization
    if capacity <= 0.0:  # no GPUs, or so few that the product underflows (hypothesis found 5e-324)
        return cap_s
    b = len(per_gpu) - 1
    q = min(_bisect_left(per_gpu, rate_rps / capacity, queued, b + 1), b)
    wait = (q - queued) / rate_rps if q > queued else 0.0
    return wait if wait < cap_s else cap_s


def _bisect_left(seq: tuple[float, ...], x: float, lo: int, hi: int) -> int:
    """`bisect.bisect_left(seq, x, lo, hi)`, the same halving: compiled, a native loop over
    the tuple, where bisect is a Python-level call (fill_wait_s runs per request)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if seq[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo
