"""`harness pool`: Part 3, a gang model and a 1-GPU model on one pool, policy by policy.

Parses options into a ``PoolConfig``, calls ``harness.analysis.pool.run_pool_experiment``,
writes the result file and renders it with ``reports.pool``; no arithmetic lives here.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import typer

from harness.analysis.pool import ModelSpec, PoolConfig, run_pool_experiment
from harness.cli.common import HTML, JSON, OUT, QUIET, SEED, bounded, err, fail, one_of, publish
from harness.results import io as results
from targets.gang_schedulers import policy_names

_DEFAULT = PoolConfig()


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], None] | None]:
    """A status line naming the policy being simulated."""
    if not enabled:
        yield None
        return
    with err.status("pool") as status:
        yield lambda name: status.update(f"pool: simulating {name}")


def pool(
    compare: bool = typer.Option(False, "--compare", help="Run every policy on the same arrivals, side by side."),
    policy: Optional[List[str]] = typer.Option(
        None, "--policy", help=f"Policy to run (repeatable): {', '.join(policy_names())}. Default: proportional.",
        callback=one_of("--policy", policy_names())),
    large_rate: float = typer.Option(_DEFAULT.large.rate_rps, "--large-rate", help="Large model: requests/s.",
                                     callback=bounded("--large-rate", ge=0, unit=" req/s")),
    large_batch: int = typer.Option(_DEFAULT.large.batch_size, "--large-batch", help="Large model: B.",
                                    callback=bounded("--large-batch", ge=1)),
    large_time: float = typer.Option(_DEFAULT.large.batch_time_s, "--large-time", help="Large model: s per batch (all GPUs).",
                                     callback=bounded("--large-time", gt=0, unit=" s")),
    small_rate: float = typer.Option(_DEFAULT.small.rate_rps, "--small-rate", help="Small model: requests/s.",
                                     callback=bounded("--small-rate", ge=0, unit=" req/s")),
    small_batch: int = typer.Option(_DEFAULT.small.batch_size, "--small-batch", help="Small model: B.",
                                    callback=bounded("--small-batch", ge=1)),
    small_time: float = typer.Option(_DEFAULT.small.batch_time_s, "--small-time", help="Small model: s per batch (1 GPU).",
                                     callback=bounded("--small-time", gt=0, unit=" s")),
    slo: float = typer.Option(_DEFAULT.slo_s, "--slo", help="Latency target for both models (s).",
                              callback=bounded("--slo", gt=0, unit=" s")),
    gpus: int = typer.Option(_DEFAULT.gpus, "--gpus", help="GPUs in the pool (a large batch needs all).",
                             callback=bounded("--gpus", ge=1, le=4096)),
    utilization: float = typer.Option(_DEFAULT.target_utilization, "--target-utilization",
                                      help="Capacity condition: demand <= GPUs x this.",
                                      callback=bounded("--target-utilization", gt=0, le=1)),
    duration: float = typer.Option(_DEFAULT.duration_s, "--duration", help="Seconds of arrivals (virtual).",
                                   callback=bounded("--duration", gt=0, unit=" s")),
    # The common --seed, with this command's historical default (0) so saved figures stay comparable.
    seed: int = typer.Option(_DEFAULT.seed, "--seed", help=SEED.help),
    as_json: bool = JSON,
    out_path: Optional[Path] = OUT,
    quiet: bool = QUIET,
    html: Optional[Path] = HTML,
) -> None:
    """Part 3: a gang model (all GPUs per batch) and a 1-GPU model on one pool, by policy."""
    names = list(policy) if policy else (list(policy_names()) if compare else ["proportional"])
    try:
        cfg = PoolConfig(large=ModelSpec(large_rate, large_batch, large_time),
                         small=ModelSpec(small_rate, small_batch, small_time),
                         slo_s=slo, gpus=gpus, target_utilization=utilization, duration_s=duration, seed=seed)
        with _progress(not (quiet or as_json) and err.is_terminal) as tick:
            result = run_pool_experiment(cfg, names, on_policy=tick)
    except ValueError as exc:
        fail(str(exc))
    if not result.policies:
        fail("no policy can run under this configuration: " +
             "; ".join(f"{n}: {why}" for n, why in result.skipped.items()))
    label = "compare" if len(result.policies) > 1 else result.policies[0]
    hint = "(--compare runs every policy on the same arrivals)" if len(result.policies) == 1 and not compare else None
    publish(result, out_path or results.default_path("pool", label), html, as_json, hint)
