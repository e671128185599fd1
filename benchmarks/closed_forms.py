"""Print the simulator's figures beside queueing closed forms (see
tests/harness/test_closed_forms.py for the reasoning)."""

from __future__ import annotations

from harness.engine.sim import run_sim
from targets.spec import resolve_target
from workloads.model import WorkloadConfig


def mean_wait(rate: float, duration: float, connections: int, **knobs) -> float:
    base = {"cache": "off", "client_retries": 0, "client_timeout_s": 1e6, "batch_time_s": 0.1}
    base.update(knobs)
    wl = WorkloadConfig.model_validate({
        "name": "closed-form", "phases": [{"kind": "constant", "duration_s": duration, "rate_rps": rate}],
        "tenants": [{"name": "only", "share": 1.0, "connections": connections}],
    })
    return run_sim(resolve_target("naive", base), wl, seed=11).summary.latency_ok_s.mean - 0.1


def main() -> None:
    print(f"{'case':42} {'sim':>9} {'closed form':>12} {'error':>7}")
    rows = []
    for n in (1, 4):
        rows.append((f"full-batch fill wait, B=8, lambda=100, N={n}",
                     mean_wait(100, 220, n, api_servers=n, batch_size=8, gpus=64), n * 7 / 200))
    for rho, dur in ((0.5, 10_000), (0.8, 25_000)):
        rows.append((f"M/D/1 wait, S=0.1 s, rho={rho}",
                     mean_wait(rho / 0.1, dur, 1, api_servers=1, batch_size=1, gpus=1), rho * 0.1 / (2 * (1 - rho))))
    for name, sim, exact in rows:
        print(f"{name:42} {sim:9.5f} {exact:12.5f} {100 * (sim - exact) / exact:+6.2f}%")


if __name__ == "__main__":
    main()
