"""Is a live run the target's result, or the driver's? Judged from the run's own figures, naming who is at fault.

A live run measures the target only while the driver keeps its schedule: it
issues every request on time (send lag) and has CPU to spare; and only while it
can reach the target at all. `judge(...)` sorts what went wrong by who did it
(`Judgement`, `Fault`):

- the driver's own lag (its schedule, its CPU) makes the run invalid: the load
  the target saw was not the workload's. `remedies` say how to get a valid run.
- connections held by a slow target are the target's overload, not the
  driver's: HTTP/1.1 carries one request per connection, so an attempt that
  finds every connection busy (`waited_for_connection`), up to every connection
  the driver may open (`max_open_connections` at the cap), waits on requests the
  target has not answered. Latency counts from the scheduled start, so the wait
  is in the target's figures: the run stays valid and the judgement says so
  (`target_findings`).
- both: invalid, and the judgement names both.
- a target the driver could not reach (connects failing for more than 1% of
  attempts), or one that answered nothing, gives no figures to judge: invalid.

`invalid_reasons(...)` is the judgement's invalid reasons (empty: valid). Pure
functions of the figures a run records (the `live` block and the request
counts), so their table-driven tests need no server and no clock.
docs/guide/live-mode.md ("Validity: who is at fault") tells it to a user, and docs/frameworks.md
("Beside MLPerf LoadGen") sets the rule beside LoadGen's.

Thresholds (`Limits`) are deliberately plain numbers a user can read in the
reason: more than 1% of the sends over 10 ms late, or a send lag p99.9 over
50 ms (a stall), means the schedule the target saw was not the workload's (a
few late sends among thousands, a scheduler hiccup, do not); a p99 wait for a connection 10 ms beyond that means the target
held the connections (a finding); a driver process busy 90% of a core during
the drive has no headroom left to keep time; connects failing for more than 1%
of attempts means the target was not reachable for part of the run
(connections the target resets mid-request are its own behaviour, counted in
its figures, not here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Mapping

__all__ = ["Fault", "Judgement", "LATE_BOUND_S", "Limits", "LIMITS", "cpu_count", "cpu_ticks", "driver_behind",
           "first_error", "invalid_reasons", "judge", "machine_busy"]


LATE_BOUND_S = 0.010  # the transport counts the sends over this late (`live.late_over_10ms`)


@dataclass(frozen=True)
class Limits:
    """What a valid live run stays within (seconds, and shares in [0, 1]).

    The driver fell behind when more than `late_share` of its sends left over
    LATE_BOUND_S late (the share rule: a rate it could not offer on time), or when
    its send lag p99.9 is over `send_lag_p999_s` (the tail: it stalled long
    enough to send a burst). A handful of late sends in thousands (18 of 7,529,
    0.24%) is neither. `send_lag_p99_s` judges a block that has no late count
    (a saved run from before it was counted), and marks a driver process behind."""

    send_lag_p99_s: float = 0.010
    late_share: float = 0.01
    send_lag_p999_s: float = 0.050
    connection_wait_p99_s: float = 0.010
    driver_cpu_share: float = 0.90
    connect_error_share: float = 0.01

    def __post_init__(self) -> None:
        for name in ("send_lag_p99_s", "send_lag_p999_s", "connection_wait_p99_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 s, got {getattr(self, name)}")
        for name in ("late_share", "driver_cpu_share", "connect_error_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be a share in [0, 1], got {getattr(self, name)}")


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


class Fault(StrEnum):
    """Who a live run's trouble belongs to."""

    NONE = "none"
    DRIVER = "driver"   # the driver fell behind or could not reach the target: invalid
    TARGET = "target"   # the target was overloaded (held the connections): valid, a finding
    BOTH = "both"       # both: invalid, and the target's overload is said too


@dataclass(frozen=True)
class Judgement:
    """`invalid_reasons`: why the figures are not the target's (empty: valid);
    `target_findings`: the target's overload the driver saw (not a fault of the run);
    `remedies`: how to get a valid run (only when it is invalid)."""

    invalid_reasons: list[str] = field(default_factory=list)
    target_findings: list[str] = field(default_factory=list)
    remedies: list[str] = field(default_factory=list)
    driver_lagged: bool = False

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def fault(self) -> Fault:
        target = bool(self.target_findings)
        if self.invalid_reasons:
            return Fault.BOTH if target else Fault.DRIVER
        return Fault.TARGET if target else Fault.NONE

    def to_json(self) -> dict[str, Any]:
        """The `live.validity` block of a run's summary."""
        return {"fault": self.fault.value, "target_findings": self.target_findings, "remedies": self.remedies}


def judge(live: Mapping[str, Any], attempts: int, succeeded: int, unique: int,
          limits: Limits = LIMITS) -> Judgement:
    """Who is at fault in a live run's figures (see the module docstring).

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
    behind = driver_behind(live, attempts, limits)
    lagged = behind is not None
    if behind is not None:
        reasons.append(f"driver fell behind: {behind}" + _machine(live))
    cpu = live.get("driver_cpu_share")
    saturated = cpu is not None and cpu >= limits.driver_cpu_share
    if saturated:
        reasons.append(f"driver CPU saturated: {cpu:.0%} of a core during the drive "
                       f"(limit {limits.driver_cpu_share:.0%})")
    findings = _held_connections(live, lag, limits)
    return Judgement(reasons, findings, _remedies(live, lagged, saturated) if lagged or saturated else [],
                     driver_lagged=lagged or saturated)


def driver_behind(live: Mapping[str, Any], attempts: int, limits: Limits = LIMITS) -> str | None:
    """Why the driver's sends were not the schedule the workload set (None: they were).

    The share rule (over `limits.late_share` of the sends over LATE_BOUND_S late) and the
    tail rule (send lag p99.9 over `limits.send_lag_p999_s`); a block with no late count
    falls back to its p99 over `limits.send_lag_p99_s`. The text names the figures of both."""
    figs = live.get("send_lag_s") or {}
    p99, p999 = figs.get("p99"), figs.get("p999")
    late = live.get("late_over_10ms")
    sends = int(live.get("sends_measured") or attempts or 0)
    tail = f"send lag p99 {_ms(p99)}" if p99 is not None else ""
    if p999 is not None:
        tail += f", p99.9 {_ms(p999)}"
    if late is None or not sends:
        if p99 is None or p99 <= limits.send_lag_p99_s:
            return None
        return f"send lag p99 {_ms(p99)} > {_ms(limits.send_lag_p99_s)}"
    share = late / sends
    count = f"{late:,} of {sends:,} requests sent over {LATE_BOUND_S * 1000:g} ms late"
    if share > limits.late_share:
        return f"{count} ({share:.1%} > {limits.late_share:.0%}); {tail}"
    if p999 is not None and p999 > limits.send_lag_p999_s:
        return f"send lag p99.9 {_ms(p999)} > {_ms(limits.send_lag_p999_s)} (a stall); {count}"
    return None


def invalid_reasons(live: Mapping[str, Any], attempts: int, succeeded: int, unique: int,
                    limits: Limits = LIMITS) -> list[str]:
    """Why a live run's figures are not the target's (empty list: valid): `judge(...)`'s reasons."""
    return judge(live, attempts, succeeded, unique, limits).invalid_reasons


def _held_connections(live: Mapping[str, Any], lag: float | None, limits: Limits) -> list[str]:
    """The target's overload as the driver saw it: requests that waited for a connection the
    target still held (their write lag beyond the driver's own send lag)."""
    wire = (live.get("write_lag_s") or {}).get("p99")
    if wire is None or wire - (lag or 0.0) <= limits.connection_wait_p99_s:
        return []
    waited, opened, cap = live.get("waited_for_connection"), live.get("max_open_connections"), live.get("connection_cap")
    held = f"up to {opened:,} connections open at once" if opened else "its connections"
    if cap and opened and opened >= cap:
        held += f": every connection the driver may open ({cap:,})"
    return [f"target overloaded: it held {held} with requests it had not answered"
            + (f"; {waited:,} attempts found no free connection" if waited else "")
            + f", and requests were written p99 {_ms(wire)} after their scheduled start (send lag p99 "
              f"{_ms(lag or 0.0)}); the wait counts in its latency"]


def _remedies(live: Mapping[str, Any], lagged: bool, saturated: bool) -> list[str]:
    """How to get a valid run, from what held the driver back."""
    out = []
    busy = live.get("machine_cpu_busy")
    if saturated or (live.get("driver_procs") is None and (live.get("driver_cpu_share") or 0) > 0.5):
        out.append("split the driver over processes: --driver-procs 2 (or more, one per free core)")
    if lagged and busy is not None and busy >= 0.9:
        out.append("keep the target's processes off the driver's core: e.g. `taskset -c 1 harness serve ...` "
                   "and drive that URL from core 0, or start the run under `taskset` and pin the target's "
                   "workers to the other cores")
    out.append("drive from a second machine: `harness run http://TARGET:PORT/predict --mode live --allow-remote`")
    return out


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
