"""The sim's step cost profiled on a live fleet's own replicas, all busy at once: what its day runs on.

`harness profile llm` (`llm_profile.profile_llm`) serves one engine in the profiling
process, its driver and HTTP server beside it: one process and one GIL for the
decoder's thread, the handlers and the client. A fleet's replicas are processes of
their own, driven from another, and share the cores with each other: a step costs
there what it costs with every replica stepping at once, not what it costs alone
in a crowded process. Under load that parted by 3-9x (a profile of 436 us per
prefill token beside 48 us fitted to the same replicas' steps on the day).

`profile_replicas(replica_urls, duration_s)` drives the calibration load
(`llm_profile.CALIBRATION`, prompts as token ids) to every replica at once,
directly (no router: its cost is measured apart, `llm_fleet_cost`), each replica
its own schedule (seed + its index) at `rate_rps` / replicas, so the fleet takes the
calibration's rate in all. A fleet day's prefill reads cached blocks (a
chat turn's earlier turns), so the calibration's prompts do too: each request's
prompt follows one of `HEADS` shared heads (0-192 tokens, by its index), so its
replica's prefix cache holds the head from the second request on and prefill
steps read context far beyond the tokens they compute, which pins the cost's
context term (with no shared head, context and prefill tokens move together in a
prefill step and the fit cannot part them). Then it fits `StepCost.fit_median`
(the median step, not the mean one a preempted thread's long tail pulls up) to
the steps every replica logged over it (`/step_log`) and takes the front end's
medians from each replica's `/request_times` beside the client's times, as
`profile_llm` reads them in process (in: scheduled start to the engine seeing it; out: its first and last
token to the client). The replicas' prefix caches keep the calibration's blocks:
the caller flushes them before a day (`RunningFleet.flush_caches`).
"""

from __future__ import annotations

import asyncio
import math
import statistics
from dataclasses import dataclass, replace
from typing import Any

import aiohttp

from harness.live.openai.drive import drive_stream
from harness.live.openai.stream import Api
from harness.live.llm_profile import CALIBRATION, calibration_schedule
from harness.live.llm_serve import MODEL_NAME
from targets.llm.cost import StepCost
from workloads.llm import LlmSchedule

__all__ = ["FleetProfile", "HEADS", "MAX_PROFILE_S", "calibration_prompt", "profile_replicas"]

MAX_PROFILE_S = 120.0
HEADS = (0, 64, 128, 192)   # shared head tokens, by request index; + 200 prompt + 64 answer fit 512


@dataclass(frozen=True)
class FleetProfile:
    cost: StepCost
    steps: int               # steps fitted, over every replica
    requests: int            # requests whose front end was measured
    front_in_samples: tuple[float, ...] = ()    # each request's way in (s), the cost's frontend_in_s their median
    front_out_samples: tuple[float, ...] = ()   # each first and last token's way out (s)


async def _get(http: aiohttp.ClientSession, url: str, **params: str) -> Any:
    async with http.get(url, params=params, timeout=aiohttp.ClientTimeout(total=10)) as resp:
        return await resp.json()


def front_end(origin_s: float, client: list[tuple[int, float, float, float]],
              engine: dict[str, dict[str, float]]) -> tuple[list[float], list[float]]:
    """Front-end samples of one replica's drive: `client` rows (id, scheduled start from `origin_s`,
    first token, finish: the client's times, nan when unfinished) beside `engine` (its `/request_times`).
    In: per request, scheduled start to arrival; out: per first and last token, engine to client."""
    into, out = [], []
    for rid, start, first, finish in client:
        mine = engine.get(str(rid))   # ids repeat from drive to drive: this one's arrived after its origin
        if mine is None or math.isnan(finish) or mine["arrival_s"] < origin_s:
            continue
        into.append(mine["arrival_s"] - (origin_s + start))
        out.append(origin_s + first - mine["first_token_s"])
        out.append(origin_s + finish - mine["finish_s"])
    return into, out


def calibration_prompt(index: int, tokens: int, replica: int = 0) -> list[int]:
    """Request `index`'s prompt: head `index % len(HEADS)` (the same tokens for every request with that
    head), then `tokens` of its own (printable, by replica and index: no two requests share them)."""
    head = HEADS[index % len(HEADS)]
    k = index % len(HEADS)
    own = [33 + (7 * index + 13 * replica + 31 * i * (i + 1) + k) % 94 for i in range(tokens)]
    return [65 + (k * 5 + i * i) % 26 for i in range(head)] + own


async def _drive(url: str, schedule: LlmSchedule, replica: int) -> tuple[Any, list[str]]:
    def body(seq: Any, tenant: str) -> dict[str, Any]:
        return {"model": MODEL_NAME, "prompt": calibration_prompt(seq.id, seq.prompt_tokens, replica),
                "max_tokens": seq.output_tokens, "stream": True, "user": tenant}

    driven = await drive_stream(url, Api.COMPLETIONS, schedule, body, timeout_s=30.0)
    return driven.trace, driven.errors


async def profile_replicas(replica_urls: list[str], duration_s: float = CALIBRATION.duration_s,
                           rate_rps: float = CALIBRATION.rate_rps, seed: int = 7) -> FleetProfile:
    """See the module doc. ValueError when a drive failed or the steps cannot pin the cost."""
    if not 0 < duration_s <= MAX_PROFILE_S:
        raise ValueError(f"fleet profile: 0-{MAX_PROFILE_S:g} s, got {duration_s:g}")
    if not replica_urls:
        raise ValueError("fleet profile: no replicas")
    n = len(replica_urls)
    async with aiohttp.ClientSession() as http:
        since = [int(info["steps"]) for info in
                 [await _get(http, base + "/get_server_info") for base in replica_urls]]
    schedules = [calibration_schedule(rate_rps / n, duration_s, seed + r) for r in range(n)]
    drives = await asyncio.gather(*(_drive(base + "/v1/completions", s, r)
                                    for r, (base, s) in enumerate(zip(replica_urls, schedules))))
    rows: list[tuple[int, int, int, float, float]] = []
    into: list[float] = []
    out: list[float] = []
    async with aiohttp.ClientSession() as http:
        for base, n_since, (trace, errors) in zip(replica_urls, since, drives):
            if errors:
                raise ValueError(f"fleet profile: {base}: {errors[0]} ({len(errors)} errors)")
            log = await _get(http, base + "/step_log", since=str(n_since))
            rows += [(int(p), int(d), int(c), float(w), float(idle)) for p, d, c, w, idle in log]
            times = await _get(http, base + "/request_times")
            client = [(s.id, s.arrival_s, s.first_token_s, s.finish_s) for s in trace.seqs]
            i, o = front_end(trace.origin_s, client, times)
            into += i
            out += o
    if not into:
        raise ValueError("fleet profile: no request finished: no front end to measure")
    cost = replace(StepCost.fit_wake(rows), frontend_in_s=statistics.median(into),
                   frontend_out_s=statistics.median(out))
    return FleetProfile(cost, len(rows), len(into), tuple(into), tuple(out))
