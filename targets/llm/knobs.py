"""`--set KEY=VALUE` for an LLM engine: its scheduler knobs and its cost coefficients, checked by name.

Keys are `LlmEngineSpec`'s fields (batch_size, max_wait_s, kv_blocks, block_size,
max_seqs, max_batched_tokens, chunked_prefill, chunk_tokens) and `StepCost`'s
(base_s, per_prefill_token_s, per_decode_seq_s, per_context_token_s, and the front
end's frontend_in_s, frontend_out_s). A wrong key or a value of the wrong type is
a ValueError naming the valid keys.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

from targets.llm import LlmEngineSpec
from targets.llm.cost import StepCost

__all__ = ["ENGINE_KNOBS", "COST_KNOBS", "engine_with"]

ENGINE_KNOBS = {f.name: f.type for f in fields(LlmEngineSpec) if f.name not in ("policy", "cost")}
COST_KNOBS = tuple(f.name for f in fields(StepCost))
_TYPES = {"int": int, "float": float, "bool": bool, "float | None": float}


def _typed(key: str, raw: Any, kind: str) -> Any:
    value = json.loads(raw) if isinstance(raw, str) else raw
    want = _TYPES.get(kind, float)
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise ValueError(f"--set {key}: expected {kind}, got {raw!r}")
    return value


def engine_with(base: LlmEngineSpec, knobs: dict[str, Any]) -> LlmEngineSpec:
    """`base` with `knobs` applied (values as typed or as --set text); ValueError on a bad key or value."""
    engine, cost = {}, {}
    for key, raw in knobs.items():
        try:
            if key in ENGINE_KNOBS:
                engine[key] = _typed(key, raw, str(ENGINE_KNOBS[key]))
            elif key in COST_KNOBS:
                cost[key] = _typed(key, raw, "float")
            else:
                raise ValueError(f"--set {key}: not an LLM engine knob (valid: "
                                 f"{', '.join([*ENGINE_KNOBS, *COST_KNOBS])})")
        except json.JSONDecodeError:
            raise ValueError(f"--set {key}: {raw!r} is not a number or true/false") from None
    return replace(base, cost=replace(base.cost, **cost), **engine)
