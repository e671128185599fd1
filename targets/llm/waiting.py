"""The continuous scheduler's waiting queue: FIFO within a priority class, the lowest class first.

A sequence's class is `Sequence.priority` (vLLM's convention: a lower number is
served earlier). With every sequence in class 0 this is a plain deque; a
preempted sequence goes back to the head of its own class, not ahead of a
better class.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Iterator

from targets.llm.sequence import Sequence

__all__ = ["Waiting"]


class Waiting:
    __slots__ = ("_queues", "_classes", "_n")

    def __init__(self) -> None:
        self._queues: dict[int, deque[Sequence]] = {}
        self._classes: list[int] = []   # sorted, every class ever seen (few)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __iter__(self) -> Iterator[Sequence]:
        """Every waiting sequence, in the order they would be admitted."""
        for cls in self._classes:
            yield from self._queues[cls]

    def _queue(self, cls: int) -> deque[Sequence]:
        q = self._queues.get(cls)
        if q is None:
            q = self._queues[cls] = deque()
            bisect.insort(self._classes, cls)
        return q

    def append(self, seq: Sequence) -> None:
        self._queue(seq.priority).append(seq)
        self._n += 1

    def appendleft(self, seq: Sequence) -> None:
        self._queue(seq.priority).appendleft(seq)
        self._n += 1

    def head(self) -> Sequence:
        """The next sequence to admit (IndexError when empty)."""
        for cls in self._classes:
            q = self._queues[cls]
            if q:
                return q[0]
        raise IndexError("no sequence is waiting")

    def popleft(self) -> Sequence:
        seq = self.head()
        self._queues[seq.priority].popleft()
        self._n -= 1
        return seq
