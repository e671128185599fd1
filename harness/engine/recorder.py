"""The recorder: everything a run measures, as streaming accumulators.

End-to-end latency runs from each request's *scheduled* start to its final
answer, retries included, so a slow target cannot slow the clock that judges
it (no coordinated omission). Latencies go into HdrHistograms (microsecond
resolution, 3 significant digits); per-request arrays keep what per-window and
per-tenant views need. A request that never succeeded counts as infinitely
slow: a percentile that lands on one is reported as None.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

from targets.protocol import Status

_US = 1_000_000
_MAX_US = 3_600 * _US

OUTCOME_CODES = {Status.OK: 0, Status.TIMEOUT: 1, Status.TOO_MANY: 2, Status.UNAVAILABLE: 2, Status.ERROR: 3, Status.BAD_REQUEST: 3}
PENDING = -1


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

    def _window(self, t: float) -> int:
        return min(len(self.win_attempts) - 1, max(0, int((t - self.t0) / self.window_s)))

    # -- streaming ---------------------------------------------------------------------
    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        self.attempts += 1
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
    def summary_core(self) -> dict[str, Any]:
        """Request counts, rates and latency figures (the target adds GPU/cache)."""
        n = len(self.sched)
        oc = self.outcome
        ok = oc == 0
        within = ok & (self.latency <= self.slo_s)
        counts = {
            "unique": int(n),
            "attempts": int(self.attempts),
            "succeeded": int(ok.sum()),
            "within_slo": int(within.sum()),
            "failed": int((oc == 3).sum()),
            "shed": int((oc == 2).sum()),
            "timed_out": int((oc == 1).sum()),
            "unfinished": int((oc == PENDING).sum()),
        }
        failures = n - counts["succeeded"]
        d = self.duration_s
        tenants: dict[str, Any] = {}
        ratios = []
        for i, name in enumerate(self.tenants):
            mine = self.tenant == i
            m = int(mine.sum())
            w = int((within & mine).sum())
            lat = self.latency[mine]
            p99 = float(np.percentile(lat, 99, method="higher")) if m else None
            ratio = w / m if m else 1.0
            ratios.append(ratio)
            tenants[name] = {
                "unique": m,
                "within_slo": w,
                "goodput_ratio": ratio,
                "p50_s": _finite(float(np.percentile(lat, 50, method="higher"))) if m else None,
                "p99_s": _finite(p99) if p99 is not None else None,
            }
        r = np.array(ratios)
        jain = float(r.sum() ** 2 / (len(r) * (r ** 2).sum())) if len(r) and (r ** 2).sum() > 0 else None
        return {
            "offered_rps": n / d,
            "goodput_rps": counts["within_slo"] / d,
            "throughput_rps": counts["succeeded"] / d,
            "goodput_ratio": counts["within_slo"] / n if n else None,
            "amplification": self.attempts / n if n else None,
            "requests": counts,
            "attempt_status": dict(sorted(self.attempt_status.items())),
            "latency_s": percentiles(self.hist_all, failures),
            "latency_ok_s": percentiles(self.hist_all, 0),
            "attempt_latency_ok_s": percentiles(self.hist_attempt, 0),
            "tenants": tenants,
            "fairness_jain": jain,
        }

    def latency_cdf(self) -> dict[str, Any]:
        """The end-to-end latency distribution of every unique request, compact
        (for reports' CDF charts; about 200 points whatever the run's size).

        `fraction[i]` of all unique requests were answered successfully within
        `latency_s[i]` seconds (HdrHistogram precision, 3 significant digits,
        the same ranks as `percentiles`). Requests never answered successfully
        have no latency, so the curve stops at `answered_fraction`; the levels
        are dense in the tail (0.9 ... 0.99999 of the answered share), where
        p99s live.
        """
        n = len(self.sched)
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
        w = self.window_s
        k = len(self.win_attempts)
        rel = self.sched
        idx = np.minimum((rel / w).astype(int), k - 1)
        offered = np.bincount(idx, minlength=k)
        ok = self.outcome == 0
        within = ok & (self.latency <= self.slo_s)
        good = np.bincount(idx, weights=within.astype(float), minlength=k)
        done_rel = self.done_s[ok] - self.t0
        thr = np.bincount(np.minimum((done_rel / w).astype(int), k - 1), minlength=k) if ok.any() else np.zeros(k)
        p99 = []
        order = np.argsort(idx, kind="stable")
        bounds = np.searchsorted(idx[order], np.arange(k + 1))
        lat_sorted = self.latency[order]
        for j in range(k):
            chunk = lat_sorted[bounds[j]:bounds[j + 1]]
            p99.append(_finite(float(np.percentile(chunk, 99, method="higher"))) if len(chunk) else None)
        depth, busy = self._sampled(k)
        return {
            "window_s": w,
            "t_s": [round(j * w, 6) for j in range(k)],
            "offered_rps": (offered / w).tolist(),
            "goodput_rps": (good / w).tolist(),
            "throughput_rps": (np.asarray(thr) / w).tolist(),
            "attempts_rps": (self.win_attempts / w).tolist(),
            "timeouts_rps": (self.win_timeouts / w).tolist(),
            "shed_rps": (self.win_shed / w).tolist(),
            "p99_s": p99,
            "queue_depth": depth,
            "gpu_busy": busy,
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
        full = [j for j in range(len(t)) if t[j] + w <= self.duration_s + 1e-9]
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
        w = self.window_s
        prev_t, prev_busy = self.t0, 0.0
        for t, q, b, alive in self.samples:
            j = self._window(t - 1e-9)
            depth[j] = max(depth[j], q)
            span = t - prev_t
            if span > 0:
                busy[j] = min(1.0, (b - prev_busy) / (span * max(alive, 1)))
            prev_t, prev_busy = t, b
        return depth, busy


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
