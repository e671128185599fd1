"""A live host's figures since a baseline: what the run's own traffic did.

A host has served requests before a run's clock starts (its own HTTP warm-up,
the driver's warm-up traffic), and its counters (the target's snapshot, the
proxy's and the executors' figures) run from its start. A run asks the host
for its `stats` just before its clock starts and again at the end;
`stats_since(before, after)` is the difference, so GPU busy time, batch fill,
shed counts and cache hit rates describe only the measured traffic.

Instants and states are the end's (alive GPUs, the last batch's end); the
largest batch is the end's too (a maximum cannot be differenced).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from targets.snapshot import CacheSnapshot, TargetSnapshot

__all__ = ["balancer_since", "snapshot_since", "stats_since"]

_KEEP = frozenset({"gpus", "alive", "largest_batch", "last_done_s", "hit_rate"})  # states, not counters


def _minus(after: Any, before: Any) -> Any:
    """Field by field: counters differenced, states kept from `after`, nested ones recursed."""
    if after is None or before is None:
        return after
    out = {}
    for f in fields(after):
        a, b = getattr(after, f.name), getattr(before, f.name)
        if is_dataclass(a):
            out[f.name] = _minus(a, b)
        elif f.name in _KEEP or not isinstance(a, (int, float)):
            out[f.name] = a
        else:
            out[f.name] = a - b
    return replace(after, **out)


def snapshot_since(before: TargetSnapshot, after: TargetSnapshot) -> TargetSnapshot:
    """`after` with every counter counted from `before` (the cache's hit rate recomputed)."""
    snap = _minus(after, before)
    if snap.cache is not None:
        c: CacheSnapshot = snap.cache
        snap = replace(snap, cache=replace(c, hit_rate=c.hits / c.lookups if c.lookups else 0.0))
    return snap


def _counts_since(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any] | None:
    """Numbers (and lists of numbers) in `after` minus those in `before`; others as in `after`."""
    if after is None or before is None:
        return after
    out: dict[str, Any] = {}
    for k, a in after.items():
        b = before.get(k)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            out[k] = a - b
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            out[k] = [x - y for x, y in zip(a, b)]
        else:
            out[k] = a
    return out


# Balancer figures that are states or peaks, not counters (targets.http.haproxy_proc.stat_figures).
_BALANCER_STATES = frozenset({"pid", "sessions_now", "queue_now", "queue_max", "queue_time_ms", "sessions_max"})
_BALANCER_CONNECTIONS = frozenset({"connections", "per_api_server"})  # counted as the proxy's connections are


def balancer_since(before: dict[str, Any] | None, after: dict[str, Any] | None,
                   conn_before: dict[str, Any] | None) -> dict[str, Any] | None:
    """A host's `balancer` figures counted from `before` (requests, 5xx, bytes), its connections
    from `conn_before` (taken before the driver connected); states and peaks as in `after`."""
    if after is None or before is None:
        return after
    counts = _counts_since(before, after) or {}
    conns = _counts_since(conn_before, after) if conn_before is not None else after
    # In HTTP mode HAProxy counts an API server's sessions per request: those count from the run's start.
    per_request = (after.get("policy") or {}).get("mode") == "http"
    out = dict(counts)
    for k in after:
        if k in _BALANCER_STATES:
            out[k] = after[k]
        elif k in _BALANCER_CONNECTIONS and not (per_request and k == "per_api_server"):
            out[k] = conns[k]  # type: ignore[index]
    return out


def stats_since(before: dict[str, Any], after: dict[str, Any], proxy_before: dict[str, Any]) -> dict[str, Any]:
    """A host's `stats` answer (TargetHost.stats) counted from an earlier one. The proxy
    counts connections, which the driver opens before its warm-up and keeps for the run:
    they count from `proxy_before`, an answer taken before the driver connected."""
    snap = snapshot_since(TargetSnapshot.from_dict(before["snapshot"]), TargetSnapshot.from_dict(after["snapshot"]))
    return {**after, "snapshot": snap.to_dict(),
            "proxy": _counts_since(proxy_before.get("proxy"), after.get("proxy")),
            "balancer": balancer_since(before.get("balancer"), after.get("balancer"), proxy_before.get("balancer")),
            "executors": _counts_since(before.get("executors"), after.get("executors"))}
