"""Turn a finished recorder and the target's snapshot into the result document.

Shared by sim and live mode, so both write the same keys. The summary's keys
are a contract that scripts and CI gates rely on (docs/results.md lists them).
"""

from __future__ import annotations

from typing import Any

from harness.engine.recorder import Recorder
from harness.results.run import RunResult, RunSummary
from targets.config import TargetConfig
from targets.snapshot import PoolSnapshot, TargetSnapshot, WastedSnapshot
from targets.spec import flaws_present
from workloads.model import WorkloadConfig

# A run that ended before its target existed (interrupted at once) reports zeros.
_NOTHING = TargetSnapshot(pool=PoolSnapshot(), wasted=WastedSnapshot())


def build_summary(rec: Recorder, cfg: TargetConfig, workload: WorkloadConfig, snap: TargetSnapshot | None,
                  seed: int, mode: str, end_s: float, wall_s: float, partial: bool,
                  series: dict[str, Any]) -> dict[str, Any]:
    """The summary's figures; `snap` is the target's snapshot (None: no target answered).
    Call `rec.cover(...)` first for a partial run (build_document does)."""
    core = rec.summary_core()
    snap = snap or _NOTHING
    pool, wasted, cache, dedupe = snap.pool, snap.wasted, snap.cache, snap.dedupe
    core["requests"]["lost"] = snap.lost
    # Utilisation over the time the GPUs had work: the traffic's duration (what
    # ran of it, when interrupted), or until the last batch finished if later.
    span = max(pool.last_done_s, rec.covered_s)
    gpus = cfg.fleet_gpus
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
            "utilization": pool.busy_gpu_s / (gpus * span) if span else 0.0,
            "batch_fill": (pool.items / pool.batches / cfg.batch_size) if pool.batches else 0.0,
            "batches": pool.batches,
            "wasted_gpu_s": wasted.total_s,
            "wasted_breakdown_s": {"duplicate": wasted.duplicate_s, "abandoned": wasted.abandoned_s,
                                   "padding": wasted.padding_s},
            "redispatched": pool.redispatched,
        },
        "cache": {
            "mode": cfg.cache.value,
            "lookups": cache.lookups if cache else 0,
            "hits": cache.hits if cache else 0,
            "hit_rate": cache.hit_rate if cache else None,
            "bypassed": cache.bypassed if cache else 0,
        },
        "server": {
            "shed_tenant": snap.shed_tenant,
            "shed_overload": snap.shed_overload,
            "expired_dropped": snap.expired,
            "dedupe_coalesced": dedupe.coalesced if dedupe else 0,
            "dedupe_replayed": dedupe.replayed if dedupe else 0,
        },
        "recovery": rec.recovery(workload.disturbance_end_s(), series),
        "flaws": flaws_present(cfg),
        "end_s": end_s,
        "wall_s": wall_s,
        "partial": partial,
    }


def build_document(rec: Recorder, cfg: TargetConfig, workload: WorkloadConfig, snap: TargetSnapshot | None,
                   seed: int, mode: str, end_s: float, wall_s: float, partial: bool,
                   events: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> RunResult:
    """The whole result of one run (`kind: run`); `extra` adds summary keys (live's `live` block).

    A partial run (interrupted at `end_s`, seconds since the schedule's start) is
    summarised over the requests scheduled before then only: rates over the
    covered seconds (`covered_s`), requests still in flight counted as lost.
    """
    if partial:
        rec.cover(end_s)
    series = rec.timeseries()
    summary = build_summary(rec, cfg, workload, snap, seed, mode, end_s, wall_s, partial, series)
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
