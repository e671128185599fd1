"""The pool run's error, in a module of its own: `shell` is compiled (targets.native), and a
compiled module's classes cannot derive from RuntimeError."""

from __future__ import annotations

__all__ = ["PoolScheduleError"]


class PoolScheduleError(RuntimeError):
    """A policy broke a pool invariant, or the event cap was hit (a livelock)."""
