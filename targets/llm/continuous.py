"""Iteration-level (continuous) batching over a paged KV cache, as Orca and vLLM schedule.

Every step re-forms the batch: sequences join as soon as blocks and budgets
allow and leave the moment their last token is out, so no slot idles and no
prompt is padded. Capacity is the KV cache (`BlockBudget`), not a batch size.

Per step, in arrival order (the oldest sequence has priority):
- running sequences first: each decodes one token or prefills its next chunk;
  when the cache has no block for it, the newest running sequence is preempted
  by recompute (its blocks freed, it goes back to the head of the queue and
  later re-prefills prompt + tokens so far), as vLLM's default preemption does;
- then waiting sequences are admitted while `max_seqs`, the step's
  `max_batched_tokens` and free blocks allow (admission never preempts, but
  for priority classes, below).

Priority classes (`priority_of`: tenant index -> class, lower first; others 0)
reorder all of that by class first, arrival second, as vLLM's priority
scheduling does: the waiting queue is FIFO per class (`Waiting`), the running
list is kept sorted by class (so better classes get the step's budget first
and the newest sequence of the worst class is preempted first), and a waiting
sequence of a better class than the worst running one preempts running ones
of worse classes when blocks or `max_seqs` would keep it out.
With `chunked_prefill` a prompt is split into chunks of at most `chunk_tokens`
that share steps with decodes (Sarathi-Serve, vLLM v1). Without it a prompt is
prefilled whole, in a prefill-only step that pauses every decode (vLLM v0):
the head-of-line blocking of decodes that long prompts cause.

With `prefix_caching` the budget is a prefix cache (`PrefixCache`): a sequence
admitted takes the longest cached prefix of its named blocks and prefills only
the rest; its blocks are shared as they fill, and kept after it ends until the
cache needs their room (LRU).

A request that can never fit (its prompt + output need more blocks than the
cache has, or, unchunked, a prompt over `max_batched_tokens`) is rejected at
`add`. A step machine: `add`, `schedule(now) -> Step | None`,
`complete(step, now)`, `wake_at()`; it never reads a clock.
"""

from __future__ import annotations

import bisect

from targets.llm.kv_cache import BlockBudget, blocks_for
from targets.llm.prefix_cache import PrefixCache
from targets.llm.sequence import Sequence, Step, StepOutcome
from targets.llm.waiting import Waiting

__all__ = ["Continuous"]


def _priority(seq: Sequence) -> int:
    return seq.priority


class Continuous:
    def __init__(self, kv_blocks: int, block_size: int = 16, max_seqs: int = 256, max_batched_tokens: int = 8192,
                 chunked_prefill: bool = True, chunk_tokens: int = 512,
                 priority_of: dict[int, int] | None = None, prefix_caching: bool = False) -> None:
        if max_seqs < 1 or max_batched_tokens < 1 or chunk_tokens < 1:
            raise ValueError("max_seqs, max_batched_tokens and chunk_tokens must be >= 1")
        if max_batched_tokens < max_seqs:
            raise ValueError(f"max_batched_tokens ({max_batched_tokens}) must be >= max_seqs ({max_seqs}):"
                             " every running sequence needs a token of the step to decode")
        self.kv: BlockBudget | PrefixCache = (PrefixCache(kv_blocks, block_size) if prefix_caching
                                              else BlockBudget(kv_blocks, block_size))
        self.prefix = self.kv if isinstance(self.kv, PrefixCache) else None
        self.max_seqs = max_seqs
        self.max_batched_tokens = max_batched_tokens
        self.chunked_prefill = chunked_prefill
        self.chunk_tokens = chunk_tokens
        self.priority_of = {t: c for t, c in (priority_of or {}).items() if c != 0}
        self.waiting = Waiting()
        self.run_list: list[Sequence] = []
        self.preemptions = 0

    # -- the step-machine contract ------------------------------------------------------------

    def add(self, seq: Sequence, now: float) -> bool:
        """Queue `seq`; False (and `seq.rejected`) when it can never fit this engine."""
        too_long = blocks_for(seq.prompt_tokens + seq.output_tokens, self.kv.block_size) > self.kv.total
        unchunkable = not self.chunked_prefill and seq.prompt_tokens + seq.output_tokens > self.max_batched_tokens
        if too_long or unchunkable:
            seq.rejected = True
            return False
        seq.prefill_left = seq.prompt_tokens
        if self.priority_of:
            seq.priority = self.priority_of.get(seq.tenant, 0)
        self.waiting.append(seq)
        return True

    def pending(self) -> int:
        return len(self.waiting) + len(self.run_list)

    def running(self) -> int:
        return len(self.run_list)

    def wake_at(self) -> float | None:
        return None  # work is never held back for a timer: an idle engine waits only for arrivals

    def schedule(self, now: float) -> Step | None:
        step = Step()
        budget = self.max_batched_tokens
        if self.priority_of and self.waiting and self.run_list:
            self._preempt_for_priority()
        if not self.chunked_prefill and self._head_fits(budget):
            budget = self._admit(step, budget, now)  # prefill-only step: decodes wait
        else:
            budget = self._run_running(step, budget)
            self._admit(step, budget, now)
        return step if step else None

    def complete(self, step: Step, now: float) -> StepOutcome:
        out = StepOutcome()
        for seq, n in step.prefills:
            seq.computed += n
            seq.prefill_left -= n
            if seq.prefill_left == 0:
                seq.emit(now, out.gaps)
                out.tokens += 1
                if seq.done:
                    out.finished.append(seq)
        # The hot path (every running sequence, every step): Sequence.emit inlined. A decoding
        # sequence has emitted its first token already, so every decode token has a gap.
        # Sequences that decoded together last step have one gap: counted as runs of equal gaps,
        # a dict update a run, not a float hashed twice a token.
        gaps, finished = out.gaps, out.finished
        run_gap, run = 0.0, 0
        for seq in step.decodes:
            seq.computed += 1
            gap = now - seq.last_token_s
            if gap != run_gap or run == 0:
                if run:
                    gaps[run_gap] = gaps.get(run_gap, 0) + run
                run_gap, run = gap, 0
            run += 1
            seq.last_token_s = now
            seq.generated += 1
            if seq.generated >= seq.output_tokens:
                seq.finish_s = now
                finished.append(seq)
        if run:
            gaps[run_gap] = gaps.get(run_gap, 0) + run
        out.tokens += len(step.decodes)
        prefix = self.prefix
        if prefix is not None:
            bs = prefix.block_size
            for seq, _n in step.prefills:
                prefix.commit(seq)
            for seq in step.decodes:
                if seq.computed % bs == 0 and seq.shared < len(seq.block_hashes):
                    prefix.commit(seq)
        for seq in finished:
            self.kv.release(seq)
            self.run_list.remove(seq)
        return out

    # -- internals ----------------------------------------------------------------------------

    def _run_running(self, step: Step, budget: int) -> int:
        """Give each running sequence its decode token or next chunk, preempting from the newest."""
        run, block_size = self.run_list, self.kv.block_size
        decodes = step.decodes
        i = context = 0
        while i < len(run) and budget > 0:
            seq = run[i]
            if seq.prefill_left == 0:
                # Hot path: a decode whose last block has room needs no allocation.
                if seq.computed >= seq.blocks * block_size and not self._reserve(seq, 1):
                    continue  # seq itself was preempted; run[i] is now the next one
                decodes.append(seq)
                context += seq.computed + 1
                budget -= 1
            else:
                n = min(seq.prefill_left, self.chunk_tokens, budget)
                if not self._reserve(seq, n):
                    continue
                self._add_work(step, seq, n)
                budget -= n
            i += 1
        step.decode_seqs = len(decodes)
        step.context_tokens += context
        return budget

    def _reserve(self, seq: Sequence, tokens: int) -> bool:
        """Blocks for `tokens` more of running `seq`, preempting the newest running sequences
        until they fit; False when `seq` itself had to go."""
        while not self.kv.grow(seq, tokens):
            victim = self.run_list.pop()
            self._preempt(victim)
            if victim is seq:
                return False
        return True

    def _head_fits(self, budget: int) -> bool:
        if not self.waiting or len(self.run_list) >= self.max_seqs:
            return False
        head = self.waiting.head()
        return head.prefill_left <= budget and self.kv.extra_for(head, head.prefill_left) <= self.kv.free

    def _admit(self, step: Step, budget: int, now: float) -> int:
        while self.waiting and budget > 0 and len(self.run_list) < self.max_seqs:
            seq = self.waiting.head()
            if self.prefix is not None:
                self.prefix.match(seq)
            n = min(seq.prefill_left, budget)
            if self.chunked_prefill:
                n = min(n, self.chunk_tokens)
            elif n < seq.prefill_left:
                if self.prefix is not None:
                    self._unmatch(seq)
                break  # unchunked: the whole prompt or nothing
            if not self.kv.grow(seq, n):
                if self.prefix is not None:
                    self._unmatch(seq)
                break
            self.waiting.popleft()
            if self.prefix is not None:
                self.prefix.record(seq)
            if self.priority_of:
                bisect.insort_right(self.run_list, seq, key=_priority)  # after its class: FIFO within it
            else:
                self.run_list.append(seq)
            if seq.scheduled_s != seq.scheduled_s:  # NaN: first admission
                seq.scheduled_s = now
            self._add_work(step, seq, n)
            budget -= n
        return budget

    def _preempt_for_priority(self) -> None:
        """Make room for the waiting head by preempting running sequences of worse classes (the
        newest of the worst first) while blocks for its first chunk or `max_seqs` keep it out."""
        head = self.waiting.head()
        first = min(head.prefill_left, self.chunk_tokens if self.chunked_prefill else head.prefill_left)
        while (self.run_list and self.run_list[-1].priority > head.priority
               and (len(self.run_list) >= self.max_seqs or self.kv.extra_for(head, first) > self.kv.free)):
            self._preempt(self.run_list.pop())

    @staticmethod
    def _add_work(step: Step, seq: Sequence, n: int) -> None:
        """A prefill chunk of `n` tokens; its attention reads the `computed` tokens before it."""
        step.prefills.append((seq, n))
        step.prefill_tokens += n
        step.context_tokens += seq.computed

    def _unmatch(self, seq: Sequence) -> None:
        """Give back the cached prefix a sequence took but could not be admitted with."""
        self.kv.release(seq)
        seq.prefill_left += seq.computed
        seq.computed = 0

    def _preempt(self, seq: Sequence) -> None:
        """Recompute preemption: drop its cache; it re-prefills prompt + tokens so far, first in line."""
        self.kv.release(seq)
        seq.computed = 0
        seq.prefill_left = seq.prompt_tokens + seq.generated
        seq.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(seq)
