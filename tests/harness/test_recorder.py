import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.hdr import new_histogram, percentiles
from harness.engine.recorder import OUTCOMES, Recorder, classify
from harness.results.run import Outcome, Outcomes, outcome_at
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


# -- outcome categories -----------------------------------------------------------------------

STATUSES = [Status.OK, Status.TIMEOUT, Status.TOO_MANY, Status.UNAVAILABLE, Status.ERROR, Status.BAD_REQUEST, None]


def _recorded(sched, ends, slo=0.3, tenants=("a", "b")):
    """A recorder fed `ends`: per request (status or None: never finished, latency s)."""
    n = len(sched)
    rec = Recorder(np.array(sched, dtype=float), np.arange(n) % len(tenants), tenants, slo, 10.0, 1.0)
    for i, (status, lat) in enumerate(ends):
        if status is not None:
            rec.finish(i, status, sched[i] + lat, 1)
    return rec


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STATUSES), st.floats(0.0, 5.0)), min_size=0, max_size=60))
def test_outcomes_partition_the_unique_requests(ends):
    sched = sorted(i * 0.1 for i in range(len(ends)))
    s = _recorded(sched, ends).summary_core()
    r, oc = s["requests"], s["outcomes"]
    assert sum(oc.of(o).count for o in Outcome) == r["unique"] == len(ends)
    if ends:
        assert math.isclose(sum(oc.of(o).share for o in Outcome), 1.0)
    assert oc.within_slo.count + oc.late.count == r["succeeded"] == sum(st_ is Status.OK for st_, _ in ends)
    assert oc.shed.count == r["shed"] == sum(st_ is not None and st_.shed for st_, _ in ends)
    assert oc.timed_out.count == sum(st_ is Status.TIMEOUT for st_, _ in ends)
    assert oc.lost.count == r["unfinished"] == sum(st_ is None for st_, _ in ends)
    # late as recorded: answered at sched + lat, its latency that minus sched (1.0 + 0.3 - 1.0 > 0.3)
    assert oc.late.count == r["late"] == sum(st_ is Status.OK and (t + lat) - t > 0.3
                                              for t, (st_, lat) in zip(sched, ends))
    # Per tenant the same partition, and the tenants together are the whole.
    for o in Outcome:
        assert sum(t["outcomes"].of(o).count for t in s["tenants"].values()) == oc.of(o).count


@given(st.lists(st.sampled_from([-1, 0, 1, 2, 3]), max_size=80), st.floats(0.0, 1.0))
def test_classify_gives_every_request_exactly_one_outcome(codes, slo):
    codes = np.array(codes, dtype=np.int8)
    lat = np.where(codes == 0, np.linspace(0, 1, len(codes)), np.inf)
    cat = classify(codes, lat, slo)
    assert len(cat) == len(codes) and ((0 <= cat) & (cat < len(OUTCOMES))).all()
    counts = dict(zip(OUTCOMES, np.bincount(cat, minlength=len(OUTCOMES))))
    ok = codes == 0
    assert counts[Outcome.WITHIN_SLO] + counts[Outcome.LATE] == ok.sum()
    assert counts[Outcome.LATE] == (ok & (lat > slo)).sum()
    assert counts[Outcome.TIMED_OUT] == (codes == 1).sum() and counts[Outcome.SHED] == (codes == 2).sum()
    assert counts[Outcome.FAILED] == (codes == 3).sum() and counts[Outcome.LOST] == (codes == -1).sum()


def test_a_shed_request_is_an_answer_and_only_unanswered_ones_are_never():
    """10 requests: 8 OK (one late), 1 shed, 1 timed out. The all-requests p90 lands on
    the shed one (answered, not OK); p99 on the timed-out one (never answered)."""
    ends = [(Status.OK, 0.1)] * 7 + [(Status.OK, 0.5), (Status.UNAVAILABLE, 0.001), (Status.TIMEOUT, 1.0)]
    s = _recorded([0.0] * 10, ends).summary_core()
    oc = s["outcomes"]
    assert [oc.of(o).count for o in Outcome] == [7, 1, 1, 1, 0, 0]
    assert s["latency_s"]["p90"] is None and oc.at(0.9) is Outcome.SHED
    assert s["latency_s"]["p99"] is None and oc.at(0.99) is Outcome.TIMED_OUT
    assert oc.at(0.8) is Outcome.LATE and oc.at(0.5) is Outcome.WITHIN_SLO
    assert math.isclose(s["latency_ok_s"]["max"], 0.5, rel_tol=0.002)  # the answered-OK figures stay finite


def test_outcome_at_uses_the_percentiles_rank_rule():
    # 100 requests, 1 timed out: p99 (rank 99) is still an OK answer, p999 (rank 100) is not.
    counts = {Outcome.WITHIN_SLO: 99, Outcome.TIMED_OUT: 1}
    assert outcome_at(counts, 0.99) is Outcome.WITHIN_SLO
    assert outcome_at(counts, 0.999) is Outcome.TIMED_OUT
    assert outcome_at({}, 0.5) is None
    assert Outcomes.from_counts({}).within_slo.share == 0.0


def test_cover_summarises_only_the_requests_scheduled_before_the_cut():
    """A run interrupted at 4.95 s of a 10 s schedule: 50 of 100 requests covered, the
    rates over 4.95 s; of the last four, two were still in flight and two were answered
    only while the run shut down (after the cut): all four lost. Attempts count if they
    ended by the cut, per request that ended."""
    sched = [i * 0.1 for i in range(100)]
    ends = [(Status.OK, 0.05)] * 46 + [(Status.TIMEOUT, 1.0)] * 2 + [(None, 0.0)] * 52
    rec = _recorded(sched, ends)
    for _ in range(55):
        rec.attempt(Status.OK, 0.0, 0.05)
    rec.attempt(Status.TIMEOUT, 4.6, 1.0)  # ends at 5.6 s: after the cut
    rec.cover(4.95)  # requests at 0.0 ... 4.9 s
    s = rec.summary_core()
    assert s["requests"]["unique"] == 50 and s["covered_s"] == 4.95
    assert s["outcomes"].within_slo.count == 46 and s["outcomes"].lost.count == 4
    assert s["outcomes"].timed_out.count == 0 and s["latency_ok_s"]["p50"] is not None
    assert math.isclose(s["offered_rps"], 50 / 4.95) and math.isclose(s["goodput_rps"], 46 / 4.95)
    assert s["requests"]["attempts"] == 55 and s["attempt_status"] == {"ok": 55}
    assert math.isclose(s["amplification"], 55 / 46)
    ts = rec.timeseries()
    assert len(ts["t_s"]) == 6 and sum(sum(v) for v in ts["outcomes"].values()) == 50
    assert rec.latency_cdf()["requests"] == 50


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 3_600.0), min_size=0, max_size=300), st.floats(1e-6, 5.0))
def test_bulk_histogram_answers_as_if_each_value_were_recorded(values, scale):
    """The recorder builds its histograms in bulk (one record per bucket); every query
    must answer exactly as per-value recording does."""
    from harness.engine.hdr import US as _US
    from harness.engine.hdr import histogram_of as _histogram_of

    x = np.array(values) * scale  # up to 5 hours: a value past the histogram's hour is dropped by both
    bulk, one_by_one = _histogram_of(x), new_histogram()
    for v in x.tolist():
        one_by_one.record_value(max(1, int(v * _US)))
    assert list(bulk.counts) == list(one_by_one.counts)
    assert bulk.get_total_count() == one_by_one.get_total_count()
    assert np.sum(x <= 3_600.0) <= bulk.get_total_count() <= len(values)  # all within the hour (and a little past)
    assert (bulk.get_min_value(), bulk.get_max_value()) == (one_by_one.get_min_value(), one_by_one.get_max_value())
    assert percentiles(bulk) == percentiles(one_by_one)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=0, max_size=300), st.floats(1e-5, 10.0),
       st.lists(st.floats(0.0, 100.0), max_size=4))
def test_bulk_queries_answer_as_hdrh_does(values, scale, qs):
    """HdrView (numpy) gives hdrh's own percentile, percentile-dict and mean answers."""
    from harness.engine.hdr import HdrView
    from harness.engine.hdr import histogram_of as _histogram_of

    hist = _histogram_of(np.array(values) * scale)
    view = HdrView(hist)
    qs = qs + [0.0, 50.0, 99.0, 100.0]
    for q in qs:
        assert view.value_at_percentile(q) == hist.get_value_at_percentile(q)
    assert view.values_at_percentiles(qs) == hist.get_percentile_to_value_dict(qs)
    assert view.mean() == hist.get_mean_value()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([Status.OK, Status.TIMEOUT, Status.UNAVAILABLE, Status.ERROR]),
                          st.floats(0.0, 5.0), st.integers(0, 9)), min_size=1, max_size=9000),
       st.integers(1, 4000))
def test_finishes_read_back_whenever_asked_as_each_was_written(finishes, read_every):
    """`finish` appends and the arrays are written in bulk (every 4,096, or when one is read):
    whatever the moment of reading, each request reads back what its own finish said."""
    n = len(finishes)
    sched = np.linspace(0.0, 1.0, n)
    rec = Recorder(sched, np.zeros(n, dtype=int), ("a",), 0.3, 2.0, 1.0, t0=0.5)
    codes = {Status.OK: 0, Status.TIMEOUT: 1, Status.UNAVAILABLE: 2, Status.ERROR: 3}
    order = np.random.default_rng(n).permutation(n)  # finishes come in any order
    for k, i in enumerate(order):
        status, done, tries = finishes[i]
        rec.finish(int(i), status, 0.5 + done, tries)
        if k % read_every == 0:  # a mid-run read (a sweep's early stop, warm-up) sees every finish so far
            seen = order[:k + 1]
            assert (rec.outcome[seen] >= 0).all() and rec.finished == k + 1
            assert (rec.outcome[order[k + 1:]] == -1).all()
            assert rec.hist_all.get_total_count() == sum(finishes[j][0] is Status.OK for j in seen)
    for i, (status, done, tries) in enumerate(finishes):
        assert rec.outcome[i] == codes[status] and rec.tries[i] == tries and rec.done_s[i] == 0.5 + done
        if status is Status.OK:
            assert rec.latency[i] == (0.5 + done) - 0.5 - float(sched[i])   # from its scheduled start
        else:
            assert rec.latency[i] == math.inf
    ok = [0.5 + d - 0.5 - float(sched[i]) for i, (s, d, _) in enumerate(finishes) if s is Status.OK]
    assert rec.hist_all.get_total_count() == len(ok)   # rebuilt after the finishes read since


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([Status.OK, Status.TIMEOUT, Status.UNAVAILABLE, Status.ERROR]),
                          st.floats(0.0, 1e6, allow_subnormal=True), st.floats(allow_nan=True)),
                max_size=9000),
       st.integers(1, 5000))
def test_attempts_read_back_in_order_across_chunks_and_reads(attempts, read_every):
    """`attempt` appends and packs 4,096 at a time into chunks joined when read: whatever the
    moment of reading, the arrays hold every attempt so far, in order, each value bit for bit."""
    rec = Recorder(np.zeros(1), np.zeros(1, dtype=int), ("a",), 0.3, 2.0, 1.0)
    for k, (status, sent, latency) in enumerate(attempts):
        rec.attempt(status, sent, latency)
        if k % read_every == 0:
            s, lat, code = rec._attempt_arrays()
            assert len(s) == len(lat) == len(code) == k + 1
    s, lat, code = rec._attempt_arrays()
    want = np.array([a[2] for a in attempts], dtype=np.float64)
    assert s.tolist() == [a[1] for a in attempts]
    assert np.array_equal(lat, want, equal_nan=True) and lat.tobytes() == want.tobytes()
    assert code.tolist() == [int(a[0]) for a in attempts]
    assert rec._attempt_arrays()[0].tolist() == s.tolist()  # a second read, the same


@given(st.lists(st.integers(-2**63, 2**63 - 1)), st.lists(st.integers(-2**15, 2**15 - 1)),
       st.lists(st.floats(allow_nan=True)))
def test_packed_holds_what_an_array_of_the_items_holds(q, h, d):
    from array import array

    from harness.engine.packing import packed
    assert packed("q", q) == array("q", q).tobytes()
    assert packed("h", h) == array("h", h).tobytes()
    assert packed("d", d) == array("d", d).tobytes()
