"""The built-in driver across processes: how a schedule is split, and how the parts add up.

One driver process keeps a schedule only while one core can issue its requests
on time; `--driver-procs N` gives the schedule to N processes
(harness.live.driver_procs_pool runs them). Pure functions here, no processes:

- `split_units`: the unit of the split is one keep-alive connection of one
  tenant, as the 1-process driver numbers them (a tenant's k-th request goes to
  its connection k mod connections). Units are dealt to processes heaviest
  first, each to the least loaded, so processes carry near-equal shares and a
  tenant with many connections spreads over several. Each process opens only
  its units' connections, so the target still sees the tenant's connections.
- `share_uids`: the requests of one process, by their number in the whole
  schedule. Every process drives the same schedule (the same workload, seed and
  `build_schedule`), so the union of the shares is the 1-process schedule:
  each request once, with its own number, scheduled time and payload. Request
  IDs and the `X-Harness-Uid` header carry that number, so a deduplicating
  target sees the same IDs as from one process.
- `merge_transport_stats`: the processes' transport figures as one: counts are
  summed, and the send-lag and write-lag HdrHistograms are added (encoded by
  each process, decoded and added here: exact, the histogram of the union).

What is not the 1-process run's: retry jitter draws from one random stream per
process (seeded from the run's client seed and the process index), and retry
budgets are kept per process per tenant.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from hdrh.histogram import HdrHistogram

from harness.engine.hdr import new_histogram
from harness.live.http_transport import lag_figures
from workloads.arrivals import Schedule

__all__ = ["Unit", "connection_slots", "merge_histograms", "merge_transport_stats", "share_uids",
           "split_units", "unit_connections"]

Unit = tuple[int, int]  # (tenant index, connection slot)


def connection_slots(schedule: Schedule) -> np.ndarray:
    """Each request's connection slot as the 1-process driver assigns it: its ordinal
    among its tenant's requests, modulo the tenant's connections."""
    tenant = schedule.tenant.astype(np.int64)
    slots = np.zeros(len(tenant), dtype=np.int64)
    for t, conns in enumerate(schedule.connections):
        mine = np.flatnonzero(tenant == t)
        slots[mine] = np.arange(len(mine)) % conns
    return slots


def split_units(schedule: Schedule, procs: int) -> list[list[Unit]]:
    """Every (tenant, slot) unit, dealt to `procs` processes: heaviest unit first, each
    to the process with the fewest requests so far (ties: the lower index). Fewer
    processes come back when there are fewer units than processes."""
    if procs < 1:
        raise ValueError(f"driver processes must be >= 1, got {procs}")
    slots = connection_slots(schedule)
    weight: dict[Unit, int] = {(t, s): 0 for t, c in enumerate(schedule.connections) for s in range(c)}
    for t, s in zip(schedule.tenant.tolist(), slots.tolist()):
        weight[(t, s)] += 1
    procs = min(procs, len(weight))
    shares: list[list[Unit]] = [[] for _ in range(procs)]
    load = [0] * procs
    for unit in sorted(weight, key=lambda u: (-weight[u], u)):
        k = min(range(procs), key=lambda i: (load[i], i))
        shares[k].append(unit)
        load[k] += weight[unit]
    return [sorted(s) for s in shares]


def share_uids(schedule: Schedule, units: Iterable[Unit]) -> np.ndarray:
    """The numbers (in `schedule`) of the requests on `units`, in scheduled order."""
    width = max(schedule.connections, default=1)
    wanted = np.array([t * width + s for t, s in units], dtype=np.int64)
    key = schedule.tenant.astype(np.int64) * width + connection_slots(schedule)
    return np.flatnonzero(np.isin(key, wanted))


def unit_connections(schedule: Schedule, units: Iterable[Unit]) -> dict[str, int]:
    """Connections a process opens per tenant name: one per unit it drives."""
    out: dict[str, int] = {}
    for t, _ in units:
        name = schedule.tenants[t]
        out[name] = out.get(name, 0) + 1
    return out


def merge_histograms(encoded: Iterable[bytes]) -> HdrHistogram:
    """The sum of HdrHistograms sent as `HdrHistogram.encode()` text: every count
    added, so each percentile, the minimum and the maximum are the union's. Empty
    ones are skipped: hdrh would take a decoded empty histogram's minimum, 0, as a value."""
    total = new_histogram()
    for blob in encoded:
        part = HdrHistogram.decode(blob)
        if part.get_total_count():
            total.add(part)
    return total


def merge_transport_stats(parts: Sequence[Mapping[str, Any]], lags: Mapping[str, HdrHistogram]
                          ) -> dict[str, Any]:
    """One `HttpTransport.stats()` from the processes' own, with `lags` (the merged
    "send_lag_s" and "write_lag_s" histograms) in place of their percentiles.

    Counts add up; the first failure and the first reason per status are the
    first process's that has one; `max_open_connections` adds each process's
    maximum, an upper bound on the connections open at once."""
    out: dict[str, Any] = {key: lag_figures(h) for key, h in lags.items()}
    out["sends_measured"] = lags["send_lag_s"].get_total_count()
    for key in ("late_over_10ms", "max_open_connections", "connect_failures", "waited_for_connection",
                "connection_cap"):
        out[key] = sum(int(p.get(key) or 0) for p in parts)
    out["first_connect_failure"] = next((p["first_connect_failure"] for p in parts
                                         if p.get("first_connect_failure")), None)
    opened: dict[str, int] = {}
    status: dict[int, int] = {}
    reasons: dict[str, str] = {}
    for p in parts:
        for tenant, n in (p.get("connections_opened") or {}).items():
            opened[tenant] = opened.get(tenant, 0) + n
        for code, n in (p.get("http_status") or {}).items():
            status[int(code)] = status.get(int(code), 0) + n
        for code, text in (p.get("http_errors") or {}).items():
            reasons.setdefault(code, text)
    out["connections_opened"] = opened
    out["http_status"] = {str(code): n for code, n in sorted(status.items())}
    out["http_errors"] = dict(sorted(reasons.items(), key=lambda kv: int(kv[0])))
    errors = [p.get("connection_errors") or {} for p in parts]
    out["connection_errors"] = {"count": sum(int(e.get("count") or 0) for e in errors),
                                "first": next((e["first"] for e in errors if e.get("first")), None)}
    return out
