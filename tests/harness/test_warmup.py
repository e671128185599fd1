"""Live runs measure a warm server: the warm-up's traffic, its figures and the baseline.

Pure parts (the warm-up workload, cold-start figures, counters since a baseline)
run without a clock; one live test drives a real host for a second of warm-up and
a second of traffic and checks that the warm-up stayed out of the run's figures.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine.recorder import Recorder
from harness.live.baseline import snapshot_since, stats_since
from harness.live.host_warmup import length_buckets
from harness.live.warmup import cold_start_figures, opening_rps, warmup_figures, warmup_workload
from targets.protocol import Status
from targets.snapshot import CacheSnapshot, PoolSnapshot, TargetSnapshot, WastedSnapshot
from workloads.loader import load_workload
from workloads.model import WorkloadConfig

RAMP = WorkloadConfig.model_validate({
    "name": "ramp", "phases": [{"kind": "ramp", "duration_s": 10, "from_rps": 0, "to_rps": 100},
                               {"kind": "constant", "duration_s": 5, "rate_rps": 300}],
    "faults": [{"kind": "slowdown", "at_s": 1, "duration_s": 1}],
    "tenants": [{"name": "a", "share": 0.5, "bursts": [{"start_s": 0, "end_s": 3, "factor": 4}]},
                {"name": "b", "share": 0.5}]})


def test_the_warm_up_is_the_opening_rate_with_the_same_tenants_and_no_disturbance() -> None:
    steady = load_workload("steady").at_rate(200, 20)
    wl = warmup_workload(steady, 5)
    assert wl is not None and wl.duration_s == 5 and wl.peak_rps == opening_rps(steady) == 200
    # Gentle on a cold server: a tenth of the rate at first, all of it from half way.
    assert wl.rate(np.array([0.0, 2.5, 4.9])).tolist() == pytest.approx([20.0, 200.0, 200.0])
    assert [t.name for t in wl.tenants] == [t.name for t in steady.tenants]
    # A ramp from nothing warms at its first phase's peak; faults and bursts stay out.
    ramp = warmup_workload(RAMP, 2)
    assert ramp is not None and ramp.peak_rps == 100 and ramp.faults == ()
    assert all(t.bursts == () for t in ramp.tenants) and ramp.tenants[0].share == 0.5
    assert warmup_workload(steady, 0) is None  # --warmup 0: a cold run
    with pytest.raises(ValueError, match=">= 0"):
        warmup_workload(steady, -1)


def _recorder(latencies: list[float | None], duration_s: float) -> Recorder:
    """One request a second (0, 1, 2, ...); None: never answered OK."""
    n = len(latencies)
    rec = Recorder(np.arange(n, dtype=float), np.zeros(n, dtype=int), ("a",), 0.3, duration_s, 1.0)
    for i, lat in enumerate(latencies):
        if lat is not None:
            rec.finish(i, Status.OK, i + lat, 1)
        else:
            rec.finish(i, Status.TIMEOUT, i + 1.0, 2)
    return rec


def test_cold_start_is_the_warm_ups_figures_or_a_cold_runs_first_seconds() -> None:
    warm = _recorder([0.05, 0.01, None, 0.02], 4.0)
    block = warmup_figures(warm, 80.0, drain_s=0.3)
    assert block["requests"] == 4 and block["succeeded"] == 3 and block["rate_rps"] == 80.0
    assert block["p50_s"] == pytest.approx(0.05) and block["p99_s"] is None  # the timeout is infinitely slow
    assert block["p99_ok_s"] == pytest.approx(0.05) and block["drain_s"] == 0.3
    run = _recorder([0.2, 0.1, 0.004, 0.003, 0.002], 5.0)
    assert cold_start_figures(warm, run)["from"] == "warm-up"
    cold = cold_start_figures(None, run, seconds=3.0)  # requests scheduled at 0, 1 and 2 s
    assert cold["from"] == "run" and cold["requests"] == 3
    assert cold["p50_s"] == pytest.approx(0.1) and cold["p99_s"] == pytest.approx(0.2)


def _snap(received: int, batches: int, busy: float, hits: int, lookups: int, alive: int) -> TargetSnapshot:
    return TargetSnapshot(pool=PoolSnapshot(gpus=3, alive=alive, batches=batches, items=4 * batches,
                                            largest_batch=batches, busy_gpu_s=busy, last_done_s=busy),
                          wasted=WastedSnapshot(padding_s=busy / 10), received=received,
                          cache=CacheSnapshot(lookups=lookups, hits=hits, hit_rate=hits / lookups))


def test_counters_count_from_the_baseline_and_states_are_the_ends() -> None:
    before, after = _snap(100, 10, 1.0, 50, 100, 3), _snap(160, 25, 2.5, 53, 130, 2)
    s = snapshot_since(before, after)
    assert s.received == 60 and s.pool.batches == 15 and s.pool.items == 60
    assert s.pool.busy_gpu_s == pytest.approx(1.5) and s.wasted.padding_s == pytest.approx(0.15)
    assert s.pool.alive == 2 and s.pool.gpus == 3 and s.pool.largest_batch == 25 and s.pool.last_done_s == 2.5
    assert s.cache.hits == 3 and s.cache.hit_rate == pytest.approx(0.1)  # 3 of 30, not 53 of 130
    proxy = {"proxy": {"accepted": 4, "failed": 0, "per_api_server": [3, 1]}}
    stats = stats_since({"snapshot": before.to_dict(), "executors": {"batches": 10, "compute_s": 1.0}},
                        {"snapshot": after.to_dict(), "executors": {"batches": 25, "compute_s": 2.0},
                         "proxy": {"accepted": 14, "failed": 1, "per_api_server": [8, 6]}}, proxy)
    assert stats["executors"] == {"batches": 15, "compute_s": 1.0}
    assert stats["proxy"] == {"accepted": 10, "failed": 1, "per_api_server": [5, 5]}


def test_sequence_models_warm_at_each_power_of_two_up_to_their_longest_input() -> None:
    assert length_buckets(128) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert length_buckets(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert length_buckets(None) == []


@pytest.mark.live
def test_a_warm_live_run_leaves_its_warm_up_out_of_the_figures() -> None:
    from harness.live.plan import plan_live

    plan = plan_live("hardened", "steady", seed=3, duration_s=1.0, rate_rps=100.0, device="cpu", pad_to_s=0.0,
                     warmup_s=1.0)
    run = plan.runner()
    res = run.run()
    s, live = res.summary, res.summary.live
    assert not s.partial and not live["cold"]
    w = live["warmup"]
    rate = plan.workload.peak_rps  # 100 req/s asked, snapped to one GPU's worth
    assert w["seconds"] == 1.0 and w["rate_rps"] == pytest.approx(rate) and 0.5 * rate < w["requests"] < 1.5 * rate
    assert live["cold_start"]["from"] == "warm-up" and live["cold_start"]["requests"] == w["requests"]
    host = live["host"]["warmup"]
    assert host["batch_sizes"] == plan.config.batch_size and host["http_status"].get("200", 0) >= 1
    # The run's figures are its own: every request the target received was one of the run's attempts
    # (without the baseline it would count the warm-up's and the host's too), and no run request
    # was answered from the warm-up's under a reused request ID.
    assert 0 < run.snapshot.received <= s.requests.attempts
    # sent, or refused by the client's own throttle before any attempt (tests/harness/test_live.py)
    assert live["sends_measured"] + s.requests.throttled == s.requests.unique == len(run.schedule)
    assert run.snapshot.dedupe.replayed == 0 and run.snapshot.dedupe.conflicts == 0


def test_warmup_contents_never_repeat_the_runs_unique_payloads():
    """A warm-up numbered like the run filled the exact-payload cache with the run's first
    requests (the run's first seconds answered from the cache): unique contents are disjoint."""
    from harness.live.warmup import warmup_schedule
    from workloads.arrivals import build_schedule

    wl = load_workload("spike").model_copy(update={"duration_s": 5.0})
    run = build_schedule(wl, 1)
    warm = warmup_schedule(warmup_workload(wl, 4.0), 2)
    assert wl.payloads.kind == "unique" and len(warm.content) > 100
    assert not set(run.content.tolist()) & set(warm.content.tolist())
    assert len(set(warm.content.tolist())) == len(warm.content)  # still unique among themselves


def test_warmup_shares_a_zipf_catalogue_with_the_run():
    from harness.live.warmup import warmup_schedule
    from workloads.arrivals import build_schedule
    from workloads.model import Payloads

    wl = load_workload("steady").model_copy(update={"duration_s": 5.0, "payloads": Payloads(kind="zipf", catalog_size=50)})
    warm = warmup_schedule(warmup_workload(wl, 4.0), 2)
    run = build_schedule(wl, 1)
    assert set(warm.content.tolist()) & set(run.content.tolist())
    assert int(warm.content.max()) < 50


def test_a_run_against_a_url_salts_its_contents_so_a_servers_cache_cannot_replay_an_earlier_run():
    """Two `harness run URL` with one seed sent the same payloads, and the second was answered
    from the first's cache entries (p50 3.3 ms against 72 ms): each run against a URL moves its
    content ids apart; within a run, equal content still gives an equal body."""
    import random

    from harness.live.payloads import SALT_GROUPS, SALT_STEP, Payloads
    from harness.live.plan import plan_live
    from harness.live.warmup import WARMUP_CONTENT_BASE

    base = Payloads("mlp", seed=1)
    one, two = base.salted(random.Random(1)), base.salted(random.Random(2))
    assert one.content_offset != two.content_offset and base.content_offset == 0
    assert one.body("t0", 7, 1, "a", None) == one.body("t0", 7, 1, "b", None).replace(b'"b"', b'"a"')
    assert one.body("t0", 7, 1, None, None) != two.body("t0", 7, 1, None, None) != base.body("t0", 7, 1, None, None)
    # the transformer's leading token group: k for a salted run's contents, 500 + k for its warm-up's
    words = Payloads("transformer", seed=1).salted(random.Random(3))
    k = words.content_offset // SALT_STEP
    assert 1 <= k <= SALT_GROUPS < WARMUP_CONTENT_BASE // SALT_STEP
    assert words.body("t0", 5, 8, None, None).split(b'"input":[')[1].startswith(b"%d,0,5," % k)
    assert words.body("t0", WARMUP_CONTENT_BASE + 5, 8, None, None).split(b'"input":[')[1].startswith(
        b"%d,0,5," % (500 + k))
    # a run against a URL is salted afresh each time; a run that starts its own host is not
    url = plan_live("http://127.0.0.1:9/predict", "steady", seed=1, duration_s=1.0, rate_rps=10.0)
    offsets = {url.runner().payloads.content_offset for _ in range(4)}
    assert 0 not in offsets and len(offsets) > 1
    hosted = plan_live("hardened", "steady", seed=1, duration_s=1.0, rate_rps=10.0, device="cpu")
    assert hosted.runner().payloads.content_offset == 0
