"""The review's Part 2/3 answers, built in a process of their own beside its runs (`start_parts`),
and how that process and the workers its parts fork are ended together (`end_group`)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from harness.engine.jobs import Executor, Jobs
from harness.results.base import Result

__all__ = ["Part", "Parts", "end_group", "start_parts"]

# A Part 2/3 answer: (name for notes, builder of its result).
Part = tuple[str, Callable[[], Any]]


def _part(name: str, build: Callable[[], Any], notes: list[str]) -> Result | None:
    """A Part 2/3 result, or a note saying why there is none."""
    try:
        return build()
    except Exception as exc:  # a broken optional part must not sink a long review
        notes.append(f"{name} failed: {type(exc).__name__}: {exc}")
    return None


class Parts:
    """The Part 2/3 answers being built (`start_parts`): `result()` waits for them ({kind:
    result}; a part that failed is left out, with a note); `stop()` gives up on them."""

    def __init__(self, result: Callable[[], dict[str, Result]], stop: Callable[[], None] = lambda: None) -> None:
        self.result = result
        self.stop = stop


def start_parts(parts: Sequence[Part], notes: list[str], jobs: Jobs) -> Parts:
    """Build `parts` in a process of their own, forked now; its result counts the run cache's
    hits and misses there as this process's.

    A process, not a thread: the parts' own worker processes and the ablation's are forked
    while the other goes on, and a fork copies every lock as it is; a thread of this process
    inside pydantic's core at the moment the other forked left that lock held for ever in the
    child, whose next model_dump waited on it (a review hung so, once in a few dozen). Forked
    first, while this process runs no thread but its own, the parts' process forks its workers
    from itself alone, and this process's threads are only its pools' managers. (Jobs that fork
    nothing, inline or on Ray, build them on a thread, which then shares this process's cache.)"""
    if not parts:
        return Parts(dict)
    if jobs.executor is not Executor.PROCESS:
        builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="review-parts")
        built = builder.submit(lambda: [_part(name, build, notes) for name, build in parts])
        builder.shutdown(wait=False)  # the thread still builds them all, then ends
        return Parts(lambda: {part.kind: part for part in built.result() if part is not None})
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    cache = jobs.cache
    hits_before, misses_before = (len(cache.hits), cache.misses) if cache is not None else (0, 0)

    def build_all() -> None:  # in the child
        # A process group of its own, which the workers its parts fork join: a stop ends them all
        # (ended alone, it left its pools' workers running, orphaned, holding this command's output
        # open). Ctrl-C at a terminal, sent to the foreground group, then reaches this process
        # only through the parent's stop.
        os.setpgid(0, 0)
        mine: list[str] = []
        results = [_part(name, build, mine) for name, build in parts]
        hits, misses = (cache.hits[hits_before:], cache.misses - misses_before) if cache is not None else ([], 0)
        send.send((results, mine, hits, misses))

    # Not daemonic: a part's own jobs run on worker processes of its own.
    child = ctx.Process(target=build_all, name="review-parts")
    child.start()
    send.close()  # (the child's copy stays open: its end of the pipe)

    def result() -> dict[str, Result]:
        try:
            results, theirs, hits, misses = receive.recv()
        except EOFError:  # it ended without sending: killed, or its answer would not pickle
            child.join(5)
            notes.append(f"the Part 2/3 answers failed: their process ended without them (exit code "
                         f"{child.exitcode})")
            return {}
        finally:
            receive.close()
        child.join()
        notes.extend(theirs)
        if cache is not None:
            cache.count(hits, misses)
        return {part.kind: part for part in results if part is not None}

    def stop() -> None:
        end_group(child)
        receive.close()
    return Parts(result, stop)


def end_group(child: Any) -> None:
    """End `child` (a process that leads a process group of its own) and every process of its
    group: SIGTERM (its work stops as on Ctrl-C; its pools' workers end at once), then SIGKILL
    for what is left after 5 s."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:  # no such group: the child had not made it yet, or all is gone
            if child.is_alive():
                os.kill(child.pid, sig)
        except PermissionError:  # pragma: no cover - a group we may not signal is not ours
            return
        child.join(wait_s)
        if not child.is_alive() and not _group_alive(child.pid):
            return


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (signal 0 tests without signalling)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
