import math

import numpy as np

from harness.engine.recorder import Recorder, new_histogram, percentiles
from targets.protocol import Status


def test_percentiles_count_unanswered_requests_as_infinite():
    h = new_histogram()
    for ms in range(1, 101):  # 1..100 ms
        h.record_value(ms * 1000)
    assert math.isclose(percentiles(h)["p50"], 0.05, rel_tol=0.001)  # HdrHistogram: 3 significant digits
    with_fail = percentiles(h, failures=2)  # 102 requests, the slowest 2 never answered
    assert with_fail["p99"] is None and with_fail["max"] is None and with_fail["mean"] is None
    assert math.isclose(with_fail["p90"], 0.092, rel_tol=0.01)


def _rec(duration=30):
    return Recorder(np.zeros(1), np.zeros(1, dtype=int), ("a",), 0.3, duration, 1.0)


def _series(good):
    return {"t_s": list(range(len(good))), "offered_rps": [100.0] * len(good), "goodput_rps": good}


def test_recovery_needs_stable_windows_after_the_disturbance():
    bad, ok = 10.0, 100.0
    good = [ok] * 10 + [bad] * 14 + [ok] * 5 + [bad]  # back at 24; last window is an end-of-run edge
    r = _rec(30).recovery(20.0, _series(good))
    assert r["recovered_after_s"] == 4.0
    flapping = [ok] * 10 + [bad] * 10 + [ok, bad] * 5
    assert _rec(30).recovery(20.0, _series(flapping))["recovered_after_s"] is None
    assert _rec(30).recovery(None, _series(good))["recovered_after_s"] is None


def test_finish_records_latency_from_the_scheduled_start():
    rec = Recorder(np.array([1.0, 2.0]), np.zeros(2, dtype=int), ("a",), 0.3, 5, 1.0)
    rec.finish(0, Status.OK, 1.25, 1)
    rec.finish(1, Status.TIMEOUT, 6.0, 4)
    s = rec.summary_core()
    assert s["requests"]["succeeded"] == 1 and s["requests"]["timed_out"] == 1
    assert math.isclose(s["latency_ok_s"]["p50"], 0.25, rel_tol=0.002)
    assert s["latency_s"]["p99"] is None
