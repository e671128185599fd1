"""The recorder: everything a run measures, as streaming accumulators.

End-to-end latency runs from each request's *scheduled* start to its final
answer, retries included, so a slow target cannot slow the clock that judges
it (no coordinated omission). Latencies go into HdrHistograms (microsecond
resolution, 3 significant digits); per-request arrays keep what per-window and
per-tenant views need. Each unique request ends as exactly one `Outcome`
(within SLO, late, shed, timed out, failed, lost: `classify`). In `latency_s`
a request not answered OK counts as infinitely slow (a percentile that lands
on one is None); `latency_ok_s` ranks the OK answers only.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

from harness.results.run import Outcome, Outcomes
from targets.protocol import Status

_US = 1_000_000
_MAX_US = 3_600 * _US

# Client outcome codes per request (what `finish` saw); PENDING: no final answer yet.
OUTCOME_CODES = {Status.OK: 0, Status.TIMEOUT: 1, Status.TOO_MANY: 2, Status.UNAVAILABLE: 2, Status.ERROR: 3, Status.BAD_REQUEST: 3}
PENDING = -1
_STATUS_CODE = {st: int(st) for st in Status}
# The summary's outcome categories, in order; the OK ones first (index <= _LATE).
OUTCOMES = tuple(Outcome)
_IDX = {o: i for i, o in enumerate(OUTCOMES)}
_WITHIN, _LATE = _IDX[Outcome.WITHIN_SLO], _IDX[Outcome.LATE]


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, _MAX_US, 3)


def percentiles(hist: HdrHistogram, failures: int = 0) -> dict[str, float | None]:
    """mean, p50, p90, p99, p999, max in seconds over hist's values plus
    `failures` infinite ones."""
    ok = hist.get_total_count()
    total = ok + failures
    out: dict[str, float | None] = {}
    if total == 0:
        return {k: None for k in ("mean", "p50", "p90", "p99", "p999", "max")}
    out["mean"] = hist.get_mean_value() / _US if failures == 0 and ok else None
    for key, q in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)):
        rank = math.ceil(q / 100 * total)
        if rank > ok or ok == 0:
            out[key] = None
        else:
            out[key] = hist.get_value_at_percentile(100.0 * rank / ok) / _US
    out["max"] = hist.get_max_value() / _US if failures == 0 and ok else None
    return out


class Recorder:
    """Collects one run. `n` unique requests, scheduled at `sched_s`."""

    def __init__(self, sched_s: np.ndarray, tenant: np.ndarray, tenants: tuple[str, ...],
                 slo_s: float, duration_s: float, window_s: float, t0: float = 0.0) -> None:
        n = len(sched_s)
        self.sched = sched_s
        self.sched_list = sched_s.tolist()
        self.tenant = tenant
        self.tenants = tenants
        self.slo_s = slo_s
        self.duration_s = duration_s
        self.window_s = window_s
        self.t0 = t0
        self.latency = np.full(n, np.inf)
        self.outcome = np.full(n, PENDING, dtype=np.int8)
        self.done_s = np.full(n, np.nan)
        self.tries = np.zeros(n, dtype=np.int16)
        self.hist_all = new_histogram()
        self.hist_attempt = new_histogram()
        self.attempts = 0
        self.attempt_status: dict[str, int] = {}
        windows = int(math.ceil(duration_s / window_s)) + 1
        self.win_attempts = np.zeros(windows)
        self.win_timeouts = np.zeros(windows)
        self.win_shed = np.zeros(windows)
        self.samples: list[tuple[float, int, float, int]] = []  # (t, queue depth, busy GPU-s, alive GPUs)
        self.finished = 0
        self.covered_s = float(duration_s)  # see cover()
        self.n_covered = n
        self.attempt_end = array("d")   # when each attempt ended (loop time), and its status:
        self.attempt_code = array("h")  # what cover() needs to count attempts up to a cut

    def _window(self, t: float) -> int:
        return min(len(self.win_attempts) - 1, max(0, int((t - self.t0) / self.window_s)))

    # -- streaming ---------------------------------------------------------------------
    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        self.attempts += 1
        self.attempt_end.append(sent_s + latency_s)
        self.attempt_code.append(_STATUS_CODE[status])
        name = status.name.lower()
        self.attempt_status[name] = self.attempt_status.get(name, 0) + 1
        w = self._window(sent_s)
        self.win_attempts[w] += 1
        if status is Status.OK:
            self.hist_attempt.record_value(max(1, int(latency_s * _US)))
        elif status is Status.TIMEOUT:
            self.win_timeouts[w] += 1
        elif status.shed:
            self.win_shed[w] += 1

    def finish(self, index: int, status: Status, done_s: float, tries: int) -> None:
        self.finished += 1
        self.outcome[index] = OUTCOME_CODES[status]
        self.tries[index] = tries
        self.done_s[index] = done_s
        if status is Status.OK:
            lat = done_s - self.t0 - self.sched_list[index]
            self.latency[index] = lat
            self.hist_all.record_value(max(1, int(lat * _US)))

    def sample(self, t: float, queue_depth: int, busy_gpu_s: float, alive_gpus: int) -> None:
        self.samples.append((t, queue_depth, busy_gpu_s, alive_gpus))

    # -- results -------------------------------------------------------------------------
    def cover(self, until_s: float) -> None:
        """Cut the run at `until_s` (s since the schedule's start), where it was
        interrupted: summarise only the requests scheduled by then, and only what had
        happened by then. A request without its final answer at the cut (in flight,
        or answered only while the run shut down) counts as lost; attempts count if
        they ended by the cut. Per-attempt latency (`attempt_latency_ok_s`) is not cut."""
        self.covered_s = max(0.0, min(float(until_s), self.duration_s))
        self.n_covered = int(np.searchsorted(self.sched, self.covered_s, side="right"))
        cut = self.t0 + float(until_s)
        after = self.done_s > cut  # NaN (never finished) compares False
        if after.any():
            self.outcome[after] = PENDING
            self.latency[after] = np.inf
            self.done_s[after] = np.nan
            self.finished -= int(after.sum())
        self.hist_all = new_histogram()
        for lat in self.latency[:self.n_covered][self.outcome[:self.n_covered] == 0].tolist():
            self.hist_all.record_value(max(1, int(lat * _US)))
        ended = np.frombuffer(self.attempt_end, dtype=np.float64) <= cut
        codes = np.frombuffer(self.attempt_code, dtype=np.int16)[ended]
        self.attempts = int(ended.sum())
        self.attempt_status = {Status(int(c)).name.lower(): int(n) for c, n in zip(*np.unique(codes, return_counts=True))}

    def outcomes(self) -> np.ndarray:
        """Each covered request's outcome, as an index into `OUTCOMES`."""
        k = self.n_covered
        return classify(self.outcome[:k], self.latency[:k], self.slo_s)

    def summary_core(self) -> dict[str, Any]:
        """Request counts, outcomes, rates and latency figures (the target adds GPU/cache)."""
        n = self.n_covered
        cat = self.outcomes()
        per = np.bincount(cat, minlength=len(OUTCOMES))
        by = {o: int(c) for o, c in zip(OUTCOMES, per)}
        counts = {
            "unique": int(n),
            "attempts": int(self.attempts),
            "succeeded": by[Outcome.WITHIN_SLO] + by[Outcome.LATE],
            "within_slo": by[Outcome.WITHIN_SLO],
            "late": by[Outcome.LATE],
            "failed": by[Outcome.FAILED],
            "shed": by[Outcome.SHED],
            "timed_out": by[Outcome.TIMED_OUT],
            "unfinished": by[Outcome.LOST],
        }
        failures = n - counts["succeeded"]
        resolved = n - counts["unfinished"]
        d = self.covered_s
        latency, tenant = self.latency[:n], self.tenant[:n]
        ok = cat <= _LATE
        tenants: dict[str, Any] = {}
        ratios = []
        for i, name in enumerate(self.tenants):
            mine = tenant == i
            m = int(mine.sum())
            mine_cat = np.bincount(cat[mine], minlength=len(OUTCOMES))
            w = int(mine_cat[_WITHIN])
            ratio = w / m if m else 1.0
            ratios.append(ratio)
            lat, lat_ok = latency[mine], latency[mine & ok]
            tenants[name] = {
                "unique": m,
                "within_slo": w,
                "goodput_ratio": ratio,
                "p50_s": percentile_of(lat, 50),
                "p99_s": percentile_of(lat, 99),
                "p50_ok_s": percentile_of(lat_ok, 50),
                "p99_ok_s": percentile_of(lat_ok, 99),
                "outcomes": Outcomes.from_counts(dict(zip(OUTCOMES, mine_cat.tolist()))),
            }
        r = np.array(ratios)
        jain = float(r.sum() ** 2 / (len(r) * (r ** 2).sum())) if len(r) and (r ** 2).sum() > 0 else None
        return {
            "offered_rps": n / d if d else 0.0,
            "goodput_rps": counts["within_slo"] / d if d else 0.0,
            "throughput_rps": counts["succeeded"] / d if d else 0.0,
            "goodput_ratio": counts["within_slo"] / n if n else None,
            # Attempts are counted as they end, so over the requests that ended: the same
            # as over all of them unless a run was cut with requests still in flight.
            "amplification": self.attempts / resolved if resolved else None,
            "requests": counts,
            "outcomes": Outcomes.from_counts(by),
            "attempt_status": dict(sorted(self.attempt_status.items())),
            "latency_s": percentiles(self.hist_all, failures),
            "latency_ok_s": percentiles(self.hist_all, 0),
            "attempt_latency_ok_s": percentiles(self.hist_attempt, 0),
            "tenants": tenants,
            "fairness_jain": jain,
            "covered_s": d,
        }

    def latency_cdf(self) -> dict[str, Any]:
        """The end-to-end latency distribution of every unique request, compact
        (for reports' CDF charts; about 200 points whatever the run's size).

        `fraction[i]` of all unique requests were answered successfully within
        `latency_s[i]` seconds (HdrHistogram precision, 3 significant digits,
        the same ranks as `percentiles`). Requests not answered OK have no
        latency, so the curve stops at `answered_fraction` (the OK share; the
        summary's `outcomes` say how the rest ended); the levels are dense in
        the tail (0.9 ... 0.99999 of the answered share), where p99s live.
        """
        n = self.n_covered
        ok = self.hist_all.get_total_count()
        out: dict[str, Any] = {"fraction": [], "latency_s": [], "requests": int(n),
                               "answered_fraction": ok / n if n else None}
        if ok == 0:
            return out
        # Scaled by the answered share, so a run that never answers 20% still
        # gets its points where its curve is, up to where it stops.
        answered = ok / n
        grid = np.concatenate([np.arange(0, 90) / 100, 1.0 - 10.0 ** -np.linspace(1.0, 5.0, 100), [1.0]])
        exact = [q for q in (0.5, 0.9, 0.99, 0.999) if q <= answered]  # the summary's own percentiles
        levels = sorted({float(q) for q in np.round(grid * answered, 9)} | set(exact))
        # Percentile within the answered requests that the all-requests rank lands on.
        pct = {q: min(100.0, 100.0 * max(1, math.ceil(q * n - 1e-9)) / ok) for q in levels}
        values = self.hist_all.get_percentile_to_value_dict(list(pct.values()))
        out["fraction"] = [round(q, 7) for q in levels]
        out["latency_s"] = [values[pct[q]] / _US for q in levels]
        return out

    def timeseries(self) -> dict[str, Any]:
        """Per window of scheduled time: rates, p99 (all requests, and answered OK
        only), each outcome's count, queue depth and GPU busy. An interrupted run's
        series stop at the window it was interrupted in."""
        w = self.window_s
        n = self.n_covered
        k = min(len(self.win_attempts), int(math.ceil(self.covered_s / w)) + 1)
        idx = np.minimum((self.sched[:n] / w).astype(int), k - 1)
        offered = np.bincount(idx, minlength=k)
        cat = self.outcomes()
        ok = cat <= _LATE
        good = np.bincount(idx, weights=(cat == _WITHIN).astype(float), minlength=k)
        done_rel = self.done_s[:n][ok] - self.t0
        thr = np.bincount(np.minimum((done_rel / w).astype(int), k - 1), minlength=k) if ok.any() else np.zeros(k)
        p99, p99_ok = [], []
        order = np.argsort(idx, kind="stable")
        bounds = np.searchsorted(idx[order], np.arange(k + 1))
        lat_sorted = self.latency[:n][order]
        ok_sorted = ok[order]
        for j in range(k):
            chunk = lat_sorted[bounds[j]:bounds[j + 1]]
            p99.append(percentile_of(chunk, 99))
            p99_ok.append(percentile_of(chunk[ok_sorted[bounds[j]:bounds[j + 1]]], 99))
        per_window = np.zeros((len(OUTCOMES), k), dtype=np.int64)
        np.add.at(per_window, (cat, idx), 1)
        depth, busy = self._sampled(len(self.win_attempts))
        return {
            "window_s": w,
            "t_s": [round(j * w, 6) for j in range(k)],
            "offered_rps": (offered / w).tolist(),
            "goodput_rps": (good / w).tolist(),
            "throughput_rps": (np.asarray(thr) / w).tolist(),
            "attempts_rps": (self.win_attempts[:k] / w).tolist(),
            "timeouts_rps": (self.win_timeouts[:k] / w).tolist(),
            "shed_rps": (self.win_shed[:k] / w).tolist(),
            "p99_s": p99,
            "p99_ok_s": p99_ok,
            "outcomes": {o.value: per_window[i].tolist() for i, o in enumerate(OUTCOMES)},
            "queue_depth": depth[:k],
            "gpu_busy": busy[:k],
        }

    def recovery(self, disturbance_end_s: float | None, series: dict[str, Any], threshold: float = 0.99,
                 stable_windows: int = 3) -> dict[str, Any]:
        """Seconds from the disturbance's end until goodput is back to
        >= threshold x offered and stays there for `stable_windows` full
        windows (or to the end of the traffic, if sooner). None: never,
        within the run. Judged on full windows only."""
        out = {"disturbance_end_s": disturbance_end_s, "recovered_after_s": None, "threshold": threshold}
        if disturbance_end_s is None:
            return out
        w = self.window_s
        t = series["t_s"]
        full = [j for j in range(len(t)) if t[j] + w <= self.covered_s + 1e-9]
        ok = [series["goodput_rps"][j] >= threshold * series["offered_rps"][j] for j in full]
        for pos, j in enumerate(full):
            if t[j] + w <= disturbance_end_s + 1e-9:
                continue
            if all(ok[pos:pos + stable_windows]):
                out["recovered_after_s"] = max(0.0, t[j] - disturbance_end_s)
                break
        return out

    def _sampled(self, k: int) -> tuple[list, list]:
        depth = [0.0] * k
        busy = [0.0] * k
        if not self.samples:
            return depth, busy
        prev_t, prev_busy = self.t0, 0.0
        for t, q, b, alive in self.samples:
            j = self._window(t - 1e-9)
            depth[j] = max(depth[j], q)
            span = t - prev_t
            if span > 0:
                busy[j] = min(1.0, (b - prev_busy) / (span * max(alive, 1)))
            prev_t, prev_busy = t, b
        return depth, busy


def classify(outcome: np.ndarray, latency_s: np.ndarray, slo_s: float) -> np.ndarray:
    """Each request's outcome as an index into `OUTCOMES`, from its client outcome code
    (OUTCOME_CODES, PENDING) and latency: exactly one per request, so the counts
    partition the requests."""
    out = np.full(len(outcome), _IDX[Outcome.LOST], dtype=np.intp)  # PENDING: never resolved
    ok = outcome == 0
    out[ok] = np.where(latency_s[ok] <= slo_s, _WITHIN, _LATE)
    out[outcome == 1] = _IDX[Outcome.TIMED_OUT]
    out[outcome == 2] = _IDX[Outcome.SHED]
    out[outcome == 3] = _IDX[Outcome.FAILED]
    return out


def percentile_of(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile (rank ceil(q n), as HdrHistogram's) or None: no values, or an infinite one."""
    if len(values) == 0:
        return None
    return _finite(float(np.percentile(values, q, method="higher")))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
