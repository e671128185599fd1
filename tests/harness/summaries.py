"""Hand-built run summaries for tests that judge figures without running a simulation."""

from __future__ import annotations

from typing import Any

from harness.results.run import RunSummary


def summary(unique: int = 1000, within: int = 900, late: int = 50, shed: int = 30, timed_out: int = 20,
            failed: int = 0, unfinished: int = 0, p99_ok: float | None = 0.2,
            tenants: dict[str, Any] | None = None, **extra: Any) -> RunSummary:
    """A run summary whose request counts partition `unique` as given (its outcomes follow)."""
    assert within + late + shed + timed_out + failed + unfinished == unique
    doc: dict[str, Any] = {
        "target": "t", "workload": "w", "mode": "sim", "seed": 1, "slo_s": 0.3, "duration_s": 10.0,
        "offered_rps": unique / 10, "goodput_rps": within / 10, "throughput_rps": (within + late) / 10,
        "goodput_ratio": within / unique, "amplification": 1.0,
        "requests": {"unique": unique, "attempts": unique, "succeeded": within + late, "within_slo": within,
                     "late": late, "failed": failed, "shed": shed, "timed_out": timed_out,
                     "unfinished": unfinished},
        "latency_s": {"p50": 0.1, "p99": None}, "latency_ok_s": {"p50": 0.1, "p99": p99_ok},
        "attempt_latency_ok_s": {},
        "tenants": tenants or {},
        "gpu": {"count": 4, "utilization": 0.5, "batch_fill": 0.5, "batches": 10, "wasted_gpu_s": 0.0,
                "wasted_breakdown_s": {}},
        "cache": {"mode": "off"},
        "end_s": 10.0, "wall_s": 1.0,
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    return RunSummary.model_validate(doc)


def tenant(unique: int, within: int, p99_ok: float | None, p99: float | None = None) -> dict[str, Any]:
    return {"unique": unique, "within_slo": within, "goodput_ratio": within / unique,
            "p99_s": p99, "p99_ok_s": p99_ok}
