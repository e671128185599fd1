"""Open-loop traffic for a live canary rollout, recorded per model version and per step.

`CanaryTraffic` sends POST /predict to a live target at `rate_rps` (Poisson
arrivals from a seed; each request starts at its scheduled time whatever the
earlier ones are doing), each with `X-Harness-Uid` so the target's hash split
routes it as the sim's would, and records every answer under the version that
computed it (the answer's `X-Model-Version`): its latency from the scheduled
start, whether the model failed it (a 5xx with a version) and, for a 200, its
label. Answers no model computed (sheds, refusals, client timeouts) are only
counted by status. `take()` hands over the records since the last call: the
step's evidence, as the sim's recording transport gathers it.

Payloads: every request's input is its own (content = its uid), or, with
`contents` set, one of that many inputs drawn uniformly, and no request ID: the
same bytes again and again, which the doc's exact-payload cache answers. An
input always comes from the same one of `tenants` tenants (so one input, one body).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

from harness.live.payloads import Payloads
from targets.versions import LABELS as NUM_CLASSES  # the classifier's classes (targets.gpu.models has as many)

__all__ = ["CanaryTraffic", "StepRecords", "VersionRecords"]

# Tenants the traffic is spread over: none near a per-tenant limit, and enough for
# a sticky-by-tenant split to land near its weight.
TENANTS = 50


@dataclass
class VersionRecords:
    """One version's answers in one step: OK latencies (s), 5xx count, label counts."""

    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    labels: list[int] = field(default_factory=lambda: [0] * NUM_CLASSES)


@dataclass
class StepRecords:
    versions: dict[str, VersionRecords] = field(default_factory=dict)
    unversioned: Counter = field(default_factory=Counter)  # status (or "timeout", "error") -> answers

    def of(self, version: str) -> VersionRecords:
        return self.versions.get(version) or VersionRecords()


class CanaryTraffic:
    """Open-loop requests to http://127.0.0.1:`port`/predict until `stop()`."""

    def __init__(self, port: int, rate_rps: float, seed: int, payloads: Payloads, size: int,
                 contents: int | None = None, timeout_s: float = 5.0, tenants: int = TENANTS) -> None:
        self.url = f"http://127.0.0.1:{port}/predict"
        self.rate_rps = rate_rps
        self.rng = random.Random(seed)
        self.payloads = payloads
        self.size = size
        self.contents = contents
        self.timeout_s = timeout_s
        self.tenants = [f"t{k}" for k in range(tenants)]
        self.records = StepRecords()
        self.served: Counter = Counter()  # version -> answers it computed since start (blast radius)
        self.sent = 0
        self._uids = itertools.count()
        self._pending: set[asyncio.Task] = set()
        self._sender: asyncio.Task | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256),
                                              timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        self._sender = asyncio.get_running_loop().create_task(self._send_all())

    def take(self) -> StepRecords:
        """The records since the last call (answers that arrived since then)."""
        out, self.records = self.records, StepRecords()
        return out

    async def stop(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    async def _send_all(self) -> None:
        loop = asyncio.get_running_loop()
        at = loop.time()
        while True:
            at += self.rng.expovariate(self.rate_rps)
            await asyncio.sleep(max(0.0, at - loop.time()))
            uid = next(self._uids)
            content = uid if self.contents is None else self.rng.randrange(self.contents)
            rid = None if self.contents is not None else f"canary-{uid}"
            body = self.payloads.body(self.tenants[content % len(self.tenants)], content, self.size, rid, None)
            task = loop.create_task(self._one(uid, body, at))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            self.sent += 1

    async def _one(self, uid: int, body: bytes, sched_s: float) -> None:
        loop = asyncio.get_running_loop()
        headers = {"Content-Type": "application/json", "X-Harness-Uid": str(uid)}
        try:
            async with self._session.post(self.url, data=body, headers=headers) as r:  # type: ignore[union-attr]  # opened by start()
                raw = await r.read()
                self._record(r.status, r.headers.get("X-Model-Version"), raw, loop.time() - sched_s)
        except asyncio.TimeoutError:
            self.records.unversioned["timeout"] += 1
        except aiohttp.ClientError:
            self.records.unversioned["error"] += 1

    def _record(self, status: int, version: str | None, raw: bytes, latency_s: float) -> None:
        if version is None or not (status == 200 or status >= 500):
            self.records.unversioned[str(status)] += 1
            return
        self.served[version] += 1
        rec = self.records.versions.get(version)
        if rec is None:
            rec = self.records.versions[version] = VersionRecords()
        if status != 200:
            rec.errors += 1
            return
        rec.latencies_s.append(latency_s)
        output = json.loads(raw).get("output")
        label = output.get("label") if isinstance(output, dict) else None
        if isinstance(label, int) and 0 <= label < NUM_CLASSES:
            rec.labels[label] += 1
