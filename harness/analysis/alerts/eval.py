"""Evaluate alert rules against a sim run's per-window series, as Prometheus would.

Pure: a run's `timeseries` in, each rule's firing intervals out. Prometheus
evaluates every rule each evaluation interval; here the interval is the run's
window (1 s by default) and the samples are the windows' counts. A rule is
pending from the first evaluation where every condition holds, and fires at the
first evaluation at least `for_s` later with the conditions still holding; a
ratio whose denominator saw nothing (no answers) is no sample, and holds no
condition (as a PromQL division by zero gives NaN, which compares false).

What the series stand for (recorder.timeseries): attempts by the window their
answer came in or their client gave up (the front door's latency histogram's
count, targets.http.metrics), those answered OK within the SLO (its `ok` bucket
at the SLO), sheds, retries (attempts beyond each request's first),
queue depth and GPUs alive at each window's end (gauges), busy GPU fraction.
A window without a gauge sample reads the last one taken, as Prometheus reads
a gauge's last scrape for minutes: a live run's sampler, a host call a window,
now and then lands two samples in one window and none in the next, and a gap
must not restart a rule's `for:` (it did: a live GPU outage fired 4 s late).
A client-side timeout counts as a bad answer when the client gives up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.ops.rules import AlertRule, Condition, FleetShape, Signal

__all__ = ["Firing", "Series", "evaluate"]

_NEEDED = ("answered_rps", "answered_good_rps", "gpus_alive")


@dataclass(frozen=True)
class Series:
    """Per-window counts (events in the window) and gauges (at its end) of one run."""

    window_s: float
    answered: np.ndarray
    good: np.ndarray
    shed: np.ndarray
    retries: np.ndarray
    busy_gpu_s: np.ndarray
    queue_depth: np.ndarray
    gpus_alive: np.ndarray

    @classmethod
    def from_timeseries(cls, ts: dict[str, Any]) -> "Series":
        missing = [k for k in _NEEDED if k not in ts]
        if missing:
            raise ValueError(f"the run's series lack {', '.join(missing)} (written by an older harness: re-run it)")
        w = float(ts["window_s"])

        def counts(key: str) -> np.ndarray:
            return np.asarray(ts[key], dtype=float) * w

        alive = np.array([np.nan if v is None else v for v in ts["gpus_alive"]], dtype=float)  # None: no sample
        return cls(
            window_s=w, answered=counts("answered_rps"), good=counts("answered_good_rps"),
            shed=counts("shed_rps"), retries=np.maximum(0.0, counts("attempts_rps") - counts("offered_rps")),
            busy_gpu_s=np.asarray(ts["gpu_busy"], dtype=float) * alive * w,
            queue_depth=_last_sample(np.where(np.isnan(alive), np.nan, np.asarray(ts["queue_depth"], dtype=float))),
            gpus_alive=_last_sample(alive))

    @property
    def times_s(self) -> np.ndarray:
        """Each evaluation's time: the end of its window."""
        return (np.arange(len(self.answered)) + 1) * self.window_s


def _last_sample(gauge: np.ndarray) -> np.ndarray:
    """Each window's value, or the last one sampled before it (NaN before the first sample)."""
    idx = np.where(np.isnan(gauge), 0, np.arange(len(gauge)))
    np.maximum.accumulate(idx, out=idx)
    out = gauge[idx]
    if len(gauge) and np.isnan(gauge[0]):
        first = np.argmax(~np.isnan(gauge)) if (~np.isnan(gauge)).any() else len(gauge)
        out[:first] = np.nan
    return out


@dataclass(frozen=True)
class Firing:
    """One rule over one run: when it first fired, and each (start, end) it was firing."""

    rule: str
    first_s: float | None
    intervals: tuple[tuple[float, float], ...]


def _window_sum(x: np.ndarray, n: int) -> np.ndarray:
    """Sum over the last n windows at each evaluation (fewer at the start, as a range over a young series)."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    j = np.arange(1, len(x) + 1)
    return c[j] - c[np.maximum(0, j - n)]


def signal(c: Condition, s: Series, shape: FleetShape) -> np.ndarray:
    """The condition's signal at every evaluation (NaN: no sample)."""
    n = max(1, round(c.window_s / s.window_s))
    with np.errstate(divide="ignore", invalid="ignore"):
        answers = _window_sum(s.answered, n)
        if c.signal is Signal.ERROR_RATIO:
            return 1.0 - _window_sum(s.good, n) / answers
        if c.signal is Signal.SHED_RATIO:
            return _window_sum(s.shed, n) / answers
        if c.signal is Signal.RETRY_RATIO:
            return _window_sum(s.retries, n) / answers
        if c.signal is Signal.QUEUE_DELAY:
            return s.queue_depth / (s.gpus_alive * shape.service_rps)
        if c.signal is Signal.GPU_BUSY:
            return _window_sum(s.busy_gpu_s, n) / (n * s.window_s) / s.gpus_alive
        return 1.0 - s.gpus_alive / shape.gpus


def evaluate(rules: list[AlertRule], s: Series, shape: FleetShape) -> list[Firing]:
    """Each rule's firings over the run, in the rules' order."""
    t = s.times_s
    out = []
    for rule in rules:
        holds = np.ones(len(t), dtype=bool)
        for c in rule.conditions:
            holds &= np.nan_to_num(signal(c, s, shape), nan=-np.inf) > c.threshold
        intervals: list[tuple[float, float]] = []
        since: float | None = None
        start: float | None = None
        for j, ok in enumerate(holds.tolist()):
            if not ok:
                if start is not None:
                    intervals.append((start, float(t[j])))
                since = start = None
                continue
            since = float(t[j]) if since is None else since
            if start is None and t[j] - since >= rule.for_s - 1e-9:
                start = float(t[j])
        if start is not None:
            intervals.append((start, float(t[-1])))
        out.append(Firing(rule.name, intervals[0][0] if intervals else None, tuple(intervals)))
    return out
