"""`--driver-procs N` for LLM URL targets: a run's conversations over N driver processes, merged exactly.

One process keeps a few hundred streams on time; past that its own event loop is the bound. Process
i of N (multiprocessing's spawn: a fresh interpreter, nothing of the parent's loop or sockets) builds
the run's plan itself from the same traffic, mix and seed (`traffic.sessions_plan` is deterministic),
keeps its share (`traffic.Share`: the plan's conversations i, i + N, ... with their starts; its part
of a closed loop's users or of a cap's slots, `load.split_load`), says it is ready, drives its share
from the start time the parent gives (`sessions.drive_sessions(start_at=)`: time.monotonic, one clock
for every process of a machine) and sends back what it saw (`Part`). The parent's loop meanwhile only
waits (and scrapes the server's metrics, when asked: `send_traffic.drive_traffic`).

`merge_parts` makes one `SessionsDriven` of the parts: every request once, in the order of their
starts (ties by process), renumbered; the ITL HdrHistograms added (exact: the histogram of the union,
`driver_procs.merge_histograms`, the request-level driver's); the per-turn gaps joined; counts summed.
`max_in_flight` is the sum of each process's maximum: a bound on the run's, not its count.

Bounds: a process not ready within START_TIMEOUT_S, or not done by `duration_s` + 2 `timeout_s` +
DONE_SLACK_S after the start (the drive's own bound, `sessions`, plus slack), is stopped and the run
fails (`run.ProbeFailed` naming the process), as does a process that exits or raises.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from typing import Any

from harness.engine.llm_run import EngineTrace
from harness.live.driver_procs import merge_histograms
from harness.live.openai.drive import MAX_ERRORS_KEPT, Driven
from harness.live.openai.load import check_procs
from harness.live.openai.run import Prepared, ProbeFailed
from harness.live.openai.sessions import SessionsDriven, TurnRecord
from harness.live.openai.stream import Tally
from harness.live.openai.target import UrlTarget
from targets.llm import Sequence

__all__ = ["DONE_SLACK_S", "START_AHEAD_S", "START_TIMEOUT_S", "ChildSpec", "Part", "drive_over_procs", "drive_share", "merge_parts",
           "plan_share"]

START_TIMEOUT_S = 120.0   # a spawned interpreter imports the driver and builds its plan: slow on a busy machine
START_AHEAD_S = 0.2       # the start is set this far ahead of the last "ready", so every process is waiting
DONE_SLACK_S = 30.0


@dataclass(frozen=True)
class ChildSpec:
    index: int
    procs: int
    target: UrlTarget
    prepared: Prepared       # without its tokenizer: the process loads `target.tokenizer` itself
    traffic: Any             # traffic.Traffic (typed loosely: traffic imports this module's caller)
    mix: str
    duration_s: float
    seed: int
    timeout_s: float


@dataclass
class Part:
    """What one process saw: its requests (ids its own, conversations the plan's), in the order sent."""

    index: int
    seqs: list[Sequence]
    tallies: list[Tally | None]
    asked_tokens: list[int]
    ended_s: list[float]
    sent_s: list[float]
    turns: list[TurnRecord]
    itl_hdr: bytes
    itl_by_turn: dict[int, list[float]]
    end_s: float
    tokens_in_window: int = 0
    prompt_tokens_in_window: int = 0
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    timed_out: int = 0
    cut: int = 0
    http_status: dict[str, int] = field(default_factory=dict)
    conversations: int = 0
    max_in_flight: int = 0
    slot_timeouts: int = 0
    pid: int = 0
    cpu_s: float = 0.0


def _part(index: int, sd: SessionsDriven, ids: range, cpu_s: float) -> Part:
    d, trace = sd.driven, sd.driven.trace
    turns = [replace(t, conversation=ids[t.conversation]) for t in sd.turns]
    return Part(index, trace.seqs, d.tallies, d.asked_tokens, d.ended_s, d.sent_s, turns, trace.itl.encode(), sd.itl_by_turn,
                trace.end_s, trace.tokens_in_window, trace.prompt_tokens_in_window, d.errors, d.error_count,
                d.timed_out, d.cut, dict(d.http_status), sd.conversations, sd.max_in_flight, sd.slot_timeouts,
                os.getpid(), cpu_s)


def plan_share(spec: ChildSpec) -> Any:
    """Share `spec.index` of the run's plan (`traffic.sessions_plan` with `traffic.Share`), built where it
    will be driven: its tokenizer loaded here, nothing of the parent's carried but the spec."""
    from harness.live.openai.prompts import load_tokenizer
    from harness.live.openai.traffic import Share, sessions_plan

    target = spec.target
    prepared = replace(spec.prepared, tokenizer=load_tokenizer(target.tokenizer) if target.tokenizer else None)
    return sessions_plan(target, prepared, spec.traffic, spec.mix, spec.duration_s, spec.seed,
                         Share(spec.index, spec.procs))


def drive_share(spec: ChildSpec, plan: Any, start_at: float) -> Part:
    """Drive a planned share from `start_at` (this machine's time.monotonic) in a loop of its own."""
    from harness.live.driver_loop import new_loop
    from harness.live.openai.sessions import drive_sessions

    target, cpu0 = spec.target, time.process_time()

    async def main() -> SessionsDriven:
        return await drive_sessions(target.url, target.api, plan.conversations, plan.load, plan.request_of,
                                    spec.duration_s, plan.starts_s, target.headers(), spec.timeout_s, plan.opening,
                                    plan.count, start_at=start_at)

    with asyncio.Runner(loop_factory=new_loop) as runner:
        sd = runner.run(main())
    return _part(spec.index, sd, plan.ids, time.process_time() - cpu0)


def child_main(conn: Connection, spec: ChildSpec) -> None:
    """One driver process: plan, "ready", wait for ("go", start), drive, ("done", Part)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C reaches the group; the parent decides
    try:
        plan = plan_share(spec)
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent names it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready",))
    msg = conn.recv()
    if msg[0] != "go":
        return
    try:
        part = drive_share(spec, plan, msg[1])
    except Exception as exc:  # noqa: BLE001
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("done", part))


def _collect(pipes: list[Connection], kind: str, timeout_s: float) -> dict[int, Any]:
    """Each pipe's next message, which must be `kind`; ProbeFailed naming the process otherwise."""
    got: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    while len(got) < len(pipes):
        left = deadline - time.monotonic()
        ready = wait([p for i, p in enumerate(pipes) if i not in got], timeout=max(0.0, left))
        if not ready:
            raise ProbeFailed(f"{len(pipes) - len(got)} driver process(es) not {kind} after {timeout_s:g} s")
        for pipe in ready:
            assert isinstance(pipe, Connection)
            i = pipes.index(pipe)
            try:
                msg = pipe.recv()
            except (EOFError, OSError):
                raise ProbeFailed(f"driver process {i} exited before it was {kind}") from None
            if msg[0] == "error":
                raise ProbeFailed(f"driver process {i}: {msg[1]}")
            got[i] = msg[1] if len(msg) > 1 else None
    return got


async def drive_over_procs(target: UrlTarget, prepared: Prepared, traffic: Any, mix: str, duration_s: float,
                           seed: int, timeout_s: float, procs: int) -> SessionsDriven:
    """The run's traffic over `procs` processes (see the module doc); LoadError when its users or slots
    are fewer than `procs`."""
    check_procs(traffic.load, procs)
    ctx = multiprocessing.get_context("spawn")
    bare = replace(prepared, tokenizer=None)
    pipes: list[Connection] = []
    children = []
    try:
        for i in range(procs):
            mine, theirs = ctx.Pipe(duplex=True)
            spec = ChildSpec(i, procs, target, bare, traffic, mix, duration_s, seed, timeout_s)
            child = ctx.Process(target=child_main, args=(theirs, spec), name=f"harness-llm-driver-{i}", daemon=True)
            child.start()
            theirs.close()
            children.append(child)
            pipes.append(mine)
        await asyncio.to_thread(_collect, pipes, "ready", START_TIMEOUT_S)
        t0 = time.monotonic() + START_AHEAD_S
        for pipe in pipes:
            pipe.send(("go", t0))
        done = await asyncio.to_thread(_collect, pipes, "done", START_AHEAD_S + duration_s + 2 * timeout_s
                                       + DONE_SLACK_S)
    finally:
        for pipe in pipes:
            try:
                pipe.send(("close",))
            except (OSError, ValueError):
                pass
        for child in children:
            child.join(timeout=5.0)
            if child.is_alive():
                child.terminate()
                child.join(timeout=2.0)
            if child.is_alive():
                child.kill()
                child.join()
        for pipe in pipes:
            pipe.close()
    return merge_parts([done[i] for i in range(procs)], duration_s, t0)


def merge_parts(parts: list[Part], duration_s: float, origin_s: float) -> SessionsDriven:
    """One drive of the parts (see the module doc); `origin_s`: the loop time they all started at."""
    trace = EngineTrace([], duration_s, max((p.end_s for p in parts), default=0.0),
                        merge_histograms(p.itl_hdr for p in parts))
    trace.origin_s = origin_s
    trace.tokens_in_window = sum(p.tokens_in_window for p in parts)
    trace.prompt_tokens_in_window = sum(p.prompt_tokens_in_window for p in parts)
    driven = Driven(trace, [], [])
    out = SessionsDriven(driven, conversations=sum(p.conversations for p in parts),
                         max_in_flight=sum(p.max_in_flight for p in parts),
                         slot_timeouts=sum(p.slot_timeouts for p in parts))
    order = sorted((q.arrival_s, n, k) for n, p in enumerate(parts) for k, q in enumerate(p.seqs))
    for _, n, k in order:
        p = parts[n]
        seq = p.seqs[k]
        seq.id = len(trace.seqs)
        trace.seqs.append(seq)
        driven.tallies.append(p.tallies[k])
        driven.asked_tokens.append(p.asked_tokens[k])
        driven.ended_s.append(p.ended_s[k])
        driven.sent_s.append(p.sent_s[k])
        out.turns.append(p.turns[k])
    status: Counter[str] = Counter()
    for p in parts:
        driven.errors.extend(p.errors[:MAX_ERRORS_KEPT - len(driven.errors)])
        driven.error_count += p.error_count
        driven.timed_out += p.timed_out
        driven.cut += p.cut
        status.update(p.http_status)
        for turn, gaps in p.itl_by_turn.items():
            out.itl_by_turn.setdefault(turn, []).extend(gaps)
    driven.http_status = status
    return out
