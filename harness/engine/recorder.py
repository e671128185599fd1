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
from typing import Any, Callable, Final

import numpy as np
from hdrh.histogram import HdrHistogram

from harness.engine.grouping import grouped, pair_counts
from harness.engine.hdr import histogram_of, latency_cdf, percentiles
from harness.engine.outcomes import LATE, OUTCOME_CODES, OUTCOME_INDEX, OUTCOMES, PENDING, WITHIN, classify
from harness.engine.packing import drained, joined
from harness.engine.percentiles import percentile_of
from harness.engine.recovery import recovery_of
from harness.engine.samples import samples_per_window
from harness.results.run import Outcome, Outcomes
from targets.client import SinkBase
from targets.protocol import OK, Status


# OUTCOME_CODES as a list indexed by the status's number (compiled: a native list read per
# request, where the dict is a hashed lookup); -1 where no status has that number.
_OUTCOME_OF: Final[list[int]] = [OUTCOME_CODES.get(c, PENDING) for c in range(max(Status) + 1)]  # type: ignore[call-overload]  # a Status is an int
# Attempts, and finishes, appended between two bulk writes into the arrays (`_spill`, `_settle`).
_CHUNK: Final = 4096
# What a buffer's slots are reset to once packed (harness.engine.packing.drained).
_ZEROS: Final[list[float]] = [0.0] * _CHUNK
_INT_ZEROS: Final[list[int]] = [0] * _CHUNK


class Recorder(SinkBase):
    """Collects one run. `n` unique requests, scheduled at `sched_s`."""

    def __init__(self, sched_s: np.ndarray, tenant: np.ndarray, tenants: tuple[str, ...],
                 slo_s: float, duration_s: float, window_s: float, t0: float = 0.0) -> None:
        n = len(sched_s)
        self.sched = sched_s
        self.tenant = tenant
        self.tenants = tenants
        self.slo_s = slo_s
        self.duration_s = duration_s
        self.window_s = window_s
        self.t0 = t0
        # Per request, written once each by `finish` (its final answer) and read through the
        # properties `latency`, `outcome`, `done_s` and `tries`. `finish` appends to typed
        # lists (compiled: native appends; an item store into an array or a memoryview parses
        # or converts its argument through a Python-level call) and the lists are written into
        # the arrays in bulk `_CHUNK` at a time, or when a property is read (`_settle`).
        self._latency_v = np.full(n, math.inf)
        self._outcome_v = np.full(n, PENDING, dtype=np.int8)
        self._done_s_v = np.full(n, math.nan)
        self._tries_v = np.zeros(n, dtype=np.int16)
        # The finishes since the last `_settle`: the first `_fin_n` slots of three lists of
        # `_CHUNK` slots each, written in place (an append to a list emptied by clear() grew
        # it again by reallocation, ~36 times a chunk, each a copy of cold memory).
        self._fin_index: list[int] = list(_INT_ZEROS)
        self._fin_done_s: list[float] = list(_ZEROS)
        self._fin_code: list[int] = list(_INT_ZEROS)  # tries * 8 + outcome code + 1: one small int (cached)
        self._fin_n = 0
        self._hist_all: HdrHistogram | None = None   # built from `latency` when read (hist_all)
        self.attempts = 0
        self.windows = int(math.ceil(duration_s / window_s)) + 1
        self.samples: list[tuple[float, int, float, int]] = []  # (t, queue depth, busy GPU-s, alive GPUs)
        self.finished = 0
        self.covered_s = float(duration_s)  # see cover()
        self.n_covered = n
        # Every attempt, as it ended: when it was sent, how long it took (loop seconds) and
        # its status. Appending is all `attempt` does; every count, window and histogram of
        # attempts is computed from these in bulk when a summary is asked for. They are
        # appended to typed lists (compiled: native appends) and packed into machine values
        # `_CHUNK` at a time (`_spill`), so memory stays 18 bytes an attempt; the packed
        # chunks are joined when read (`_attempt_arrays`), one copy where growing an array
        # chunk by chunk copies it again each time its allocation runs out.
        self._sent_chunks: list[bytes] = []
        self._latency_chunks: list[bytes] = []
        self._code_chunks: list[bytes] = []
        self._sent_buf: list[float] = list(_ZEROS)   # the first `_att_n` slots: as the finishes'
        self._latency_buf: list[float] = list(_ZEROS)
        self._code_buf: list[int] = list(_INT_ZEROS)
        self._att_n = 0
        self._attempt_cut: np.ndarray | None = None   # cover(): the attempts that ended by the cut

    def _windows_of(self, t: np.ndarray) -> np.ndarray:
        """Window index of each loop time in `t` (before the start: 0; after the end: the last)."""
        return np.clip(((t - self.t0) / self.window_s).astype(np.int64), 0, self.windows - 1)

    # -- streaming ---------------------------------------------------------------------
    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        self.attempts += 1
        i = self._att_n
        self._sent_buf[i] = sent_s
        self._latency_buf[i] = latency_s
        self._code_buf[i] = status
        self._att_n = i + 1
        if i + 1 >= _CHUNK:
            self._spill()

    def _spill(self) -> None:
        """Move the attempts written since the last spill into the compact arrays."""
        n = self._att_n
        self._sent_chunks.append(drained("d", self._sent_buf, n, _ZEROS))
        self._latency_chunks.append(drained("d", self._latency_buf, n, _ZEROS))
        self._code_chunks.append(drained("h", self._code_buf, n, _INT_ZEROS))
        self._att_n = 0

    def finish(self, index: int, status: Status, done_s: float, tries: int) -> None:
        """Request `index`'s final answer (once a request)."""
        self.finished += 1
        i = self._fin_n
        self._fin_index[i] = index
        self._fin_done_s[i] = done_s
        number: int = status  # a Status is an int: compiled, then a native list read, not a generic one
        self._fin_code[i] = tries * 8 + _OUTCOME_OF[number] + 1
        self._fin_n = i + 1
        if status is OK:
            self._hist_all = None
        if i + 1 >= _CHUNK:
            self._settle()

    def _settle(self) -> None:
        """Write the finishes appended since the last time into the per-request arrays (an
        OK answer's latency is from its scheduled start, as `finish` would have written it:
        done_s - t0 - sched, the same operations in the same order)."""
        n = self._fin_n
        if not n:
            return
        index = np.frombuffer(drained("q", self._fin_index, n, _INT_ZEROS), dtype=np.int64)
        done = np.frombuffer(drained("d", self._fin_done_s, n, _ZEROS), dtype=np.float64)
        codes = np.frombuffer(drained("q", self._fin_code, n, _INT_ZEROS), dtype=np.int64)
        self._fin_n = 0
        code = (codes & 7) - 1
        self._outcome_v[index] = code
        self._tries_v[index] = codes >> 3
        self._done_s_v[index] = done
        ok = code == 0
        if ok.any():
            at = index[ok]
            self._latency_v[at] = done[ok] - self.t0 - self.sched[at]

    @property
    def latency(self) -> np.ndarray:
        """End-to-end seconds of each request answered OK (inf otherwise), from its scheduled start."""
        self._settle()
        return self._latency_v

    @property
    def outcome(self) -> np.ndarray:
        """Each request's outcome code (OUTCOME_CODES of its final status; PENDING: none yet)."""
        self._settle()
        return self._outcome_v

    @property
    def done_s(self) -> np.ndarray:
        """When each request got its final answer (loop seconds; NaN: not yet)."""
        self._settle()
        return self._done_s_v

    @property
    def tries(self) -> np.ndarray:
        """Attempts each request made (0: refused by the client's own throttle)."""
        self._settle()
        return self._tries_v

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
        self._hist_all = None
        ended = self._attempt_end() <= cut
        self.attempts = int(ended.sum())
        self._attempt_cut = ended

    # -- attempts, in bulk -------------------------------------------------------------------
    def _attempt_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._att_n:
            self._spill()
        return (np.frombuffer(joined(self._sent_chunks), dtype=np.float64),
                np.frombuffer(joined(self._latency_chunks), dtype=np.float64),
                np.frombuffer(joined(self._code_chunks), dtype=np.int16))

    def _attempt_end(self) -> np.ndarray:
        sent, latency, _ = self._attempt_arrays()
        return sent + latency

    @property
    def attempt_status(self) -> dict[str, int]:
        """Attempts by status name (those that ended by the cut, after `cover`)."""
        codes = self._attempt_arrays()[2]
        if self._attempt_cut is not None:
            codes = codes[self._attempt_cut]
        return {Status(int(c)).name.lower(): int(k) for c, k in zip(*np.unique(codes, return_counts=True))}

    @property
    def hist_all(self) -> HdrHistogram:
        """End-to-end latency of the covered requests answered OK."""
        if self._hist_all is None:
            k = self.n_covered
            self._hist_all = histogram_of(self.latency[:k][self.outcome[:k] == 0])
        return self._hist_all

    @property
    def hist_attempt(self) -> HdrHistogram:
        """Latency of every attempt answered OK (not cut by `cover`)."""
        _, latency, codes = self._attempt_arrays()
        return histogram_of(latency[codes == int(Status.OK)])

    def attempt_windows(self) -> dict[str, np.ndarray]:
        """Attempts per window: sent, timed out and shed (by the window they were sent in),
        answered and answered OK within the SLO (by the window the answer came in: what a
        server's counters see, the alert evaluator's SLI)."""
        sent, latency, codes = self._attempt_arrays()
        k = self.windows
        by_sent = self._windows_of(sent)
        by_end = self._windows_of(sent + latency)
        shed = (codes == int(Status.TOO_MANY)) | (codes == int(Status.UNAVAILABLE))
        good = (codes == int(Status.OK)) & (latency <= self.slo_s)
        return {
            "attempts": np.bincount(by_sent, minlength=k),
            "timeouts": np.bincount(by_sent[codes == int(Status.TIMEOUT)], minlength=k),
            "shed": np.bincount(by_sent[shed], minlength=k),
            "answered": np.bincount(by_end, minlength=k),
            "answered_good": np.bincount(by_end[good], minlength=k),
        }

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
            "throttled": int(np.count_nonzero((cat == OUTCOME_INDEX[Outcome.SHED]) & (self.tries[:n] == 0))),
        }
        failures = n - counts["succeeded"]
        resolved = n - counts["unfinished"]
        d = self.covered_s
        latency, tenant = self.latency[:n], self.tenant[:n]
        ok = cat <= LATE
        tenants: dict[str, Any] = {}
        ratios = []
        # Each tenant's outcome counts in one table, and its requests one slice of the requests
        # grouped by tenant, where a mask over every request per tenant was most of a
        # many-tenant run's summary.
        count = len(self.tenants)
        by_tenant = pair_counts(tenant, cat, count, len(OUTCOMES))
        order, bounds = grouped(tenant, count)
        latency_by, ok_by = latency[order], ok[order]
        for i, name in enumerate(self.tenants):
            lo, hi = bounds[i], bounds[i + 1]
            m = hi - lo
            mine_cat = by_tenant[i]
            w = int(mine_cat[WITHIN])
            ratio = w / m if m else 1.0
            ratios.append(ratio)
            lat = latency_by[lo:hi]
            lat_ok = lat[ok_by[lo:hi]]
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
        """The end-to-end latency distribution of every covered request, compact (for reports'
        CDF charts: harness.engine.hdr.latency_cdf)."""
        return latency_cdf(self.hist_all, self.n_covered)

    def timeseries(self) -> dict[str, Any]:
        """Per window of scheduled time: rates, p99 (all requests, and answered OK
        only), each outcome's count, queue depth and GPU busy. An interrupted run's
        series stop at the window it was interrupted in."""
        w = self.window_s
        n = self.n_covered
        k = min(self.windows, int(math.ceil(self.covered_s / w)) + 1)
        idx = np.minimum((self.sched[:n] / w).astype(int), k - 1)
        offered = np.bincount(idx, minlength=k)
        cat = self.outcomes()
        ok = cat <= LATE
        good = np.bincount(idx, weights=(cat == WITHIN).astype(float), minlength=k)
        done_rel = self.done_s[:n][ok] - self.t0
        thr = np.bincount(np.minimum((done_rel / w).astype(int), k - 1), minlength=k) if ok.any() else np.zeros(k)
        p99, p99_ok = [], []
        order, bounds = grouped(idx, k)
        lat_sorted = self.latency[:n][order]
        ok_sorted = ok[order]
        for j in range(k):
            chunk = lat_sorted[bounds[j]:bounds[j + 1]]
            p99.append(percentile_of(chunk, 99))
            p99_ok.append(percentile_of(chunk[ok_sorted[bounds[j]:bounds[j + 1]]], 99))
        per_window = pair_counts(cat, idx, len(OUTCOMES), k)
        depth, busy, alive = samples_per_window(self.samples, self.t0, self.window_s, self.windows)
        att = self.attempt_windows()
        return {
            "window_s": w,
            "t_s": [round(j * w, 6) for j in range(k)],
            "offered_rps": (offered / w).tolist(),
            "goodput_rps": (good / w).tolist(),
            "throughput_rps": (np.asarray(thr) / w).tolist(),
            "attempts_rps": (att["attempts"][:k] / w).tolist(),
            "timeouts_rps": (att["timeouts"][:k] / w).tolist(),
            "shed_rps": (att["shed"][:k] / w).tolist(),
            "p99_s": p99,
            "p99_ok_s": p99_ok,
            "outcomes": {o.value: per_window[i].tolist() for i, o in enumerate(OUTCOMES)},
            "queue_depth": depth[:k],
            "gpu_busy": busy[:k],
            "gpus_alive": alive[:k],
            "answered_rps": (att["answered"][:k] / w).tolist(),
            "answered_good_rps": (att["answered_good"][:k] / w).tolist(),
        }

    def recovery(self, disturbance_end_s: float | None, series: dict[str, Any], threshold: float = 0.99,
                 stable_windows: int = 3) -> dict[str, Any]:
        """When goodput came back after the disturbance (harness.engine.recovery.recovery_of),
        judged on this run's full windows."""
        return recovery_of(series, self.window_s, self.covered_s, disturbance_end_s, threshold, stable_windows)
