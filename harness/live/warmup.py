"""The driver's warm-up: traffic before a live run's clock starts, judged on its own.

Even a host that warmed its models and HTTP path (harness.live.host_warmup)
answers its first seconds of real traffic slower: measured against a fresh
`harness serve hardened --pad-to-s 0` at 200 req/s, a 2 s warm-up still left
the first run's p99 at 26 ms against 5.6 ms for the next, a 5 s one did not.
So a live run first sends `seconds` of the workload's opening rate (same
tenants, same client policy, other arrivals and request IDs), waits for every
answer, and only then starts the run the summary describes. The warm-up ramps
up to that rate over its first half: at full rate from the first request, a
cold server on a loaded 2-core machine tipped into a retry storm (1 s client
timeouts, retries without backoff, hundreds of new connections, 503s) that
outlasted the warm-up and the run after it (p50 0.47 s against 13 ms for the
next run, in 2 of 5 tries at load 15-18). Cold start stays
visible: `cold_start_figures` gives p50 / p99 of the warm-up's requests, or,
for a cold run (`--warmup 0`), of the run's own first seconds (vLLM's bench,
GuideLLM and MLPerf LoadGen exclude warm-up the same way).

The warm-up's payloads are its own: with unique payloads the run numbers its contents
from 0, and a warm-up numbered the same way filled the exact-payload cache with the
run's first requests (measured: spike at --scale 0.2, the run's first 7 s, 10,771
requests, answered from the cache in 7 ms at p99 while the sim, rightly, had no hit).
`warmup_schedule` numbers them from WARMUP_CONTENT_BASE instead; a Zipf catalogue is
shared on purpose (a warm cache is what a warm-up is for).

Pure functions of a workload and of a recorder: no clock, no network.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.engine.percentiles import percentile_of
from harness.engine.recorder import Recorder
from workloads.arrivals import Schedule, build_schedule
from workloads.model import ConstantPhase, RampPhase, WorkloadConfig

__all__ = ["DEFAULT_WARMUP_S", "WARMUP_CONTENT_BASE", "cold_start_figures", "opening_rps", "warmup_figures",
           "warmup_schedule", "warmup_workload"]

# Measured against a fresh `harness serve hardened --pad-to-s 0` at 200 req/s on a quiet 2-core
# machine: after 5 s of warm-up the first run's p99 was still 4-5x a second run's (one late spike,
# 24-25 ms against 5.5 ms); after 10 s it was within 25% (8.1 against 6.7 ms).
DEFAULT_WARMUP_S = 10.0
COLD_START_S = 5.0   # a cold run's cold-start figure: its first seconds
RAMP_FROM = 0.1   # the warm-up's first rate, as a share of the rate it ramps to
# Unique warm-up contents start here: far past any run's count (the schedule caps a run at
# far fewer requests), and for the transformer's token ids (the content's base-1000 digits)
# a leading group of 500 that a run's contents never have.
WARMUP_CONTENT_BASE = 500_000_000


def opening_rps(workload: WorkloadConfig) -> float:
    """The workload's aggregate rate at its start; its first phase's peak when that is 0
    (a ramp from nothing would warm nothing)."""
    rate = float(workload.rate(np.zeros(1))[0])
    return rate if rate > 0 else workload.phases[0].peak_rps


def warmup_workload(workload: WorkloadConfig, seconds: float) -> WorkloadConfig | None:
    """`seconds` of traffic ramping from RAMP_FROM x `workload`'s opening rate up to it
    over the first half, then holding it; same tenants and payload mix, no faults,
    bursts or answers. None for 0 seconds or no traffic."""
    if seconds < 0:
        raise ValueError(f"warm-up must be >= 0 s, got {seconds:g}")
    rate = opening_rps(workload)
    if seconds == 0 or rate <= 0:
        return None
    tenants = tuple(t.model_copy(update={"bursts": ()}) for t in workload.tenants)
    return workload.model_copy(update={
        "name": f"{workload.name} (warm-up)",
        "phases": (RampPhase(duration_s=seconds / 2, from_rps=RAMP_FROM * rate, to_rps=rate),
                   ConstantPhase(duration_s=seconds / 2, rate_rps=rate)),
        "faults": (), "tenants": tenants, "answers": ()})


def _figures(rec: Recorder, first_s: float) -> dict[str, float | int | None]:
    """p50 / p99 (s) of the requests scheduled in the recorder's first `first_s` seconds:
    of all (unanswered ones count as infinitely slow, as in the summary's `latency_s`)
    and of those answered OK (`_ok_s`, as `latency_ok_s`)."""
    k = min(int(np.searchsorted(rec.sched, first_s, side="left")), rec.n_covered)  # a cut run: what it covered
    lat = rec.latency[:k]
    ok = lat[np.isfinite(lat)]
    return {"requests": k, "succeeded": len(ok), "p50_s": percentile_of(lat, 50), "p99_s": percentile_of(lat, 99),
            "p50_ok_s": percentile_of(ok, 50), "p99_ok_s": percentile_of(ok, 99)}


def warmup_schedule(warmup: WorkloadConfig, seed: int) -> Schedule:
    """The warm-up's requests: `build_schedule`'s, with unique contents moved past the run's."""
    sched = build_schedule(warmup, seed)
    if warmup.payloads.kind != "unique":
        return sched
    return replace(sched, content=sched.content + WARMUP_CONTENT_BASE)


def warmup_figures(rec: Recorder, rate_rps: float, drain_s: float) -> dict[str, float | int | None]:
    """The warm-up's own block: its length and rate, its requests and their p50 / p99,
    and `drain_s`, how long after its last scheduled request its last answer came."""
    return {"seconds": rec.duration_s, "rate_rps": rate_rps, **_figures(rec, rec.duration_s),
            "drain_s": drain_s}


def cold_start_figures(warmup: Recorder | None, run: Recorder, seconds: float = COLD_START_S) -> dict:
    """p50 / p99 of the first seconds a fresh host served: the warm-up's requests, or,
    with no warm-up (a cold run), the run's own first `seconds`."""
    if warmup is not None:
        return {"from": "warm-up", "seconds": warmup.duration_s, **_figures(warmup, warmup.duration_s)}
    first = min(seconds, run.duration_s, run.covered_s)
    return {"from": "run", "seconds": first, **_figures(run, first)}
