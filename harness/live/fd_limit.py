"""Open-file limits for live runs, shared by the driver process and the target host.

Its own module so that ``harness.live.host`` (the child process) need not import
``harness.live.run`` (the parent that starts it).
"""

from __future__ import annotations

__all__ = ["raise_fd_limit"]


def raise_fd_limit() -> None:
    """Soft open-files limit up to the hard one: every connection costs a
    descriptor in the driver and three in the host (proxy both ends, server)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX, or not allowed
        pass
