"""Framework target specs: `FRAMEWORK(:KEY=VALUE(,KEY=VALUE)*)?`, e.g. `litserve:timeout=0.2`.

A key is one of the framework's knobs (targets.frameworks.knobs) or one of the
design's TargetConfig knobs (the fleet, the clients, the SLO); `--set` pairs
count as if written in the spec, last. A framework takes no `+FLAW` / `-FLAW`:
its flaws are its behaviour, which only its knobs change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from targets.config import CostModel, TargetConfig
from targets.frameworks.knobs import FrameworkKnobs, framework_config
from targets.frameworks.registry import FRAMEWORKS, Framework
from workloads.config_files import ConfigError, validate

__all__ = ["FrameworkTarget", "framework_knob_names", "framework_name", "framework_target"]


@dataclass(frozen=True)
class FrameworkTarget:
    """A framework, its knobs, and the design it serves (fleet, clients, SLO)."""

    framework: Framework
    knobs: FrameworkKnobs
    config: TargetConfig

    def workers(self, cfg: TargetConfig | None = None) -> int:
        """Model workers (LitServe's inference processes, Ray's replicas, BentoML's model workers) for
        `cfg`'s fleet."""
        cfg = cfg or self.config
        own = next((getattr(self.knobs, k) for k in ("workers_per_device", "num_replicas", "workers")
                    if getattr(self.knobs, k, None)), None)
        return own or cfg.fleet_gpus

    def batch_size(self) -> int:
        return getattr(self.knobs, "max_batch_size", None) or self.config.batch_size

    def flaws(self) -> list[str]:
        """The doc's flaws this target has: the framework's declared ones its knobs leave (a flaw
        is fixed once every knob of its fix is changed from the framework's default)."""
        defaults = type(self.knobs)()
        return [f.id for f in self.framework.flaws
                if not f.fix or any(getattr(self.knobs, k) == getattr(defaults, k) for k in f.fix)]

    def pad_s(self) -> float | None:
        """Seconds each batch is held to (None: not padded)."""
        if self.knobs.pad_to_s is not None:
            return self.knobs.pad_to_s or None
        return self.config.batch_time_s if self.config.cost_model is CostModel.CONSTANT else None


def _value(raw: str) -> Any:
    """A knob's value: JSON where it parses (numbers, true, null), else a string (as targets.spec
    reads `--set`; targets.spec imports this module, so not from there)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def framework_name(spec: str) -> str | None:
    """The framework a spec names, else None (a harness target, a file, a URL)."""
    head = spec.partition(":")[0]
    if head in FRAMEWORKS:
        return head
    # `litserve+blind-retries`: a framework with a flaw op, refused by framework_target
    return next((n for n in FRAMEWORKS if head.startswith(n) and head[len(n)] in "+-"), None)


def framework_knob_names() -> frozenset[str]:
    """Every framework's knob names (what `--set` may carry besides TargetConfig's)."""
    return frozenset(k for fw in FRAMEWORKS.values() for k in fw.knobs.model_fields)


def framework_target(spec: str, overrides: dict[str, Any] | None = None) -> FrameworkTarget | None:
    """The framework target a spec names (None: not a framework). ConfigError names a bad knob."""
    name = framework_name(spec)
    if name is None:
        return None
    fw = FRAMEWORKS[name]
    text, _, knob_text = spec.partition(":")
    if text != name:
        raise ConfigError(f"target '{spec}': a framework takes knobs, not +FLAW or -FLAW (see `harness targets`)")
    pairs: dict[str, Any] = {}
    for pair in knob_text.split(",") if knob_text else []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"target '{spec}': '{pair}' is not KEY=VALUE")
        pairs[key] = _value(raw)
    pairs.update(overrides or {})
    own = fw.knobs.model_fields
    design = TargetConfig.model_fields
    for key in pairs:
        if key not in own and key not in design:
            raise ConfigError(f"target '{spec}': key '{key}': not a {name} knob ({', '.join(own)}) nor a "
                              "design knob (see `harness targets --knobs`)")
    knobs = validate(fw.knobs, {k: v for k, v in pairs.items() if k in own}, f"target '{spec}'")
    cfg = {**framework_config(), **{k: v for k, v in pairs.items() if k in design and k not in own}}
    cfg["name"] = pairs.get("name", spec)
    return FrameworkTarget(fw, knobs, validate(TargetConfig, cfg, f"target '{spec}'"))
