"""When a run's goodput came back after a disturbance (a spike's end, a GPU's return)."""

from __future__ import annotations

from typing import Any

__all__ = ["recovery_of"]


def recovery_of(series: dict[str, Any], window_s: float, covered_s: float, disturbance_end_s: float | None,
                threshold: float = 0.99, stable_windows: int = 3) -> dict[str, Any]:
    """Seconds from the disturbance's end until goodput is back to >= threshold x offered and
    stays there for `stable_windows` full windows (or to the end of the traffic, if sooner).
    None: never, within the run. `series`: the run's per-window `t_s`, `goodput_rps` and
    `offered_rps`; judged on full windows only (those that end by `covered_s`)."""
    out = {"disturbance_end_s": disturbance_end_s, "recovered_after_s": None, "threshold": threshold}
    if disturbance_end_s is None:
        return out
    w = window_s
    t = series["t_s"]
    full = [j for j in range(len(t)) if t[j] + w <= covered_s + 1e-9]
    ok = [series["goodput_rps"][j] >= threshold * series["offered_rps"][j] for j in full]
    for pos, j in enumerate(full):
        if t[j] + w <= disturbance_end_s + 1e-9:
            continue
        if all(ok[pos:pos + stable_windows]):
            out["recovered_after_s"] = max(0.0, t[j] - disturbance_end_s)
            break
    return out
