"""A fleet of LLM replicas behind one router, as a target spec: `llm-fleet:KEY=VALUE,...`.

Keys: `router` (`targets.llm.routing.router_names`), `replicas`, the router's knobs
`load_factor` (prefix: 0 = no load bound), `affinity_blocks` (prefix: leading blocks
hashed), `overlap_weight` (kv-aware) and `cache_threshold`, `balance_abs`, `balance_rel`
(cache-aware), the router's own cost per request
`router_in_s` (its delay of a request on the way in: reading, parsing, routing and the
extra hop to the replica) and `router_out_s` (of each token on the way back: the extra
relay), which the sim adds as it adds the engine's front end (`StepCost.frontend_in_s`,
`frontend_out_s`; `harness.live.llm_fleet_cost` measures both live), and any LLM engine knob (`targets.llm.knobs`:
kv_blocks, max_seqs, prefix_caching, the cost coefficients...), which every replica
shares. Each replica is a continuous-batching engine with prefix caching unless
`prefix_caching=false`. `parse_fleet("llm-fleet:router=prefix,replicas=16")` gives a
`FleetSpec`; a bad key or value is a ValueError naming the valid ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from targets.llm import LlmEngineSpec, LlmPolicy
from targets.llm.knobs import COST_KNOBS, ENGINE_KNOBS, engine_with
from targets.llm.routing import Router, RouterPolicy, create_router

__all__ = ["FLEET", "FleetSpec", "is_fleet", "parse_fleet"]

FLEET = "llm-fleet"
_INT_KNOBS = ("replicas", "affinity_blocks", "balance_abs")
_FLEET_KNOBS = ("router", "replicas", "load_factor", "affinity_blocks", "overlap_weight", "cache_threshold",
               "balance_abs", "balance_rel", "router_in_s", "router_out_s")


@dataclass(frozen=True)
class FleetSpec:
    router: str = RouterPolicy.ROUND_ROBIN.value
    replicas: int = 16
    load_factor: float = 1.25
    affinity_blocks: int = 8
    overlap_weight: float = 1.0
    cache_threshold: float = 0.3   # cache-aware: sglang-router's thresholds (routing.CacheAware)
    balance_abs: int = 64
    balance_rel: float = 1.5
    router_in_s: float = 0.0   # the router's delay of each request before its replica sees it (s)
    router_out_s: float = 0.0  # and of each token on its way back to the client (s)
    engine: LlmEngineSpec = field(default_factory=lambda: LlmEngineSpec(prefix_caching=True))
    label: str = ""        # the spec text it was parsed from (a name for tables)
    # Measured front ends (s; a live profile's per-request samples, `harness.live.llm_fleet_profile`): when
    # given, the sim draws each request's way in and way out from them (seeded) in place of the constants
    # `engine.cost.frontend_in_s` and `frontend_out_s`, the router's cost added to each draw.
    front_in_samples: tuple[float, ...] = ()
    front_out_samples: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.engine.policy is not LlmPolicy.CONTINUOUS:
            raise ValueError("a fleet's replicas batch continuously (llm-continuous)")
        for key in ("router_in_s", "router_out_s"):
            v = getattr(self, key)
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{FLEET} {key}: expected seconds >= 0, got {v!r}")
        self.new_router()  # ValueError on a bad router name or knob

    def new_router(self) -> Router:
        return create_router(self.router, self.replicas, self.engine.block_size, self.load_factor,
                             self.affinity_blocks, self.overlap_weight, self.cache_threshold, self.balance_abs,
                             self.balance_rel)

    @property
    def front_in_s(self) -> float:
        """From a request's scheduled start to its replica's scheduler seeing it: front end and router."""
        return self.engine.cost.frontend_in_s + self.router_in_s

    @property
    def front_out_s(self) -> float:
        """From a token leaving its replica's engine to the client reading it."""
        return self.engine.cost.frontend_out_s + self.router_out_s

    @property
    def name(self) -> str:
        return self.label or f"{FLEET}:router={self.router},replicas={self.replicas}"


def is_fleet(spec: str) -> bool:
    return spec == FLEET or spec.startswith(FLEET + ":")


def _number(key: str, raw: Any, kind: type) -> Any:
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{FLEET} {key}: expected {kind.__name__}, got {raw!r}") from None
    if kind is int and str(raw).strip() != str(value):
        raise ValueError(f"{FLEET} {key}: expected int, got {raw!r}")
    return value


def parse_fleet(text: str, base: LlmEngineSpec | None = None) -> FleetSpec:
    """`llm-fleet[:KEY=VALUE,...]` as a FleetSpec (engine knobs over `base`, default prefix caching on)."""
    if not is_fleet(text):
        raise ValueError(f"'{text}' is not an {FLEET} spec ({FLEET}:router=...,replicas=...)")
    _, _, rest = text.partition(":")
    fleet: dict[str, Any] = {}
    engine: dict[str, str] = {}
    for pair in filter(None, rest.split(",")):
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{FLEET}: '{pair}' is not KEY=VALUE")
        if key in _FLEET_KNOBS:
            fleet[key] = raw if key == "router" else _number(key, raw, int if key in _INT_KNOBS
                                                                else float)
        elif key in ENGINE_KNOBS or key in COST_KNOBS:
            engine[key] = raw
        else:
            raise ValueError(f"{FLEET}: '{key}' is not a fleet knob (valid: {', '.join(_FLEET_KNOBS)}, or an "
                             "LLM engine knob)")
    spec = engine_with(base or LlmEngineSpec(prefix_caching=True), engine)
    return FleetSpec(engine=replace(spec, policy=LlmPolicy.CONTINUOUS), label=text, **fleet)
