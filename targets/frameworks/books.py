"""A framework server's books: counters its processes keep in files the harness reads.

A real framework runs its API servers and model workers in processes of its own
(LitServe spawns them, Ray Serve runs replicas as actors), so the harness cannot
ask them over a pipe as it asks its own host. Each such process instead keeps one
small memory-mapped file, `ROLE-PID.bin` in the run's control folder, of `FIELDS`
doubles it updates in place (a store to shared memory: about a microsecond);
`read_books(folder)` sums every file. A fault (a slowdown) goes the other way:
the harness writes a factor into the folder's `slowdown` file and each worker
re-reads it when its modification time changes (`Slowdown.factor()`, one stat
per batch).

No torch and no web types here: the harness's side (harness.live.framework_host)
imports this module, and so do the servers.
"""

from __future__ import annotations

import mmap
import os
import struct
from enum import IntEnum
from pathlib import Path

__all__ = ["Books", "Field", "Slowdown", "read_books", "write_slowdown"]


class Field(IntEnum):
    """Slots of a books file (doubles)."""

    RECEIVED = 0      # requests the process's HTTP handler took in
    ANSWERED = 1      # ... and answered (any status)
    BATCHES = 2       # batches the worker ran
    ITEMS = 3         # requests over all its batches
    LARGEST = 4       # its largest batch
    BUSY_S = 5        # seconds its batches took, pads and slowdowns included
    LAST_DONE_S = 6   # time.monotonic() when its last batch finished
    WORKERS = 7       # 1 for a model worker, 0 for an API server


_N = len(Field)
_FMT = f"{_N}d"
_SIZE = struct.calcsize(_FMT)
_SUMMED = (Field.RECEIVED, Field.ANSWERED, Field.BATCHES, Field.ITEMS, Field.BUSY_S, Field.WORKERS)


class Books:
    """This process's books file in `folder` (created at once); `role` names it."""

    def __init__(self, folder: str | os.PathLike[str], role: str) -> None:
        self.path = Path(folder) / f"{role}-{os.getpid()}.bin"
        with open(self.path, "wb") as f:
            f.write(bytes(_SIZE))
        with open(self.path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), _SIZE)
        self._values = [0.0] * _N
        if role == "worker":
            self.set(Field.WORKERS, 1.0)

    def add(self, field: Field, amount: float = 1.0) -> None:
        self.set(field, self._values[field] + amount)

    def set(self, field: Field, value: float) -> None:
        self._values[field] = value
        struct.pack_into("d", self._map, 8 * field, value)

    def batch(self, size: int, busy_s: float, done_s: float) -> None:
        """One finished batch of `size` requests that took `busy_s` seconds."""
        self.add(Field.BATCHES)
        self.add(Field.ITEMS, size)
        self.add(Field.BUSY_S, busy_s)
        self.set(Field.LAST_DONE_S, done_s)
        if size > self._values[Field.LARGEST]:
            self.set(Field.LARGEST, size)


def read_books(folder: str | os.PathLike[str]) -> dict[Field, float]:
    """Every books file in `folder` summed (LARGEST and LAST_DONE_S: their maximum)."""
    total = {f: 0.0 for f in Field}
    for path in Path(folder).glob("*.bin"):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        if len(raw) != _SIZE:
            continue
        values = struct.unpack(_FMT, raw)
        for f in Field:
            total[f] = total[f] + values[f] if f in _SUMMED else max(total[f], values[f])
    return total


def write_slowdown(folder: str | os.PathLike[str], factor: float) -> None:
    """Every worker's batches take `factor` times their time from their next batch on."""
    tmp = Path(folder) / "slowdown.tmp"
    tmp.write_text(repr(float(factor)))
    os.replace(tmp, Path(folder) / "slowdown")  # whole, never half-written


class Slowdown:
    """A worker's view of the folder's `slowdown` file (1.0 while there is none)."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.path = None if folder is None else Path(folder) / "slowdown"
        self._seen: tuple[int, int] | None = None
        self._factor = 1.0

    def factor(self) -> float:
        if self.path is None:
            return 1.0
        try:
            st = os.stat(self.path)
        except OSError:
            return 1.0
        key = (st.st_ino, st.st_mtime_ns)
        if key != self._seen:
            try:
                self._factor = max(0.0, float(self.path.read_text()))
                self._seen = key
            except (OSError, ValueError):
                pass
        return self._factor
