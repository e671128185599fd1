"""The simulator against queueing closed forms.

- A full-batch-only queue fed by Poisson arrivals at rate lambda: the k-th
  request of a batch waits for B-k more arrivals, so the mean pre-dispatch
  wait is (B-1)/(2 lambda).
- N such queues behind a connection round robin: each sees lambda/N, so
  N(B-1)/(2 lambda) (each queue's arrivals are a renewal process with mean
  gap N/lambda, and the argument above needs only the mean gap).
- Batch size 1 on one GPU with deterministic service S is M/D/1: mean wait in
  queue rho*S / (2(1-rho)) (Pollaczek-Khinchine).
With plenty of GPUs and a constant batch time, latency = wait + batch time
exactly, so the mean wait is the mean successful latency minus batch_time_s.
"""

from __future__ import annotations

import pytest

from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.model import WorkloadConfig


def _workload(rate: float, duration: float, connections: int) -> WorkloadConfig:
    return WorkloadConfig.model_validate({
        "name": "closed-form",
        "phases": [{"kind": "constant", "duration_s": duration, "rate_rps": rate}],
        "tenants": [{"name": "only", "share": 1.0, "connections": connections}],
    })


def _mean_wait(rate, duration, connections, **knobs) -> tuple[float, int]:
    base = {"cache": "off", "client_retries": 0, "client_timeout_s": 1e6, "batch_time_s": 0.1}
    base.update(knobs)
    doc = run_sim(resolve_target("naive", base), _workload(rate, duration, connections), seed=11)
    s = doc.summary
    return s.latency_ok_s.mean - 0.1, s.requests.succeeded


@pytest.mark.slow
@pytest.mark.parametrize("servers", [1, 4])
def test_full_batch_fill_wait(servers):
    lam, b = 100.0, 8
    wait, n = _mean_wait(lam, 220, servers, api_servers=servers, batch_size=b, gpus=64)
    assert n >= 20_000
    expected = servers * (b - 1) / (2 * lam)
    assert wait == pytest.approx(expected, rel=0.03), (wait, expected)


@pytest.mark.slow
@pytest.mark.parametrize("rho, duration", [(0.5, 10_000), (0.8, 25_000)])
def test_md1_waiting_time(rho, duration):
    s = 0.1
    wait, n = _mean_wait(rho / s, duration, 1, api_servers=1, batch_size=1, gpus=1)
    expected = rho * s / (2 * (1 - rho))
    assert wait == pytest.approx(expected, rel=0.05), (wait, expected, n)
