"""Part 3 in the product: the pool document and the `harness pool` command.

``pool_document(config)`` wraps ``harness.analysis.gang_pool.compare_policies`` into a
``kind: "pool"`` result document: every policy on the same arrivals, the capacity
condition, and plain-text verdicts (why policies fail). The command parses options
into a ``PoolConfig``, calls it, writes the result file and renders it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

import typer

from harness.results import io as results
from harness.cli.common import JSON, OUT, fail, out
from harness.analysis.gang_pool import ModelSpec, PoolConfig, capacity_check, compare_policies
from targets.gang_schedulers import create_policy, policy_names

__all__ = ["pool_document", "pool_summary"]


def pool_document(config: PoolConfig | None = None, policies: Sequence[str] | None = None) -> dict[str, Any]:
    """Every policy (or ``policies``) on the same seeded arrivals, as a pool document.

    Keys: schema, kind ("pool"), config, capacity (the condition with full batches),
    results {policy: PoolResult dict with Gantt bars}, policies (run, in order),
    skipped {policy: why it cannot run under this config}, meets_slo [policies
    meeting the target for both models], verdict [plain-text lines: why the others
    fail], versions. Raises ValueError for an unknown policy name.
    """
    from reports.pool_console import plain, verdict_lines

    cfg = config or PoolConfig()
    names = list(policy_names() if policies is None else policies)
    unknown = [n for n in names if n not in policy_names()]
    if unknown:
        raise ValueError(f"unknown pool policy {unknown[0]!r}; valid: {', '.join(policy_names())}")
    runnable, skipped = [], {}
    for name in names:
        try:
            create_policy(name, cfg.spec)  # e.g. time-slice refuses a cycle shorter than t_L + t_S
            runnable.append(name)
        except ValueError as exc:
            skipped[name] = str(exc)
    doc: dict[str, Any] = {"schema": results.SCHEMA, "kind": "pool"}
    doc.update(compare_policies(cfg, runnable) if runnable else {
        "config": cfg.to_dict(), "capacity": capacity_check(cfg).to_dict(), "results": {}})
    doc["policies"] = runnable
    doc["skipped"] = skipped
    doc["meets_slo"] = [n for n, r in doc["results"].items() if r["meets_slo"]]
    doc["verdict"] = [plain(line) for line in verdict_lines(doc)]
    doc["versions"] = results.versions()
    return doc


def pool_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without Gantt bars or versions: what `--json` prints."""
    keep = {k: v for k, v in doc.items() if k not in ("results", "versions")}
    keep["results"] = {n: {k: v for k, v in r.items() if k != "gantt"} for n, r in doc["results"].items()}
    return keep


_DEFAULT = PoolConfig()


def pool(
    compare: bool = typer.Option(False, "--compare", help="Run every policy on the same arrivals, side by side."),
    policy: Optional[List[str]] = typer.Option(
        None, "--policy", help=f"Policy to run (repeatable): {', '.join(policy_names())}. Default: proportional."),
    large_rate: float = typer.Option(_DEFAULT.large.rate_rps, "--large-rate", help="Large model: requests/s."),
    large_batch: int = typer.Option(_DEFAULT.large.batch_size, "--large-batch", help="Large model: B."),
    large_time: float = typer.Option(_DEFAULT.large.batch_time_s, "--large-time", help="Large model: s per batch (all GPUs)."),
    small_rate: float = typer.Option(_DEFAULT.small.rate_rps, "--small-rate", help="Small model: requests/s."),
    small_batch: int = typer.Option(_DEFAULT.small.batch_size, "--small-batch", help="Small model: B."),
    small_time: float = typer.Option(_DEFAULT.small.batch_time_s, "--small-time", help="Small model: s per batch (1 GPU)."),
    slo: float = typer.Option(_DEFAULT.slo_s, "--slo", help="Latency target for both models (s)."),
    gpus: int = typer.Option(_DEFAULT.gpus, "--gpus", help="GPUs in the pool (a large batch needs all)."),
    utilization: float = typer.Option(_DEFAULT.target_utilization, "--target-utilization",
                                      help="Capacity condition: demand <= GPUs x this."),
    duration: float = typer.Option(_DEFAULT.duration_s, "--duration", help="Seconds of arrivals (virtual)."),
    seed: int = typer.Option(_DEFAULT.seed, "--seed", help="Seeds both models' Poisson arrivals."),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    html: Optional[Path] = typer.Option(None, "--html", help="Also write an HTML report (Gantt per policy) here."),
) -> None:
    """Part 3: a gang model (all GPUs per batch) and a 1-GPU model on one pool, by policy."""
    # Prints per-model latency, starvation, utilization, idle fragmentation and GPU time
    # per request beside the capacity condition; no arithmetic here (see harness.analysis.gang_pool).
    names = list(policy) if policy else (list(policy_names()) if compare else ["proportional"])
    try:
        cfg = PoolConfig(large=ModelSpec(large_rate, large_batch, large_time),
                         small=ModelSpec(small_rate, small_batch, small_time),
                         slo_s=slo, gpus=gpus, target_utilization=utilization, duration_s=duration, seed=seed)
        doc = pool_document(cfg, names)
    except ValueError as exc:
        fail(str(exc))
    if not doc["policies"]:
        fail("no policy can run under this configuration: " +
             "; ".join(f"{n}: {why}" for n, why in doc["skipped"].items()))
    label = "compare" if len(doc["policies"]) > 1 else doc["policies"][0]
    path = results.write_atomic(out_path or results.default_path("pool", label), doc)
    if html is not None:
        from reports.page import write_html

        write_html([doc], html)
    if as_json:
        sys.stdout.write(json.dumps(results.clean(pool_summary(doc)), indent=1) + "\n")
        return
    from reports.pool_console import render_pool_doc

    render_pool_doc(doc, out)
    if len(doc["policies"]) == 1 and not compare:
        out.print("(--compare runs every policy on the same arrivals)", style="dim", highlight=False)
    out.print(f"result: {path}  (re-render: harness report {path})", highlight=False)
    if html is not None:
        out.print(f"html: {html}", highlight=False)
