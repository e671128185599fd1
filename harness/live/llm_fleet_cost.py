"""The router's own cost per request, measured live: what a front adds to a request beside going direct.

`measure_router_cost(front_url, replica_urls)` sends `probes` short streaming requests
one at a time to each replica directly and the same number through the front (the
project's router or sglang-router: any front that forwards `X-Request-Id`), after one
warm-up request per replica. Each replica's `GET /request_times` gives, on the same
monotonic clock as this process's, when its engine saw each request and made its first
token; beside the client's send and first-chunk times that splits every probe's TTFT
into the way in (send to engine) and the way out (first token to the client). The
router's cost is the front's median minus the direct median, each way (0 at least):
`router_in_s` (reading, parsing, routing, the extra hop) and `router_out_s` (the relay
back), the two fleet knobs the sim adds to its front end (`targets.llm.fleet`).

The probes are one at a time on an idle fleet, so this is the router's cost alone,
not its queueing under the day's load. Each waits `gap_s` (PROBE_GAP_S) after the last
one's answer, as the day's requests (4 rps) mostly do: a request that follows the
last answer on its keep-alive connection within the client's delayed-ACK window
(Linux: 40 ms) meets a front that writes its response head in one segment and has
Nagle on (sglang-router 0.3.2) holding its body until the client ACKs that head, a
full 40 ms later. Back to back, sglang-router's way out read 42 ms over direct; 0.1 s
apart, 0.4-0.7 ms (the chat day reads 2.8-3.6 ms out through it, front end included). Their prompts are shorter than one KV block, so
they leave nothing in any replica's prefix cache; their number is rounded up to whole rounds over the
replicas, so a round-robin front meets the day's first request at the replica it would have. Bounded: `probes` <= MAX_PROBES, each
request `timeout_s`.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp

__all__ = ["MAX_PROBES", "PROBE_GAP_S", "RouterCost", "measure_router_cost"]

MAX_PROBES = 64
PROBE_GAP_S = 0.1   # past the client's delayed ACK (40 ms; see the module doc); 36 probes add 3.6 s
_PROMPT_CHARS = 8   # under one 16-token block: no block is named, none cached


@dataclass(frozen=True)
class RouterCost:
    router_in_s: float
    router_out_s: float
    probes: int
    direct_in_s: float      # medians going direct (the engine's own front end, for the record)
    direct_out_s: float


async def _probe(http: aiohttp.ClientSession, url: str, rid: str, model: str, rng: random.Random,
                 timeout_s: float) -> tuple[float, float]:
    """(send, first content chunk) in time.monotonic() seconds."""
    prompt = "".join(chr(rng.randint(33, 126)) for _ in range(_PROMPT_CHARS))
    body = {"model": model, "prompt": prompt, "max_tokens": 2, "stream": True}
    sent = time.monotonic()
    first = float("nan")
    async with http.post(url, json=body, headers={"X-Request-Id": rid},
                         timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
        if resp.status != 200:
            raise RuntimeError(f"router cost probe to {url}: HTTP {resp.status}: {(await resp.text())[:120]}")
        async for line in resp.content:
            if first != first and line.startswith(b"data: {"):
                first = time.monotonic()
    if first != first:
        raise RuntimeError(f"router cost probe to {url}: no token came back")
    return sent, first


async def _times(http: aiohttp.ClientSession, replica_urls: list[str]) -> dict[str, dict[str, float]]:
    merged: dict[str, dict[str, float]] = {}
    for base in replica_urls:
        async with http.get(base + "/request_times", timeout=aiohttp.ClientTimeout(total=10)) as resp:
            merged.update(await resp.json())
    return merged


async def measure_router_cost(front_url: str, replica_urls: list[str], probes: int = 16, model: str = "tiny-llm",
                              seed: int = 0, timeout_s: float = 10.0, gap_s: float = PROBE_GAP_S,
                              sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> RouterCost:
    """See the module doc. `front_url` and each replica's `/v1/completions` are posted, `gap_s` apart
    (`sleep(gap_s)` after each probe: a seam for tests); RuntimeError when a probe fails or the front does
    not pass `X-Request-Id` through (no replica saw the front's probes)."""
    if not 1 <= probes <= MAX_PROBES:
        raise ValueError(f"router cost probes: 1-{MAX_PROBES}, got {probes}")
    if not 0 <= gap_s <= 1:
        raise ValueError(f"router cost probe gap: 0-1 s, got {gap_s}")
    # A whole number of rounds over the replicas, so a round robin front starts the day where it would have.
    probes = -(-probes // len(replica_urls)) * len(replica_urls)
    rng = random.Random(seed)
    # Ids of this call only: replicas keep the times of every id they saw, and fleets share replicas.
    tag = uuid.uuid4().hex[:8]
    sent: dict[str, tuple[str, float, float]] = {}    # rid -> (way, send, first chunk)
    async with aiohttp.ClientSession() as http:
        for r, base in enumerate(replica_urls):        # warm-up: a replica's first forward pass is slower
            await _probe(http, base + "/v1/completions", f"warm-{tag}-{r}", model, rng, timeout_s)
            await sleep(gap_s)
        for k in range(probes):
            direct = replica_urls[k % len(replica_urls)] + "/v1/completions"
            for way, url in (("direct", direct), ("front", front_url)):
                rid = f"cost-{tag}-{way}-{k}"
                s, f = await _probe(http, url, rid, model, rng, timeout_s)
                sent[rid] = (way, s, f)
                await sleep(gap_s)
        times = await _times(http, replica_urls)
    ins: dict[str, list[float]] = {"direct": [], "front": []}
    outs: dict[str, list[float]] = {"direct": [], "front": []}
    for rid, (way, s, f) in sent.items():
        seen = times.get(rid)
        if seen is None:
            continue
        ins[way].append(seen["arrival_s"] - s)
        outs[way].append(f - seen["first_token_s"])
    if not ins["front"] or not ins["direct"]:
        raise RuntimeError(f"{front_url}: no replica logged the front's probes (it does not forward X-Request-Id)")
    d_in, d_out = statistics.median(ins["direct"]), statistics.median(outs["direct"])
    return RouterCost(max(0.0, statistics.median(ins["front"]) - d_in), max(0.0, statistics.median(outs["front"]) - d_out),
                      len(ins["front"]), d_in, d_out)
