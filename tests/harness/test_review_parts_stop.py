"""A review's Part 2/3 answers are built in a process of their own, whose parts fork worker
processes of their own: stopping the review (Ctrl-C, a failed ablation) must end them all.
Ending that process alone left its pools' workers running, orphaned, holding the command's
output open (a `harness review | tee` then never ended)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time
from pathlib import Path

from harness.analysis.review.parts_process import start_parts
from harness.engine.jobs import Jobs
from tests.harness.procs import children


@dataclasses.dataclass(frozen=True)
class _Sleeps:
    seconds: float

    def run(self) -> None:
        time.sleep(self.seconds)


def _gone(pid: int) -> bool:
    """Not a process any more, or one that has exited (a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def test_stopping_the_parts_ends_the_workers_their_jobs_started() -> None:
    def build() -> None:  # a part whose jobs run on worker processes of the part's own
        Jobs(workers=2).run([_Sleeps(60.0), _Sleeps(60.0)])

    before = set(multiprocessing.active_children())
    parts = start_parts([("a part", build)], [], Jobs(workers=2))
    (child,) = set(multiprocessing.active_children()) - before
    deadline = time.monotonic() + 20
    while len(children(child.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = children(child.pid)
    assert len(workers) >= 2  # the part's pool is running its jobs
    t0 = time.monotonic()
    try:
        parts.stop()
        assert not child.is_alive()
        deadline = time.monotonic() + 5
        while not all(_gone(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(_gone(w) for w in workers), [w for w in workers if not _gone(w)]
        assert time.monotonic() - t0 < 15
    finally:  # a failure here must not leave the workers holding the test run's output open
        for w in workers:
            if not _gone(w):
                os.kill(w, signal.SIGKILL)
