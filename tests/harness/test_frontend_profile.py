"""`harness profile frontend`'s parts: per-thread CPU and run-queue wait, and the sim knobs it writes."""

from __future__ import annotations

import os
import threading
import time

import pytest

from harness.live.frontend_profile import FrontendCost, FrontendStep, thread_times
from targets.config import TargetConfig


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_thread_times_charge_each_thread_its_own_cpu() -> None:
    pid = os.getpid()
    before = thread_times(pid)
    worker = threading.Thread(target=_burn, args=(0.05,), name="burner")
    worker.start()
    tid = worker.native_id
    worker.join()
    _burn(0.05)
    after = thread_times(pid)
    assert after[pid].cpu_s - before[pid].cpu_s >= 0.04          # this (main) thread burned 50 ms
    assert tid not in after                                       # an ended thread is gone, not an error
    assert after[pid].wait_s >= before[pid].wait_s >= 0


def test_a_running_thread_is_seen_with_its_cpu() -> None:
    pid, seen = os.getpid(), {}

    def work() -> None:
        _burn(0.03)
        seen.update(thread_times(pid))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert seen[worker.native_id].cpu_s >= 0.025 and seen[pid].cpu_s > 0


def test_thread_times_of_no_process_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cannot read"):
        thread_times(2**22 + 7)


def _step(cpu_us: float, wait_us: float) -> FrontendStep:
    return FrontendStep(rate_rps=200, achieved_rps=200, attempts=1000, shed=0, loop_cpu_s=cpu_us / 1e6, loop_wait_s=wait_us / 1e6,
                        workers_cpu_s=0.0002, driver_cpu_s=0.0002, busy=0.5, p99_s=0.01, valid=True, load_1m=1.0)


def test_cost_is_the_loops_occupancy_and_the_knobs_model_the_live_host() -> None:
    step = _step(600, 1900)             # 0.6 ms on a CPU, 1.9 ms waiting for one: 2.5 ms of the loop
    assert step.cost_s == pytest.approx(0.0025)
    cost = FrontendCost(cost_s=step.cost_s, cpu_s=step.loop_cpu_s, shed_cost_s=0.0008, batch_s=0.004, steps=[step])
    assert cost.saturation_rps == pytest.approx(400)
    live = TargetConfig(peak_qps=312.5, api_servers=2, gpus=3, slo_s=0.3, batch_time_s=0.1)
    knobs = cost.sim_knobs(live)
    # the live fleet as it is, its GPUs at the measured batch time, the batcher's wait kept as live's,
    # and one CPU (the host's one event loop) for both API servers
    assert knobs == {"peak_qps": 312.5, "api_servers": 2, "gpus": 3, "max_wait_s": 0.1,
                     "frontend_cost_s": 0.0025, "frontend_cores": 1, "batch_time_s": 0.004,
                     "frontend_shed_cost_s": 0.0008}
    TargetConfig(**knobs)  # valid knobs
    proxy = FrontendCost(cost_s=step.cost_s, cpu_s=step.loop_cpu_s, shed_cost_s=0.0008, batch_s=0.004, steps=[step],
                         proxy_shed_cost_s=0.00004)
    assert proxy.sim_knobs(live) == {**knobs, "frontend_proxy_shed_cost_s": 0.00004}  # a proxy refusal's cost too



def test_the_profile_serves_the_host_it_is_asked_for(monkeypatch) -> None:
    # A live run's front end costs what its own host costs (padded batches, its fleet): the
    # profile must serve that host, here and for its refusal steps.
    from harness.live import frontend_profile as fp

    served: list[tuple] = []

    def fake_serve(target, model, overrides, pad_to_s=0.0, scale=None):
        served.append((pad_to_s, scale))
        raise RuntimeError("stop here")

    monkeypatch.setattr(fp, "serve_process", fake_serve)
    with pytest.raises(RuntimeError):
        fp.profile_frontend("hardened", pad_to_s=None, scale=0.35)
    assert served == [(None, 0.35)]
    with pytest.raises(RuntimeError):
        fp._refusing("hardened", "mlp", [], 100.0, 1.0, None, 0.35)
    assert served[-1] == (None, 0.35)


def test_the_profile_climbs_until_the_loop_is_busy(monkeypatch) -> None:
    # Its figure comes from near saturation: a low step's cost carries the loop's fixed cost.
    from harness.live import frontend_profile as fp

    class Proc:
        pid = 1

    rates: list[float] = []

    def fake_step(pid, port, rate, duration_s, model, warmup_s, seed):
        rates.append(rate)
        busy = min(0.95, 0.1 + rate / 2000)  # a fixed 10% plus 500 us a request
        return FrontendStep(rate_rps=rate, achieved_rps=rate, attempts=int(rate * duration_s), shed=0,
                            loop_cpu_s=busy / rate, loop_wait_s=0.0, workers_cpu_s=0.0, driver_cpu_s=0.0,
                            busy=busy, p99_s=0.1, valid=True, load_1m=0.0)

    monkeypatch.setattr(fp, "serve_process", lambda *a, **k: (Proc(), 1))
    monkeypatch.setattr(fp, "_stop", lambda proc: None)
    monkeypatch.setattr(fp, "_gpu_batches", lambda port: (0.0, 0.0))
    monkeypatch.setattr(fp, "_step", fake_step)
    cost = fp.profile_frontend("hardened", shed=False)
    assert cost.steps[-1].busy >= 0.75 and len(rates) > 2  # not stopped at the second, 45%-busy step
    assert cost.cost_s == pytest.approx(cost.steps[-1].busy / rates[-1])
    assert cost.cost_s < 1.2 * 0.0005  # near the marginal 500 us, not the low steps' 1,167 us


def _cost(cost_us: float, shed_us: float | None, tag: int) -> FrontendCost:
    step = _step(cost_us, 0.0)
    return FrontendCost(cost_s=cost_us / 1e6, cpu_s=cost_us / 1e6, shed_cost_s=None if shed_us is None else shed_us / 1e6,
                        batch_s=0.1 + tag / 1000, steps=[step] * tag)


def test_the_median_of_profiles_takes_each_figure_apart_and_keeps_the_spread() -> None:
    from harness.live.frontend_profile import median_cost

    costs = [_cost(620, 90, 1), _cost(412, None, 2), _cost(494, 70, 3)]
    m = median_cost(costs)
    assert m.cost_s == pytest.approx(494e-6) and m.cpu_s == pytest.approx(494e-6)
    assert m.shed_cost_s == pytest.approx(80e-6)          # the median of those measured: 90 and 70
    assert m.batch_s == pytest.approx(0.102)
    assert len(m.steps) == 3                              # the steps of the profile whose cost is the median
    assert m.profiles_s == pytest.approx((620e-6, 412e-6, 494e-6))
    even = median_cost(costs + [_cost(700, None, 4)])
    assert even.cost_s == pytest.approx((494e-6 + 620e-6) / 2) and len(even.steps) == 3  # lower middle's steps
    assert median_cost([costs[0]]).cost_s == costs[0].cost_s
    with pytest.raises(ValueError, match="no profiles"):
        median_cost([])


def test_profiles_are_fresh_hosts_one_after_another(monkeypatch) -> None:
    from harness.live import frontend_profile as fp

    hosts: list[int] = []
    real = fp.profile_frontend

    def one(*args, **kw):
        if kw.get("profiles", 1) != 1:
            return real(*args, **kw)
        hosts.append(len(hosts))
        return _cost([600, 400, 500][len(hosts) - 1], 50, 1)

    monkeypatch.setattr(fp, "profile_frontend", one)
    m = real("hardened", profiles=3)
    assert hosts == [0, 1, 2] and m.cost_s == pytest.approx(500e-6) and m.profiles_s == pytest.approx((6e-4, 4e-4, 5e-4))
    with pytest.raises(ValueError, match="profiles must be >= 1"):
        real("hardened", profiles=0)


def test_the_cli_prints_every_profile_and_knobs_for_the_asked_fleet(monkeypatch) -> None:
    from typer.testing import CliRunner

    from harness.cli import app
    from harness.live import frontend_profile as fp
    from harness.live.scaling import shrink
    from targets.spec import resolve_target

    asked: dict = {}

    def fake(target, **kw):
        asked.update(kw)
        m = fp.median_cost([_cost(600, 80, 1), _cost(400, 60, 1), _cost(500, 70, 1)])
        return m

    monkeypatch.setattr(fp, "profile_frontend", fake)
    got = CliRunner().invoke(app, ["profile", "frontend", "--profiles", "3", "--scale", "0.35"])
    assert got.exit_code == 0, got.output
    assert asked == {"profiles": 3, "pad_to_s": None, "scale": 0.35}   # the padded host of that scale
    assert "3 profiles, the loop's us per request: 600, 400, 500" in got.output
    assert "500 us of the loop per request at the busiest step (median)" in got.output
    fleet, _ = shrink(resolve_target("hardened", {}), 0.35)
    assert f"--set gpus={fleet.fleet_gpus}" in got.output and "--set frontend_cost_s=0.0005" in got.output
    bad = CliRunner().invoke(app, ["profile", "frontend", "--profiles", "0"])
    assert bad.exit_code != 0 and "--profiles must be >= 1" in bad.output
