"""The response cache in front of the API servers (doc item 3).

`exact` keys on the payload's bytes, so two serialisations of one input
(field order, whitespace, a client timestamp) miss each other, and it ignores
the model version, so it serves stale answers after a deploy. `normalized`
keys on the normalised input and the model version. `auto` is normalised and
switches itself off (bypassing the hop) while its measured hit rate is below
what pays for the hop, re-probing a small sample of requests to notice when
traffic becomes cacheable.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Final, Hashable

from targets.config import CacheMode
from targets.protocol import Attempt

_MISS: Final = object()  # not cached (a cached output may be None)


@dataclass
class CacheStats:
    lookups: int = 0
    hits: int = 0
    bypassed: int = 0
    evictions: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0


class ResponseCache:
    """An LRU of outputs. `min_hit_rate` is the break-even for `auto`."""

    WINDOW = 2000        # lookups the auto mode judges its hit rate over
    PROBE_EVERY = 50     # while bypassed, 1 request in this many still looks up

    def __init__(self, mode: CacheMode, entries: int, model_version: str, min_hit_rate: float) -> None:
        if mode is CacheMode.OFF:
            raise ValueError("no ResponseCache for mode 'off'")
        self.mode = mode
        self._exact, self._auto = mode is CacheMode.EXACT, mode is CacheMode.AUTO  # read per request
        self.entries = entries
        self.model_version = model_version
        self.min_hit_rate = min_hit_rate
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._recent: deque[bool] = deque(maxlen=self.WINDOW)
        self._recent_hits = 0
        self._bypassing = False
        self._since_probe = 0
        self.stats = CacheStats()

    def key(self, a: Attempt, version: str | None = None) -> Hashable:
        """`version`: the model version the request is routed to (a canary rollout);
        None: the cache's own. The exact-payload key ignores it (the doc's flaw).

        The key is (content, variant) when exact, (content, version) when normalised; each
        written as the content alone where the second part is the common one (variant 0, the
        cache's own version): an int and a tuple are never equal, so the keys stand for the
        same pairs, one to one, and a request's key then costs no tuple to make or hash."""
        if self._exact:
            return a.content if a.variant == 0 else (a.content, a.variant)
        return a.content if not version or version == self.model_version else (a.content, version)

    def clear(self) -> None:
        """Drop every entry (not counted as evictions)."""
        self._data.clear()

    def should_lookup(self) -> bool:
        """False when `auto` has judged the cache not worth its hop."""
        if not self._bypassing:
            return True
        self._since_probe += 1
        if self._since_probe >= self.PROBE_EVERY:
            self._since_probe = 0
            return True
        self.stats.bypassed += 1
        return False

    def get(self, a: Attempt, version: str | None = None) -> tuple[bool, Any]:
        key = self.key(a, version)
        self.stats.lookups += 1
        data = self._data
        output = data.get(key, _MISS)  # one lookup for membership and value (outputs may be None)
        hit = output is not _MISS
        if hit:
            self.stats.hits += 1
            data.move_to_end(key)
        else:
            output = None
        if self._auto:
            self._observe(hit)
        return hit, output

    def put(self, a: Attempt, output: Any, version: str | None = None) -> None:
        # Filled even while bypassed (off the request path), so the probes can
        # notice when traffic becomes cacheable.
        key = self.key(a, version)
        data = self._data
        if key in data:  # (a new key goes to the back by itself: no move_to_end, a Python-level call)
            data.move_to_end(key)
        data[key] = output
        if len(data) > self.entries:
            data.popitem(False)  # (positional: compiled, a keyword makes the call a slow path)
            self.stats.evictions += 1

    def _observe(self, hit: bool) -> None:
        if len(self._recent) == self._recent.maxlen:
            self._recent_hits -= self._recent[0]
        self._recent.append(hit)
        self._recent_hits += hit
        if len(self._recent) >= self.WINDOW:
            rate = self._recent_hits / len(self._recent)
            self._bypassing = rate < self.min_hit_rate
