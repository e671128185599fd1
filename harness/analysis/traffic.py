"""Constant-rate probe traffic: the workload a capacity point and a sweep step run, and how long.

Shared by `capacity` (its fleet search's points) and `sweep` (its rate steps), so the
two agree on what "serves this rate" means: the same ten tenants, the same arrivals,
and a step never shorter than capacity's quick point at that rate (`QUICK_PROBE`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workloads.model import ArrivalProcess, ConstantPhase, Fault, Sizes, Tenant, WorkloadConfig

__all__ = ["QUICK_PROBE", "TENANTS", "ProbeLength", "traffic"]

# Ten equal tenants on ten keep-alive connections each, as in the `steady` scenario:
# one tenant would hit the hardened target's per-tenant cap (70% of peak).
TENANTS: tuple[Tenant, ...] = tuple(Tenant(name=f"t{i}", share=0.1, connections=10) for i in range(10))


def traffic(rate_rps: float, duration_s: float, *, process: ArrivalProcess = ArrivalProcess.POISSON,
            burstiness: float = 1.0, sizes: Sizes | None = None, faults: tuple[Fault, ...] = (),
            name: str = "capacity") -> WorkloadConfig:
    """Constant ``rate_rps`` (requests/s) for ``duration_s`` seconds over ``TENANTS``."""
    return WorkloadConfig(
        name=name, process=process, burstiness=burstiness, tenants=TENANTS,
        phases=(ConstantPhase(duration_s=duration_s, rate_rps=rate_rps),),
        sizes=sizes or Sizes(), faults=faults)


@dataclass(frozen=True)
class ProbeLength:
    """How long a probe at ``rate`` runs: clamp(requests / rate, min_s, max_s) virtual seconds."""

    requests: int
    min_s: float
    max_s: float

    def duration_s(self, rate_rps: float) -> float:
        return min(self.max_s, max(self.min_s, self.requests / rate_rps))


# `harness capacity --quick`'s points (2-5 s), and the shortest a sweep step runs.
QUICK_PROBE = ProbeLength(20_000, 2.0, 5.0)
