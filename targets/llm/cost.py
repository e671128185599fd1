"""What one forward pass of an LLM engine costs: time = f(prefill tokens, decode sequences, context tokens).

The model is affine, one term per resource a step uses:

    time_s = base_s + per_prefill_token_s * prefill_tokens
                    + per_decode_seq_s * decode_seqs + per_context_token_s * context_tokens

`base_s` is reading the weights once per step (decode is memory-bound, so a step
of one sequence costs about this); a prefill token or a decode row adds its
matrix-multiply FLOPs; a context token adds reading its keys and values in
attention. `StepCost.from_table(rows)` fits the four coefficients to measured
steps (non-negative least squares), which is the table form: `harness profile
llm` measures such rows on a real decoder, or a user writes them by hand.

DEFAULT is a roofline estimate, not a measurement, for a 7B-parameter decoder
(Llama-2-7B shapes: 32 layers, d_model 4096, fp16) on one A100-80GB SXM:
- base 8 ms: 13.5 GB of fp16 weights over ~1.7 TB/s achieved of the 2.0 TB/s HBM
  bandwidth (NVIDIA A100 datasheet), the floor Pope et al. 2022 ("Efficiently
  Scaling Transformer Inference") and Databricks' "LLM Inference Performance
  Engineering: Best Practices" (2023) describe for small-batch decode;
- 0.09 ms per prefill token or decode row: 2 x 6.7e9 FLOPs per token at ~150 TFLOP/s
  (about half the 312 TFLOP/s dense fp16 peak);
- 0.25 us per context token: 2 x 32 layers x 4096 x 2 bytes = 0.5 MiB of KV per token
  (the formula of Kwon et al. 2023, vLLM/PagedAttention) read at ~2 TB/s.
DEFAULT_KV_BLOCKS sizes the cache the same way: ~50 GiB left after weights and
activations / 0.5 MiB per token / 16-token blocks ~ 6,000 blocks (~96k tokens).

The front end is two per-request terms, not per-step ones: `frontend_in_s`,
from a request's scheduled start to the engine's scheduler seeing it (the
client's send, the HTTP hop, parsing, the event loop's turn), and
`frontend_out_s`, from a token leaving the engine to its SSE chunk reaching the
client. The sim delays each arrival by the first and every token by the second,
so they add to TTFT and E2E but not to TPOT or ITL. DEFAULT prices the engine
alone (both 0); `harness profile llm` measures them on the live server, where
they are milliseconds per request on a loaded CPU, comparable to a tiny model's
prefill (`harness.live.llm_profile`).

`wake_s` is what a step costs more when the engine sat idle before it (at least
`WAKE_IDLE_S`): a processor woken from idle runs its first step with cold caches and
a low clock. On this project's CPU decoder it is most of a millisecond against a
step of one: the same 40-token prefill behind 128 cached tokens took 1.0 ms back to
back and 1.9-2.1 ms after 10-300 ms asleep, a decode step 0.43 ms and 1.4 ms (one
worker thread, quiet 2-core machine). On a light day every first token follows such
a wake-up, so TTFT carries it while TPOT does not. The sims add it to a step that
begins `WAKE_IDLE_S` or more after the engine's last step ended (or before any);
`StepCost.fit_wake` measures it from a live engine's steps and the idle time before
each (`/step_log`). DEFAULT has none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence as Seq

import numpy as np

__all__ = ["DEFAULT", "DEFAULT_BLOCK_SIZE", "DEFAULT_KV_BLOCKS", "StepCost", "WAKE_IDLE_S"]

WAKE_IDLE_S = 0.005   # idle this long before a step, and it pays `wake_s`


@dataclass(frozen=True)
class StepCost:
    """Affine step time (s) in prefill tokens, decode rows and context tokens, and the per-request
    front-end delays (s) of the module doc; every term >= 0."""

    base_s: float
    per_prefill_token_s: float
    per_decode_seq_s: float
    per_context_token_s: float
    frontend_in_s: float = 0.0
    frontend_out_s: float = 0.0
    wake_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("base_s", "per_prefill_token_s", "per_decode_seq_s", "per_context_token_s", "frontend_in_s",
                     "frontend_out_s", "wake_s"):
            v = getattr(self, name)
            if not (v >= 0 and np.isfinite(v)):
                raise ValueError(f"StepCost.{name} must be a finite number >= 0, got {v}")
        if self.base_s == 0 and self.per_prefill_token_s == 0 and self.per_decode_seq_s == 0:
            raise ValueError("StepCost: a step must cost something (base, prefill or decode > 0)")

    def time_s(self, prefill_tokens: int, decode_seqs: int, context_tokens: int) -> float:
        return (self.base_s + self.per_prefill_token_s * prefill_tokens + self.per_decode_seq_s * decode_seqs
                + self.per_context_token_s * context_tokens)

    def step_s(self, prefill_tokens: int, decode_seqs: int, context_tokens: int, idle_s: float) -> float:
        """`time_s`, and `wake_s` more when the engine sat idle `idle_s` >= WAKE_IDLE_S before the step."""
        t = self.time_s(prefill_tokens, decode_seqs, context_tokens)
        return t + self.wake_s if idle_s >= WAKE_IDLE_S else t

    def prefill_s(self, prompt_tokens: int) -> float:
        """One prompt alone (its attention reads its own tokens only in the chunk: no prior context)."""
        return self.time_s(prompt_tokens, 0, 0)

    def decode_s(self, seqs: int, context_tokens: int) -> float:
        return self.time_s(0, seqs, context_tokens)

    @classmethod
    def from_table(cls, rows: Iterable[Seq[float]]) -> "StepCost":
        """Fit the four step coefficients to measured rows (prefill_tokens, decode_seqs, context_tokens,
        time_s) by non-negative least squares (front end 0); ValueError when the rows cannot pin them."""
        data = np.asarray(list(rows), dtype=float)
        if data.ndim != 2 or data.shape[1] != 4:
            raise ValueError("cost table rows are (prefill_tokens, decode_seqs, context_tokens, time_s)")
        if len(data) < 4 or not np.isfinite(data).all() or (data < 0).any():
            raise ValueError(f"cost table needs >= 4 rows of finite, non-negative numbers, got {len(data)}")
        design = np.column_stack([np.ones(len(data)), data[:, :3]])
        # Scale columns so a token count of thousands does not swamp the intercept.
        scale = np.maximum(design.max(axis=0), 1e-12)
        from scipy.optimize import nnls  # here, not with the module: every LLM import paid scipy's

        coef, _ = nnls(design / scale, data[:, 3])
        return cls(*(float(c) for c in coef / scale))

    @classmethod
    def fit_median(cls, rows: Iterable[Seq[float]], iterations: int = 30) -> "StepCost":
        """`from_table`'s rows fitted by non-negative least absolute deviations (iteratively reweighted
        least squares): each coefficient set predicts the median step, not the mean. On a shared CPU a
        step's wall time has a long right tail (the thread preempted); least squares follows the tail and
        over-predicts the many decode steps while under-predicting the few prefill steps that TTFT waits
        on (0.55x and 0.85x their medians on a fleet day's steps; 1.0x and 1.1x fitted here)."""
        from scipy.optimize import nnls  # here, not with the module (as from_table)

        data = np.asarray(list(rows), dtype=float)
        first = cls.from_table(data)   # validates the rows
        design = np.column_stack([np.ones(len(data)), data[:, :3]])
        scale = np.maximum(design.max(axis=0), 1e-12)
        x, y = design / scale, data[:, 3]
        coef = np.array([first.base_s, first.per_prefill_token_s, first.per_decode_seq_s,
                         first.per_context_token_s]) * scale
        floor = max(1e-9, 1e-3 * float(np.median(y)))   # no row weighs more than one off by 0.1% of a step
        for _ in range(iterations):
            w = np.sqrt(1.0 / np.maximum(np.abs(y - x @ coef), floor))
            coef, _ = nnls(x * w[:, None], y * w)
        return cls(*(float(c) for c in coef / scale))


    @classmethod
    def fit_wake(cls, rows: Iterable[Seq[float]]) -> "StepCost":
        """Rows (prefill_tokens, decode_seqs, context_tokens, time_s, idle_s) fitted as `fit_median` fits the
        steps that followed another (idle_s < WAKE_IDLE_S; all steps when fewer than 8 did), and `wake_s`
        as the median of what each step after idle took over that fit (0 when none did, or none took
        more)."""
        data = np.asarray(list(rows), dtype=float)
        if data.ndim != 2 or data.shape[1] != 5:
            raise ValueError("fit_wake rows are (prefill_tokens, decode_seqs, context_tokens, time_s, idle_s)")
        woke = data[:, 4] >= WAKE_IDLE_S
        warm = data[~woke, :4] if (~woke).sum() >= 8 else data[:, :4]
        fit = cls.fit_median(warm)
        if not woke.any():
            return fit
        over = [w - fit.time_s(int(p), int(d), int(c)) for p, d, c, w in data[woke, :4]]
        return replace(fit, wake_s=max(0.0, float(np.median(over))))


DEFAULT = StepCost(base_s=0.008, per_prefill_token_s=0.09e-3, per_decode_seq_s=0.09e-3, per_context_token_s=0.25e-6)
DEFAULT_BLOCK_SIZE = 16
DEFAULT_KV_BLOCKS = 6_000
