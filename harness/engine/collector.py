"""The cyclic collector held off while a simulation runs (`fewer_collections`): a run frees its
objects by reference counting, so a pass of the collector would only walk the requests in flight;
and while a command's modules are imported (`imports_uncollected`), whose objects stay to the end."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["SIM_GC_THRESHOLD", "fewer_collections", "imports_uncollected"]

# Container objects allocated (net of those freed) between two young-generation passes
# of the cyclic collector; Python's default is 700.
SIM_GC_THRESHOLD = 5_000_000


@contextmanager
def fewer_collections(threshold: int = SIM_GC_THRESHOLD) -> Iterator[None]:
    """Run the block with the collector's young generation `threshold` objects deep.

    A simulation makes no cyclic garbage while it runs: every request's objects are
    freed by reference counting (the client breaks its one cycle at the first answer,
    and `SimRun` hands what is left at the horizon back the same way), which
    `tests/harness/test_sim.py` checks. A pass of the collector therefore frees nothing
    and only walks the requests in flight: after an overload, hundreds of thousands of
    them, scattered over memory, 30-200 ms a pass at 100,000 objects deep, a sixth of an
    overloaded naive run's CPU. At this depth a bad-day run never starts one, and a
    much longer one runs a few (the depth stays a bound, should some code make cycles).
    The old thresholds are restored after, so other work in the process is unaffected.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(threshold, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


_frozen = False  # whether this process has frozen what its start-up made (once)


@contextmanager
def imports_uncollected() -> Iterator[None]:
    """Import within: the collector held off, and, the first time in a process, what start-up
    made (modules, classes, pydantic schemas: all kept until exit) moved out of its reach after
    (`gc.freeze`): its passes over them were a tenth of a cached `harness compare`. Once only: a
    process that runs many commands (the tests) would freeze each one's garbage too."""
    global _frozen
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not _frozen:
            _frozen = True
            gc.freeze()
        if was:
            gc.enable()
