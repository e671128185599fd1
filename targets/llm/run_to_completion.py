"""Request-level batching for an LLM: a batch is formed, then runs until its longest output ends.

This is the design doc's batcher applied to token generation (Hugging Face
`generate` on a static batch): the prompts are padded to the longest one, every
slot takes a decode row on every step, and a slot whose sequence has finished
stays in the batch, idle, until the last one ends. New requests wait for the
whole batch. `max_wait_s=None` is the doc's full-batch-only dispatch
(`llm-static`); a number flushes a partial batch once its oldest request has
waited that long (`llm-dynamic`). Tokens stream as they are made: a sequence's
answer ends at its own last token, though its slot is held to the batch's end.

A step machine: `add`, `schedule(now) -> Step | None`, `complete(step, now)`,
`wake_at()`; it never reads a clock.
"""

from __future__ import annotations

from collections import deque

from targets.llm.sequence import Sequence, Step, StepOutcome

__all__ = ["RunToCompletion"]


class RunToCompletion:
    def __init__(self, batch_size: int, max_wait_s: float | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_wait_s is not None and not max_wait_s >= 0:
            raise ValueError(f"max_wait_s must be >= 0, got {max_wait_s}")
        self.batch_size = batch_size
        self.max_wait_s = max_wait_s
        self.waiting: deque[Sequence] = deque()
        self.batch: list[Sequence] = []
        self._padded_prompt = 0
        self._steps = 0
        # Slot accounting over every token position a batch holds: used / total.
        self.slot_tokens_total = 0
        self.slot_tokens_used = 0
        self.padding_tokens = 0

    # -- the step-machine contract ------------------------------------------------------------

    def add(self, seq: Sequence, now: float) -> bool:
        seq.prefill_left = seq.prompt_tokens
        self.waiting.append(seq)
        return True

    def pending(self) -> int:
        return len(self.waiting) + len(self.batch)

    def running(self) -> int:
        return len(self.batch)

    def wake_at(self) -> float | None:
        """When a partial batch becomes due with no new arrival (None: only an arrival can help)."""
        if self.batch or not self.waiting or self.max_wait_s is None:
            return None
        return self.waiting[0].arrival_s + self.max_wait_s

    def schedule(self, now: float) -> Step | None:
        if self.batch:
            return self._decode()
        due = self.max_wait_s is not None and self.waiting and now >= self.waiting[0].arrival_s + self.max_wait_s
        if len(self.waiting) >= self.batch_size or due:
            return self._prefill(now)
        return None

    def complete(self, step: Step, now: float) -> StepOutcome:
        out = StepOutcome()
        for seq, n in step.prefills:
            seq.computed += n
            seq.prefill_left = 0
            self._emit(seq, now, out)
        for seq in step.decodes:
            seq.computed += 1
            self._emit(seq, now, out)
        self._steps += 1
        if all(s.done for s in self.batch):
            self.batch = []
        return out

    # -- internals ----------------------------------------------------------------------------

    def _prefill(self, now: float) -> Step:
        n = min(self.batch_size, len(self.waiting))
        self.batch = [self.waiting.popleft() for _ in range(n)]
        self._padded_prompt = max(s.prompt_tokens for s in self.batch)
        self._steps = 0
        real = sum(s.prompt_tokens for s in self.batch)
        padded = n * self._padded_prompt
        self.padding_tokens += padded - real
        for s in self.batch:
            s.scheduled_s = now
        self.slot_tokens_total += n
        self.slot_tokens_used += n
        return Step(prefills=[(s, s.prompt_tokens) for s in self.batch], prefill_tokens=padded,
                    padding_tokens=padded - real)

    def _decode(self) -> Step:
        live = [s for s in self.batch if not s.done]
        slots = len(self.batch)
        self.slot_tokens_total += slots
        self.slot_tokens_used += len(live)
        # Every slot attends over the padded prompt and every step so far, finished or not.
        context = slots * (self._padded_prompt + self._steps)
        return Step(decodes=live, decode_seqs=slots, context_tokens=context, idle_slots=slots - len(live))

    @staticmethod
    def _emit(seq: Sequence, now: float, out: StepOutcome) -> None:
        seq.emit(now, out.gaps)
        out.tokens += 1
        if seq.done:
            out.finished.append(seq)
