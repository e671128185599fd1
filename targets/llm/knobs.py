"""`--set KEY=VALUE` for an LLM engine: its scheduler knobs and its cost coefficients, checked by name.

Keys are `LlmEngineSpec`'s fields (batch_size, max_wait_s, kv_blocks, block_size,
max_seqs, max_batched_tokens, chunked_prefill, chunk_tokens; the tenant limits
tenant_rps, tenant_burst_requests, tenant_tok_s, tenant_burst_tokens,
over_limit (shed or delay), max_delay_s; prefix_caching (true/false); tenant_priority as `name:class,...`
text, e.g. `bulk:1`, or (name, class) pairs) and `StepCost`'s
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


_PAIRS = "tuple[tuple[str, int], ...]"


def _pairs(key: str, raw: Any) -> tuple[tuple[str, int], ...]:
    """`name:class,name:class` (or pairs, or a {name: class} mapping) as (name, class) pairs."""
    if isinstance(raw, str):
        raw = [part.rsplit(":", 1) for part in raw.split(",") if part.strip()]
    items = raw.items() if isinstance(raw, dict) else raw
    try:
        pairs = tuple((str(name).strip(), int(cls)) for name, cls in items)
    except (TypeError, ValueError):
        raise ValueError(f"--set {key}: expected name:class,... (class an integer), got {raw!r}") from None
    if any(not name for name, _ in pairs):
        raise ValueError(f"--set {key}: a tenant name is empty in {raw!r}")
    return pairs


def _typed(key: str, raw: Any, kind: str) -> Any:
    if kind == _PAIRS:
        return _pairs(key, raw)
    if kind == "str":
        if not isinstance(raw, str):
            raise ValueError(f"--set {key}: expected text, got {raw!r}")
        return raw
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
    spec = replace(base, cost=replace(base.cost, **cost), **engine)
    spec.limits()  # ValueError on a bad tenant limit (over_limit's words, a negative rate)
    return spec
