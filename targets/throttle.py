"""The client's own limits on what it sends: a retry budget (retries at most a share of
first tries) and adaptive throttling (the SRE book's client-side refusal). Clock-free: each
call takes the caller's time."""

from __future__ import annotations

import math


class RetryBudget:
    """Retries allowed while retries <= ratio * first attempts + `floor`."""

    def __init__(self, ratio: float, floor: int = 10) -> None:
        self.ratio = ratio
        self.floor = floor
        self.first = 0
        self.retries = 0

    def record_first(self) -> None:
        self.first += 1

    def try_spend(self) -> bool:
        if self.retries + 1 <= self.ratio * self.first + self.floor:
            self.retries += 1
            return True
        return False


class Throttle:
    """Adaptive client-side throttling (Google SRE book, "Handling Overload"): over the
    last ``window_s``, with ``requests`` the attempts that ended (answered, refused or
    timed out) and ``accepts`` the answers that were not refusals, a new request is
    refused locally with probability ``max(0, (requests - k * accepts) / (requests + 1))``.

    Two departures from the book, both measured: it counts a request as it is sent, over
    two minutes; here an attempt counts as it ends, so a request still in flight is not
    taken for a refusal and a window of seconds works from a cold start. And the book's
    ``requests`` include those refused locally, which makes a moment of total refusal (a
    pause, a burst) nearly latch: with ``p`` near 1 every window, a client that keeps
    refusing itself recovers only as ``1 - p`` doubles, a window at a time (live spike,
    --scale 0.2: 92% shed). Counting what was sent, the throttle lets go as soon as the
    server accepts over ``1 / k`` of it again; past the knee the server is sent
    ``sqrt(k x capacity x offered)`` rather than ``k x capacity``. Nothing is refused
    while the server accepts over ``1 / k`` of what it is sent, so a server at or below
    its knee never sees it. The window is counted in ``buckets`` slices, so it forgets
    within ``window_s``. Times are the caller's clock."""

    def __init__(self, k: float, window_s: float, buckets: int = 10) -> None:
        self.k = k
        self.slice_s = window_s / buckets
        self.buckets = buckets
        self.requests = [0] * buckets
        self.accepts = [0] * buckets
        self.total_requests = 0
        self.total_accepts = 0
        self.current = 0  # the slice number (time // slice_s) the counts were last rolled to
        self._rolled_s = math.nan  # the time of the last roll (a batch's answers end at one instant)
        # The current slice's counts, kept in native ints and written into its list items when
        # the window rolls past it (compiled: a list item is a boxed int, an allocation per
        # count past 256).
        self._slice_requests = 0
        self._slice_accepts = 0

    def _roll(self, now_s: float) -> int:
        """Forget the slices that left the window; the index of ``now_s``'s slice."""
        if now_s == self._rolled_s:  # rolled to this very instant already: nothing more left it
            return self.current % self.buckets
        self._rolled_s = now_s
        slot = int(now_s // self.slice_s)
        gap = slot - self.current
        if gap > 0:
            k = self.current % self.buckets  # the slice left behind: its counts into its items
            self.requests[k] = self.requests[k] + self._slice_requests
            self.accepts[k] = self.accepts[k] + self._slice_accepts
            self._slice_requests = self._slice_accepts = 0
            for i in range(self.current + 1, self.current + 1 + min(gap, self.buckets)):
                j = i % self.buckets
                self.total_requests -= self.requests[j]
                self.total_accepts -= self.accepts[j]
                self.requests[j] = 0
                self.accepts[j] = 0
            self.current = slot
        return self.current % self.buckets

    def reject_probability(self, now_s: float) -> float:
        self._roll(now_s)
        excess = self.total_requests - self.k * self.total_accepts
        return excess / (self.total_requests + 1) if excess > 0 else 0.0

    def request(self, now_s: float) -> None:
        self._roll(now_s)
        self._slice_requests += 1
        self.total_requests += 1

    def accept(self, now_s: float) -> None:
        self._roll(now_s)
        self._slice_accepts += 1
        self.total_accepts += 1

    def ended(self, now_s: float, accepted: bool) -> None:
        """An attempt ended at ``now_s``: ``request`` and, when ``accepted``, ``accept``, in one roll."""
        self._roll(now_s)
        self._slice_requests += 1
        self.total_requests += 1
        if accepted:
            self._slice_accepts += 1
            self.total_accepts += 1
