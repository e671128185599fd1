"""Run a fleet of LLM engines behind one router over one fleet schedule, on a lean virtual clock.

Each replica is a scheduler (`targets.llm.create_scheduler`) with its own prefix
cache; the router (`targets.llm.routing`) places each request at its arrival,
reading the fleet through `_View` (outstanding requests and tokens as the router
counts them, each replica's cached leading blocks). Events are arrivals, step ends
(a heap of (end, replica)) and the day's lost replica: at `lose_replica_at_s` the
replica stops, every request it held is lost (the client sees an error) and the
router stops sending to it; its cache goes with it. The loop never decides policy;
the policies never see the clock. The run stops when every request has finished or
at `duration + drain_s` (then what is left is `unfinished`).

The per-request costs outside the engines (`FleetSpec.front_in_s`: the engine's front
end `StepCost.frontend_in_s` plus the router's `router_in_s`; `front_out_s` likewise)
apply at the edges, as one engine's sim applies its front end (`harness.engine.llm_run`):
the router and the replica see each request `front_in_s` after its scheduled start, and
the trace hands back every sequence in the client's view, arrival as scheduled and
token times `front_out_s` later than the engine made them. A fleet with measured front
ends (`FleetSpec.front_in_samples`, `front_out_samples`) draws each request's own instead.
A lone request's TTFT is then front_in_s + its prefill (and `StepCost.wake_s`: a step
after idle) + front_out_s; TPOT and ITL do not move.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np
from hdrh.histogram import HdrHistogram

from harness.engine.hdr import new_histogram
from harness.engine.llm_run import count_gaps, record_gaps, to_client_view
from targets.llm import Sequence, Step, create_scheduler
from targets.llm.fleet import FleetSpec
from targets.llm.prefix_cache import PrefixCache, PrefixStats, chain_hashes
from targets.llm.routing import Routed, Router
from workloads.llm_days import FleetSchedule

__all__ = ["FleetTrace", "simulate_fleet"]


class PrefixFigures(Protocol):
    """What a replica's figures read of its prefix cache: its counters (`PrefixCache` in sim; a live
    replica's counted figures, harness.analysis.llm.fleet_live)."""

    stats: PrefixStats


@dataclass
class ReplicaTrace:
    routed: int = 0
    busy_s: float = 0.0
    steps: int = 0
    preemptions: int = 0
    alive: bool = True
    cache: PrefixFigures | None = None


@dataclass
class FleetTrace:
    """The sequences (times, `replica`, `cached_tokens`) and per-replica counters."""

    seqs: list[Sequence]
    lost: list[bool]
    duration_s: float
    end_s: float
    itl: HdrHistogram
    replicas: list[ReplicaTrace] = field(default_factory=list)
    spills: int = 0


class _View:
    """What the router reads: the loop's own counts and the replicas' caches."""

    def __init__(self, n: int, caches: list[PrefixCache | None]) -> None:
        self.alive = [True] * n
        self.outstanding_requests = [0] * n
        self.outstanding_tokens = [0] * n
        self._caches = caches

    def cached_blocks(self, replica: int, names: tuple[int, ...]) -> int:
        cache = self._caches[replica]
        return cache.cached_depth(names) if cache is not None else 0


def simulate_fleet(fleet: FleetSpec, schedule: FleetSchedule, drain_s: float = 120.0) -> FleetTrace:
    """Serve `schedule` with `fleet`; deterministic (no randomness in the loop)."""
    if schedule.block_size != fleet.engine.block_size:
        raise ValueError(f"schedule blocks of {schedule.block_size} tokens, engine blocks of "
                         f"{fleet.engine.block_size}: build the schedule with the engine's block size")
    n = fleet.replicas
    engines = [create_scheduler(fleet.engine, schedule.tenants) for _ in range(n)]
    cores = [getattr(e, "inner", e) for e in engines]
    caches: list[PrefixCache | None] = [getattr(c, "prefix", None) for c in cores]
    reps = [ReplicaTrace(cache=cache) for cache in caches]
    view = _View(n, caches)
    router = fleet.new_router()
    cost = fleet.engine.cost
    front_in, front_out = _front_ends(fleet, len(schedule.arrival_s))
    arrival = (schedule.arrival_s + front_in).tolist()
    prompts, outputs = schedule.prompt_tokens.tolist(), schedule.output_tokens.tolist()
    tenants, convs = schedule.tenant.tolist(), schedule.conversation.tolist()
    seqs = [Sequence(i, arrival[i], prompts[i], outputs[i], tenants[i]) for i in range(len(arrival))]
    lost = [False] * len(seqs)
    duration, stop = schedule.duration_s, schedule.duration_s + drain_s
    trace = FleetTrace(seqs, lost, duration, stop, new_histogram(), reps)
    itl_us: dict[int, int] = {}   # gap in us -> tokens (count_gaps), recorded at the end
    in_flight: list[Step | None] = [None] * n
    epoch = [0] * n               # a heap entry of an older epoch is stale (its replica was lost)
    armed = [False] * n           # the replica has an event on the heap (a step's end or a wake-up)
    last_end = [-math.inf] * n    # when each replica's last step ended (a step after idle pays cost.wake_s)
    heap: list[tuple[float, int, int]] = []
    fail_at = schedule.lose_replica_at_s if schedule.lose_replica_at_s is not None and n > 1 else math.inf

    def kick(r: int, t: float) -> None:
        step = engines[r].schedule(t)
        if step is None:
            wake = engines[r].wake_at()
            if wake is not None:
                heapq.heappush(heap, (max(wake, t), r, epoch[r]))
                armed[r] = True
            return
        dt = cost.step_s(step.prefill_tokens, step.decode_seqs, step.context_tokens, t - last_end[r])
        in_flight[r] = step
        reps[r].busy_s += dt
        reps[r].steps += 1
        heapq.heappush(heap, (t + dt, r, epoch[r]))
        armed[r] = True

    def settle(seq: Sequence, r: int) -> None:
        view.outstanding_requests[r] -= 1
        view.outstanding_tokens[r] -= seq.prompt_tokens + seq.output_tokens

    i, total, t = 0, len(seqs), 0.0
    while True:
        t_arr = arrival[i] if i < total else math.inf
        t_step = heap[0][0] if heap else math.inf
        t = min(t_arr, t_step, fail_at)
        if t == math.inf or t > stop:
            break
        if t == fail_at and fail_at <= t_step and fail_at <= t_arr:
            _lose(0, engines, cores, reps, view, lost, settle, router)
            epoch[0] += 1
            in_flight[0], armed[0] = None, False
            fail_at = math.inf
        elif t_step <= t_arr:
            _, r, ep = heapq.heappop(heap)
            if ep != epoch[r]:
                continue
            armed[r] = False
            step, in_flight[r] = in_flight[r], None
            if step is not None:
                last_end[r] = t
                out = engines[r].complete(step, t)
                count_gaps(itl_us, out.gaps)
                for seq in out.finished:
                    settle(seq, r)
            kick(r, t)
        else:
            seq = seqs[i]
            seq.block_hashes = chain_hashes(schedule.block_ids[i])
            prompt_names = seq.block_hashes[:seq.prompt_tokens // schedule.block_size]
            r = router.route(Routed(i, convs[i], prompt_names, seq.prompt_tokens, seq.output_tokens), view)
            seq.replica = r
            reps[r].routed += 1
            view.outstanding_requests[r] += 1
            view.outstanding_tokens[r] += seq.prompt_tokens + seq.output_tokens
            if not engines[r].add(seq, t):
                settle(seq, r)
            elif not armed[r]:
                kick(r, t)
            i += 1
    trace.end_s = min(t, stop)
    record_gaps(trace.itl, itl_us)
    trace.spills = getattr(router, "spills", 0)
    for rep, core in zip(reps, cores):
        rep.preemptions = getattr(core, "preemptions", 0)
    if np.any(front_in) or np.any(front_out):
        to_client_view(seqs, schedule.arrival_s.tolist(), front_out if isinstance(front_out, float) else
                       front_out.tolist())
    return trace


def _front_ends(fleet: FleetSpec, n: int) -> tuple[Any, Any]:
    """Each request's way in and way out (s): the fleet's constants, or draws from its measured samples
    (a fixed seed: one fleet and day, one result) with the router's cost added."""
    if not fleet.front_in_samples and not fleet.front_out_samples:
        return fleet.front_in_s, fleet.front_out_s
    rng = np.random.default_rng(0x5EED)

    def draws(samples: tuple[float, ...], constant: float, router: float) -> Any:
        return rng.choice(np.asarray(samples), n) + router if samples else np.full(n, constant + router)

    return (draws(fleet.front_in_samples, fleet.engine.cost.frontend_in_s, fleet.router_in_s),
            draws(fleet.front_out_samples, fleet.engine.cost.frontend_out_s, fleet.router_out_s))


def _lose(r: int, engines: list[Any], cores: list[Any], reps: list[ReplicaTrace], view: _View, lost: list[bool],
          settle: Callable[[Sequence, int], None], router: Router) -> None:
    """Replica `r` stops: what it held is lost; the router is told (its table forgets the replica)."""
    core = cores[r]
    held = list(core.run_list) + list(core.waiting)
    for seq in held:
        if not seq.done:
            lost[seq.id] = True
            settle(seq, r)
    view.alive[r] = False
    reps[r].alive = False
    forget = getattr(router, "forget", None)
    if forget is not None:
        forget(r)
    engines[r] = _Dead()


class _Dead:
    """A lost replica: it takes nothing and runs nothing."""

    def add(self, seq: Sequence, now: float) -> bool:
        raise AssertionError("a router sent a request to a lost replica")

    def schedule(self, now: float) -> None:
        return None

    def wake_at(self) -> None:
        return None
