import json
import math

import pytest

from harness.engine.sim import SimRun, run_sim
from harness.results import RunResult, load_result
from harness.results.io import dumps, load, write_atomic
from targets.spec import resolve_target
from workloads.loader import load_workload

SUMMARY_KEYS = {
    "target", "workload", "mode", "seed", "slo_s", "duration_s", "offered_rps", "goodput_rps",
    "throughput_rps", "amplification", "requests", "latency_s", "latency_ok_s", "gpu", "cache", "tenants",
}


def small(name: str, duration: float, rate: float | None = None):
    return load_workload(name).at_rate(rate, duration)


def test_same_seed_same_summary_different_seed_different():
    wl = small("steady", 3, 2000)
    cfg = resolve_target("naive")
    a, b, c = (run_sim(cfg, wl, seed).summary for seed in (4, 4, 5))
    strip = lambda s: s.model_dump(exclude={"wall_s"})
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


def test_summary_has_the_contract_keys_and_is_json():
    doc = run_sim(resolve_target("hardened"), small("steady", 2, 2000), 1)
    s = doc.to_json()["summary"]  # the file's keys are the contract
    assert SUMMARY_KEYS <= set(s)
    assert set(s["requests"]) >= {"unique", "attempts", "succeeded", "within_slo", "late", "failed", "shed",
                                  "timed_out", "lost"}
    assert set(s["outcomes"]) == {"within_slo", "late", "shed", "timed_out", "failed", "lost"}
    assert sum(v["count"] for v in s["outcomes"].values()) == s["requests"]["unique"]
    assert s["covered_s"] == s["duration_s"]
    assert set(s["latency_s"]) == {"mean", "p50", "p90", "p99", "p999", "max"}
    assert set(s["gpu"]) >= {"count", "utilization", "batch_fill", "wasted_gpu_s"}
    assert set(s["cache"]) >= {"lookups", "hits"}
    for t in s["tenants"].values():
        assert set(t) >= {"unique", "within_slo", "p99_s"}
    json.loads(dumps(doc.to_json()))
    ts = doc.timeseries
    assert len(ts["t_s"]) == len(ts["offered_rps"]) == len(ts["p99_s"]) == len(ts["queue_depth"]) == len(ts["gpu_busy"])


def test_low_traffic_naive_fails_as_item_2_predicts():
    """20 QPS over ten full-batch-only queues: requests wait for strangers,
    time out, retry; goodput far below offered."""
    s = run_sim(resolve_target("naive"), small("low-traffic", 120), 1).summary
    assert s.goodput_ratio < 0.2
    assert s.amplification > 2.0
    assert s.requests.timed_out > 0.1 * s.requests.unique
    assert s.latency_s.p50 is None or s.latency_s.p50 > 1.0


def test_low_traffic_hardened_answers_in_about_one_batch():
    s = run_sim(resolve_target("hardened"), small("low-traffic", 120), 1).summary
    assert s.goodput_ratio >= 0.99
    assert s.latency_s.p99 <= 0.3


def test_unanswered_requests_make_percentiles_never():
    s = run_sim(resolve_target("naive"), small("night", 60), 1).summary
    assert s.requests.succeeded < s.requests.unique * 0.5
    assert s.latency_s.p99 is None and s.latency_s.max is None
    assert s.latency_ok_s.p99 is not None


def test_interrupted_run_leaves_a_valid_partial_result(tmp_path):
    def interrupt(tick: dict) -> None:  # Ctrl-C about 1 s in (the recorder is compiled: no patching it)
        if tick["t_s"] >= 1.0:
            raise KeyboardInterrupt

    run = SimRun(resolve_target("naive"), small("steady", 5, 1000), 1, progress=interrupt)
    doc = run.run()
    assert doc.summary.partial is True
    path = write_atomic(tmp_path / "r.json", doc)
    again = load_result(path)
    assert isinstance(again, RunResult) and again.to_json() == doc.to_json()
    assert again.summary.requests.unfinished > 0


def test_interrupted_run_summarises_only_the_requests_scheduled_before_the_interrupt():
    """Stop hardened once 1,500 answers are in, 2 s into a 5 s schedule: the figures
    cover the requests scheduled by then, over the seconds that ran, not all 5,000
    (which read as goodput ~40% and amplification ~0.4x)."""
    wl = small("steady", 5, 1000)

    def interrupt(tick: dict) -> None:  # Ctrl-C once 1,500 answers are in (2 s into the schedule)
        if tick["finished"] >= 1500:
            raise KeyboardInterrupt

    run = SimRun(resolve_target("hardened"), wl, 1, progress=interrupt)
    doc = run.run()
    s = doc.summary
    cut = s.covered_s
    assert s.partial and 1.5 < cut < 3.0 and cut == pytest.approx(s.end_s)
    scheduled = int((run.schedule.sched_s <= cut).sum())
    assert s.requests.unique == scheduled < len(run.schedule)
    assert s.outcomes.unique == scheduled
    assert s.offered_rps == pytest.approx(scheduled / cut)
    # hardened at 1,000 req/s; the ~0.1 s of requests in flight at the cut count against goodput
    assert s.goodput_ratio > 0.9 and 1.0 <= s.amplification < 1.05
    # The ones still in flight at the cut are lost (never resolved), a few batches' worth.
    assert 0 < s.outcomes.lost.count < 0.2 * scheduled
    assert len(doc.timeseries["t_s"]) == int(math.ceil(cut)) + 1
    assert sum(doc.timeseries["outcomes"]["within_slo"]) == s.outcomes.within_slo.count


@pytest.mark.slow
@pytest.mark.parametrize("target", ["naive", "hardened"])  # one run each, so xdist can run them side by side
def test_gpu_outage_hardened_loses_nothing_naive_loses_in_flight(target):
    s = run_sim(resolve_target(target), small("gpu-outage", 12), 1).summary
    if target == "naive":
        assert s.requests.lost > 0
    else:
        assert s.requests.lost == 0
        assert s.gpu.redispatched > 0


@pytest.mark.slow
@pytest.mark.parametrize("target", ["naive", "hardened"])
def test_slowdown_hardened_bounds_amplification_and_never_runs_an_id_twice(target):
    s = run_sim(resolve_target(target), small("slowdown", 16), 1).summary
    if target == "naive":
        assert s.amplification > 1.5
        assert s.gpu.wasted_breakdown_s.duplicate > 0
    else:
        # the budget: retries <= 10% of first attempts + a floor of 10 per client
        floor = 10 * len(s.tenants) / s.requests.unique
        assert s.amplification <= 1.1 + floor
        assert s.gpu.wasted_breakdown_s.duplicate == 0


def test_result_load_rejects_non_results(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{}")
    with pytest.raises(ValueError, match="not a harness result"):
        load(p)
    p.write_text("{")
    with pytest.raises(ValueError, match="invalid JSON"):
        load(p)


def test_admission_is_not_trapped_after_a_slowdown_at_small_scale():
    """Shedding everything means no batch completes to report that the
    slowdown ended; the measured slowness must fade so admission recovers."""
    wl = load_workload("slowdown").scaled(250 / 8000)
    cfg = resolve_target("hardened", {"peak_qps": 312.5, "api_servers": 1})
    s = run_sim(cfg, wl, 1).summary
    assert s.recovery.recovered_after_s is not None
    assert s.recovery.recovered_after_s <= 2.0


def test_at_rate_scales_the_peak_and_leaves_an_unasked_workload_alone():
    wl = load_workload("spike")
    assert wl.at_rate() is wl
    assert wl.at_rate(1000).peak_rps == pytest.approx(1000)
    cut = wl.at_rate(None, 4)
    assert cut.duration_s == pytest.approx(4) and cut.peak_rps == wl.peak_rps


def test_snapshot_is_what_the_summary_reads():
    """A finished target's snapshot round-trips as plain data (what a live host sends)."""
    from targets.snapshot import TargetSnapshot

    run = SimRun(resolve_target("hardened"), small("steady", 2, 2000), 1)
    doc = run.run()
    snap = run.target.snapshot()
    assert TargetSnapshot.from_dict(json.loads(json.dumps(snap.to_dict()))) == snap
    g = doc.summary.gpu
    assert (g.batches, g.redispatched) == (snap.pool.batches, snap.pool.redispatched)
    assert g.batch_fill == pytest.approx(snap.pool.mean_batch / run.config.batch_size)
    assert doc.summary.requests.lost == snap.lost and g.wasted_gpu_s == snap.wasted.total_s
    assert snap.since(1.0).pool.last_done_s == max(0.0, snap.pool.last_done_s - 1.0)


def test_an_overloaded_run_leaves_its_requests_to_reference_counting_not_the_cyclic_collector():
    """An overloaded naive run ends with thousands of requests parked in its backlog; once its
    result is built they must be freed at once, not left in reference cycles (the target's
    graph) for a collection that walks every one of them (seconds, after a large run)."""
    import gc

    cfg = resolve_target("naive", {"gpus": 4})
    gc.collect()
    result = run_sim(cfg, small("steady", 2, 3000))
    assert result.summary.requests.attempts > 2 * result.summary.requests.unique  # overloaded: a retry storm
    freed = gc.collect()
    assert freed < 2_000, f"{freed} objects were left for the cyclic collector"


def test_a_finished_run_leaves_no_per_request_list_for_the_cyclic_collector():
    """The driver's per-request columns (send times, tenants, sizes, ...: a boxed number per
    request each) sit in its feed's scope, a reference cycle: they must be emptied when the run
    ends, or the collector's next pass walks every one of them (5 ms a run of 100,000)."""
    import gc

    gc.collect()
    gc.disable()  # (no pass may free them before they are looked for)
    try:
        result = run_sim(resolve_target("hardened"), small("steady", 2, 10_000))
        n = result.summary.requests.unique
        assert n > 15_000
        left = [len(o) for o in gc.get_objects() if type(o) is list and len(o) >= n]  # (type: no __class__ read)
    finally:
        gc.enable()
    assert not left, f"lists of {left} items were left alive after the run"
