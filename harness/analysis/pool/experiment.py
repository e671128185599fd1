"""Part 3 in the product: every pool policy on the same arrivals, as one typed `pool` result.

``run_pool_experiment(config, policies)`` runs each policy (``harness.analysis.pool.gang``)
on the same seeded arrivals and returns a ``harness.results.pool.PoolResult``: the
capacity condition, each policy's run with its typed verdict, which policies cannot run
under the config (``skipped``) and which meet the target. ``verdict_digest`` writes the
verdicts as the plain-text lines the result's ``verdict`` key has always held (scripts
and the review read them); the terminal and HTML views word the typed verdicts themselves.
"""

from __future__ import annotations

from typing import Callable, Sequence

from harness.analysis.pool.gang import PoolConfig, capacity_check, generate_arrivals, run_pool
from harness.results.pool import CapacityCondition, PolicyRun, PoolResult, VerdictReason
from targets.gang_schedulers import create_policy, policy_names

__all__ = ["run_pool_experiment", "verdict_digest"]


def run_pool_experiment(config: PoolConfig | None = None, policies: Sequence[str] | None = None,
                        on_policy: Callable[[str], None] | None = None) -> PoolResult:
    """Every policy (or ``policies``, in that order) on the same seeded arrivals.

    ``on_policy(name)`` is called as each policy starts (a progress display).
    Raises ValueError for an unknown policy name. A policy whose constructor refuses
    the config (e.g. time-slice with a cycle shorter than t_L + t_S) is skipped, with why.
    """
    cfg = config or PoolConfig()
    names = list(policy_names() if policies is None else policies)
    unknown = [n for n in names if n not in policy_names()]
    if unknown:
        raise ValueError(f"unknown pool policy {unknown[0]!r}; valid: {', '.join(policy_names())}")
    runnable, skipped = [], {}
    for name in names:
        try:
            create_policy(name, cfg.spec)
            runnable.append(name)
        except ValueError as exc:
            skipped[name] = str(exc)
    arrivals = generate_arrivals(cfg) if runnable else None
    results = {}
    for name in runnable:
        if on_policy is not None:
            on_policy(name)
        results[name] = run_pool(cfg, name, arrivals=arrivals)
    capacity = capacity_check(cfg)
    return PoolResult(config=cfg.to_dict(), capacity=capacity, results=results, policies=runnable,
                      skipped=skipped, meets_slo=[n for n, r in results.items() if r.meets_slo],
                      verdict=verdict_digest(capacity, results, cfg.gpus))


def _s(x: float | None) -> str:
    return "∞" if x is None else f"{x:.2f}"


def verdict_digest(capacity: CapacityCondition, results: dict[str, PolicyRun], gpus: int) -> list[str]:
    """Plain-text lines: the capacity reason when the condition fails, else why each
    failing policy fails (a starving model, or a p99 above the target)."""
    passing = [n for n, r in results.items() if r.meets_slo]
    if not capacity.ok:
        if not passing:
            return [f"every policy fails: {capacity.reason}"]
        return [f"capacity condition fails, yet {', '.join(passing)} met the SLO in this run: {capacity.reason}"]
    lines = []
    for name, r in results.items():
        v = r.verdict
        if r.meets_slo or v is None:
            continue
        if v.reason is VerdictReason.STARVES:
            lines.append(f"{name} fails although capacity suffices: the {v.starving} model starves "
                         f"(longest wait {_s(v.longest_wait_s)} s) while {v.idle_share:.0%} of GPU time "
                         f"sits idle waiting for all {gpus} GPUs at once")
        else:
            lines.append(f"{name} fails: p99 above the {r.config.slo_s:g} s target for {' and '.join(v.late)}")
    return lines
