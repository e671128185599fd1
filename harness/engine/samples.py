"""The fleet's own samples during a run (queue depth, GPU-seconds busy, GPUs alive), per window."""

from __future__ import annotations

__all__ = ["samples_per_window"]


def samples_per_window(samples: list[tuple[float, int, float, int]], t0: float, window_s: float,
               windows: int) -> tuple[list[float], list[float], list[int | None]]:
    """(deepest queue, busy share of the alive GPUs, GPUs alive at the last sample) of each of
    `windows` windows of `window_s` from `t0`, from `samples` of (t, queue depth, busy GPU-s
    so far, alive GPUs) in time order (Recorder.sample); None where a window has no sample."""
    depth = [0.0] * windows
    busy = [0.0] * windows
    alive: list[int | None] = [None] * windows
    if not samples:
        return depth, busy, alive
    prev_t, prev_busy = t0, 0.0
    for t, q, b, alive_gpus in samples:
        j = min(windows - 1, max(0, int((t - 1e-9 - t0) / window_s)))
        depth[j] = max(depth[j], q)
        alive[j] = alive_gpus
        span = t - prev_t
        if span > 0:
            busy[j] = min(1.0, (b - prev_busy) / (span * max(alive_gpus, 1)))
        prev_t, prev_busy = t, b
    return depth, busy, alive
