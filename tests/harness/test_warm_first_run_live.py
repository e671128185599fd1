"""The first run against a fresh `harness serve hardened --pad-to-s 0` is as fast as the second.

Issue 36 measured the first run's p50 at 2-2.5x the second's. The cause was not warm-up: with
one seed both runs sent the same contents, and the server's cache answered the second run with
the first run's entries (cache off: 50.9 against 51.1 ms; on: 72 against 3.3 ms, and no GPU
time at all by a third run). A run against a URL now salts its contents
(harness.live.payloads.Payloads.salted); this test fails when the first run's p50 is over
2x the second's, as it did before (13.6x unsalted). It does not hold the issue's 1.25x: on a
quiet machine three fresh servers gave first/second p50 1.35x, 1.36x, 1.42x (`benchmarks/
live_repeat.py --served --n 3`, 2026-12-02): about 1 ms of first-run cost is still unexplained
and open (issue 36); that figure is the benchmark's to print, not a timed test's. A few seconds of load per run (5 s warm-up, 4 s run at
200 req/s); about 30 s in all with the server's start.
"""

from __future__ import annotations

import pytest

from harness.live.plan import plan_live
from harness.live.serve_child import start_serve, stop_serve

pytestmark = pytest.mark.live

RATIO = 2.0   # catches a replay of the first run's cache entries (13.6x); today's residue is ~1.36x


def test_the_first_run_on_a_fresh_server_is_not_answered_from_an_earlier_runs_cache() -> None:
    proc, url = start_serve("hardened", ["--pad-to-s", "0"])
    try:
        runs = [plan_live(url, "steady", seed=1, duration_s=4.0, rate_rps=200.0, warmup_s=5.0).runner().run()
                for _ in range(2)]
    finally:
        stop_serve(proc)
    first, second = (r.summary for r in runs)
    assert first.live is not None and second.live is not None
    assert first.live["content_offset"] != second.live["content_offset"]  # each run's contents its own
    assert first.requests.within_slo > 0.9 * first.requests.unique, first.requests
    p50 = (first.latency_s.p50, second.latency_s.p50)
    assert None not in p50
    assert p50[0] <= RATIO * p50[1], (f"first run p50 {p50[0] * 1000:.1f} ms > {RATIO}x the second's "
                                      f"{p50[1] * 1000:.1f} ms")
