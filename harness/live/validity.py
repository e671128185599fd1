"""Is a live run the target's result, or the driver's? Judged from the run's own figures.

A live run measures the target only while the driver keeps its schedule: it
issues every request on time (send lag), finds a connection to write it on
(connection waits) and has CPU to spare; and only while it can reach the
target at all. `invalid_reasons(...)` returns one line per broken condition
(empty: valid). It is a pure function of the figures a run records (the
`live` block and the request counts), so its table-driven tests need no
server and no clock.

Thresholds (`Limits`) are deliberately plain numbers a user can read in the
reason: a p99 send lag over 10 ms means the schedule the target saw was not
the workload's; a p99 wait for a connection 10 ms beyond that means requests
reached the target later than offered (the target saw less load than the
workload's); a driver process busy 90% of a core during the drive has no
headroom left to keep time; connects failing for more than 1% of attempts
means the target was not reachable for part of the run (connections the target
resets mid-request are its own behaviour, counted in its figures, not here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Limits", "LIMITS", "cpu_count", "cpu_ticks", "first_error", "invalid_reasons", "machine_busy"]


@dataclass(frozen=True)
class Limits:
    """What a valid live run stays within (seconds, and shares in [0, 1])."""

    send_lag_p99_s: float = 0.010
    connection_wait_p99_s: float = 0.010
    driver_cpu_share: float = 0.90
    connect_error_share: float = 0.01


LIMITS = Limits()


def _ms(x: float) -> str:
    return f"{x * 1000:,.1f} ms" if x < 0.1 else f"{x * 1000:,.0f} ms"


def first_error(live: Mapping[str, Any]) -> str | None:
    """The first connection error's text, else the most frequent HTTP error status and its reason."""
    conn = live.get("connection_errors") or {}
    if conn.get("count"):
        return str(conn.get("first"))
    statuses = {int(k): n for k, n in (live.get("http_status") or {}).items() if int(k) >= 300}
    if not statuses:
        return None
    code = max(statuses, key=lambda c: statuses[c])
    reason = (live.get("http_errors") or {}).get(str(code))
    return f"HTTP {code} ({statuses[code]:,} responses)" + (f": {reason}" if reason else "")


def invalid_reasons(live: Mapping[str, Any], attempts: int, succeeded: int, unique: int,
                    limits: Limits = LIMITS) -> list[str]:
    """Why a live run's figures are not the target's (empty list: valid).

    `live` is the run's `live` block (harness.live.run.LiveRun.live_block);
    `attempts`, `succeeded` and `unique` its request counts.
    """
    reasons: list[str] = []
    if unique and not succeeded:
        err = first_error(live)
        reasons.append("nothing succeeded" + (f": {err}" if err else ""))
    # Only failed connects: a connection the target resets or closes mid-request is the
    # target's own behaviour, counted in its figures as failed attempts.
    refused = int(live.get("connect_failures") or 0)
    if refused and attempts and refused / attempts > limits.connect_error_share:
        reasons.append(f"could not reach the target: {refused:,} connection attempts failed, for {attempts:,} "
                       f"requests sent (first: {live.get('first_connect_failure')})")
    lag = (live.get("send_lag_s") or {}).get("p99")
    if lag is not None and lag > limits.send_lag_p99_s:
        late = live.get("late_over_10ms")
        reasons.append(f"driver fell behind: send lag p99 {_ms(lag)} > {_ms(limits.send_lag_p99_s)}"
                       + (f" ({late:,} requests sent over 10 ms late)" if late else "")
                       + _machine(live))
    wire = (live.get("write_lag_s") or {}).get("p99")
    if wire is not None and wire - (lag or 0.0) > limits.connection_wait_p99_s:
        waited = live.get("waited_for_connection")
        reasons.append(f"requests waited for a connection: p99 written {_ms(wire)} after their scheduled start "
                       f"(send lag p99 {_ms(lag or 0.0)}), so the target saw less load than offered"
                       + (f"; {waited:,} attempts found no free connection" if waited else ""))
    cpu = live.get("driver_cpu_share")
    if cpu is not None and cpu >= limits.driver_cpu_share:
        reasons.append(f"driver CPU saturated: {cpu:.0%} of a core during the drive "
                       f"(limit {limits.driver_cpu_share:.0%})")
    return reasons


def _machine(live: Mapping[str, Any]) -> str:
    busy, cpus = live.get("machine_cpu_busy"), live.get("machine_cpus")
    if busy is None:
        return ""
    return f"; the machine's {cpus} core(s) were {busy:.0%} busy (driver and target share them)"


def cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user
    return total - idle, total


def machine_busy(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Share of the machine's CPU time busy between two `cpu_ticks()` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def cpu_count() -> int:
    """CPUs /proc/stat counts (the whole machine, not this process's affinity)."""
    return os.cpu_count() or 1
