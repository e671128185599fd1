"""Turn a finished recorder and target into the result document.

Shared by sim and live mode, so both write the same keys. The summary's keys
are a contract that scripts and CI gates rely on (see README, "Summary keys").
"""

from __future__ import annotations

from typing import Any

from harness.engine.recorder import Recorder
from harness.results.run import RunResult, RunSummary
from targets.config import TargetConfig
from targets.spec import flaws_present
from workloads.model import WorkloadConfig


def build_summary(rec: Recorder, cfg: TargetConfig, workload: WorkloadConfig, target: Any, seed: int,
                  mode: str, end_s: float, wall_s: float, partial: bool, series: dict[str, Any]) -> dict[str, Any]:
    core = rec.summary_core()
    core["requests"]["lost"] = target.stats.lost if target else 0
    pool = target.pool if target else None
    # Utilisation over the time the GPUs had work: the traffic's duration, or
    # until the last batch finished if it drained later.
    span = max(pool.stats.last_done_s if pool else 0.0, workload.duration_s)
    gpus = cfg.fleet_gpus
    busy = pool.busy_gpu_seconds() if pool else 0.0
    st = target.stats if target else None
    sizes = pool.stats.batch_sizes if pool else []
    wasted = {
        "duplicate": st.wasted_duplicate_s if st else 0.0,
        "abandoned": st.wasted_abandoned_s if st else 0.0,
        "padding": st.wasted_padding_s if st else 0.0,
    }
    cache = target.cache.stats if target and target.cache else None
    dedupe = target.dedupe.stats if target and target.dedupe else None
    return {
        "target": cfg.name,
        "workload": workload.name,
        "mode": mode,
        "seed": seed,
        "slo_s": cfg.slo_s,
        "duration_s": workload.duration_s,
        **core,
        "gpu": {
            "count": gpus,
            "utilization": busy / (gpus * span) if span else 0.0,
            "batch_fill": (sum(sizes) / len(sizes) / cfg.batch_size) if sizes else 0.0,
            "batches": len(sizes),
            "wasted_gpu_s": sum(wasted.values()),
            "wasted_breakdown_s": wasted,
            "redispatched": pool.stats.redispatched if pool else 0,
        },
        "cache": {
            "mode": cfg.cache.value,
            "lookups": cache.lookups if cache else 0,
            "hits": cache.hits if cache else 0,
            "hit_rate": cache.hit_rate if cache else None,
            "bypassed": cache.bypassed if cache else 0,
        },
        "server": {
            "shed_tenant": st.shed_tenant if st else 0,
            "shed_overload": st.shed_overload if st else 0,
            "expired_dropped": st.expired if st else 0,
            "dedupe_coalesced": dedupe.coalesced if dedupe else 0,
            "dedupe_replayed": dedupe.replayed if dedupe else 0,
        },
        "recovery": rec.recovery(workload.disturbance_end_s(), series),
        "flaws": flaws_present(cfg),
        "end_s": end_s,
        "wall_s": wall_s,
        "partial": partial,
    }


def build_document(rec: Recorder, cfg: TargetConfig, workload: WorkloadConfig, target: Any, seed: int,
                   mode: str, end_s: float, wall_s: float, partial: bool,
                   events: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> RunResult:
    """The whole result of one run (`kind: run`)."""
    series = rec.timeseries()
    summary = build_summary(rec, cfg, workload, target, seed, mode, end_s, wall_s, partial, series)
    if extra:
        summary.update(extra)
    return RunResult(
        summary=RunSummary.model_validate(summary),
        target_config=cfg.model_dump(mode="json"),
        workload_config=workload.model_dump(mode="json"),
        seed=seed,
        mode=mode,
        phases=[{"kind": k, "start_s": a, "end_s": b} for k, a, b in workload.phase_bounds()],
        faults=[f.model_dump(mode="json") for f in workload.faults],
        events=events,
        timeseries=series,
        latency_cdf=rec.latency_cdf(),
    )
