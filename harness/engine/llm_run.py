"""Run one LLM scheduler over one token schedule on a lean virtual clock.

One engine serves one queue, so the event loop needs no heap: the next event is
either the next arrival or the end of the step in flight. The loop feeds
arrivals to the scheduler, asks it for a step whenever the engine is idle,
prices the step with the cost model, jumps the clock to the step's end and
hands the step back (`complete`). When the scheduler has nothing to run the
clock jumps to the next arrival or the scheduler's own timer (`wake_at`). The
scheduler never sees a clock; this loop never makes a policy decision.

The run stops when every request has finished, or at `duration + drain_s`:
requests still queued or running then are `unfinished`.

The cost's front-end terms (`targets.llm.cost`) are applied at the edges: the
scheduler sees each request `frontend_in_s` after its scheduled start (its
`arrival_s` while it runs, as the live engine's clock would read), and the
trace hands back every sequence in the client's view, arrival as scheduled and
token times `frontend_out_s` later than the engine made them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from harness.engine.hdr import new_histogram, record_counts
from targets.llm import LlmEngineSpec, Sequence, create_scheduler
from workloads.llm import LlmSchedule

__all__ = ["EngineTrace", "count_gaps", "record_gaps", "simulate", "to_client_view"]

_US = 1_000_000


@dataclass
class EngineTrace:
    """What the loop saw: the sequences (with their times) and engine-wide counters."""

    seqs: list[Sequence]
    duration_s: float
    end_s: float
    itl: HdrHistogram
    busy_s: float = 0.0
    steps: int = 0
    decode_rows: int = 0
    tokens_in_window: int = 0
    prompt_tokens_in_window: int = 0
    kv_block_s: float = 0.0        # integral of KV blocks held over time
    kv_blocks: int | None = None
    preemptions: int = 0
    slot_tokens_total: int = 0
    slot_tokens_used: int = 0
    padding_tokens: int = 0
    prefill_tokens: int = 0
    origin_s: float = 0.0          # the clock's reading at t = 0 of this trace (live: the loop's time)


def simulate(spec: LlmEngineSpec, schedule: LlmSchedule, drain_s: float = 120.0) -> EngineTrace:
    """Serve `schedule` with the scheduler `spec` names; deterministic (no randomness in the loop)."""
    sched = create_scheduler(spec, schedule.tenants)
    core = getattr(sched, "inner", sched)  # behind tenant limits: the scheduler that holds the cache
    cost = spec.cost
    front_in, front_out = cost.frontend_in_s, cost.frontend_out_s
    arrival = (schedule.arrival_s + front_in).tolist()
    prompts, outputs, tenants = (schedule.prompt_tokens.tolist(), schedule.output_tokens.tolist(),
                                 schedule.tenant.tolist())
    seqs = [Sequence(i, arrival[i], prompts[i], outputs[i], tenants[i]) for i in range(len(arrival))]
    duration, stop = schedule.duration_s, schedule.duration_s + drain_s
    kv = getattr(core, "kv", None)
    trace = EngineTrace(seqs, duration, stop, new_histogram(), kv_blocks=kv.total if kv else None)
    itl_us: dict[int, int] = {}   # gap in us -> tokens (count_gaps), recorded at the end
    n, i, t = len(seqs), 0, 0.0
    last_end = -math.inf   # when the last step ended (a step after idle pays cost.wake_s)
    while t < stop:
        while i < n and arrival[i] <= t:
            sched.add(seqs[i], arrival[i])
            i += 1
        step = sched.schedule(t)
        if step is None:
            wake = sched.wake_at()
            nxt = min(arrival[i] if i < n else math.inf, wake if wake is not None else math.inf)
            if nxt == math.inf:
                break
            t = max(t, nxt)
            continue
        dt = cost.step_s(step.prefill_tokens, step.decode_seqs, step.context_tokens, t - last_end)
        if kv is not None:
            trace.kv_block_s += kv.used * dt
        t += dt
        last_end = t
        out = sched.complete(step, t)
        trace.busy_s += dt
        trace.steps += 1
        trace.decode_rows += step.decode_seqs
        trace.prefill_tokens += step.prefill_tokens
        if t <= duration:
            trace.tokens_in_window += out.tokens
            trace.prompt_tokens_in_window += step.prefill_tokens - step.padding_tokens
        count_gaps(itl_us, out.gaps)
    record_gaps(trace.itl, itl_us)
    trace.end_s = min(t, stop)
    trace.preemptions = getattr(core, "preemptions", 0)
    for name in ("slot_tokens_total", "slot_tokens_used", "padding_tokens"):
        setattr(trace, name, getattr(core, name, 0))
    if front_in or front_out:
        to_client_view(seqs, schedule.arrival_s.tolist(), front_out)
    return trace


def count_gaps(itl_us: dict[int, int], gaps: dict[float, int]) -> None:
    """Add a step's inter-token gaps (seconds -> tokens) to `itl_us`, in whole microseconds (at
    least 1), for `record_gaps` at the run's end: recorded once a run, where a pure-Python
    HdrHistogram call per distinct gap per step was a sixth of a run."""
    for gap, count in gaps.items():
        us = max(1, round(gap * _US))
        itl_us[us] = itl_us.get(us, 0) + count


def record_gaps(hist: HdrHistogram, itl_us: dict[int, int]) -> None:
    """Record the counted gaps (`count_gaps`) into `hist`: its counts, minimum and maximum are the
    same in any order."""
    record_counts(hist, list(itl_us), list(itl_us.values()))


def to_client_view(seqs: list[Sequence], scheduled_s: list[float], front_out_s: float | list[float]) -> None:
    """Arrivals back to their scheduled starts, tokens to when the client reads them, `front_out_s` later
    (one delay for all, or each request's own); NaN stays NaN."""
    outs = front_out_s if isinstance(front_out_s, list) else [front_out_s] * len(seqs)
    for seq, start, out in zip(seqs, scheduled_s, outs):
        seq.arrival_s = start
        seq.first_token_s += out
        seq.last_token_s += out
        seq.finish_s += out
