"""Target specs: a base with flaws put back or fixed, and knob overrides.

Grammar (no spaces): ``BASE([+-]FLAW)*(:KEY=VALUE(,KEY=VALUE)*)?``

- ``naive``, ``hardened``: the bases (third-party bases come from the
  ``harness.targets`` entry-point group: a callable returning a dict of knobs);
- ``hardened+blind-retries``: hardened with that flaw put back;
- ``naive-full-batch-only``: naive with that flaw fixed;
- ``hardened:gpus=40,slo_s=0.2``: knob overrides;
- a path to a TOML file: ``base = "naive"``, optional ``add = [...]``,
  ``fix = [...]``, ``name``, and a ``[knobs]`` table (the design as config).
"""

from __future__ import annotations

import functools
import json
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from targets.config import TargetConfig
from targets.flaws import FLAW_IDS, get_flaw, hardened_knobs
from workloads.config_files import ConfigError, read_toml, validate

BASES = ("naive", "hardened")


@functools.cache
def _plugin_bases() -> dict[str, Any]:
    # Once a process: entry_points reads every installed distribution's metadata (about
    # 3 ms), and every target resolved (a job of rank's hundreds) asks.
    return {ep.name: ep for ep in entry_points(group="harness.targets")}


def base_names() -> list[str]:
    return list(BASES) + sorted(_plugin_bases())


def base_knobs(base: str) -> dict[str, Any]:
    if base == "naive":
        return {}
    if base == "hardened":
        return hardened_knobs()
    plugins = _plugin_bases()
    if base in plugins:
        return dict(plugins[base].load()())
    raise ConfigError(f"unknown target base '{base}': valid bases are {', '.join(base_names())}")


def parse_value(raw: str) -> Any:
    """`--set` values: JSON where it parses (numbers, true, null), else a string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_overrides(pairs: list[str] | tuple[str, ...], source: str = "--set") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{source}: '{pair}' is not KEY=VALUE")
        if key not in TargetConfig.model_fields and key not in _framework_knobs():
            raise ConfigError(f"{source}: key '{key}': not a target knob (see `harness targets --knobs`)")
        out[key] = parse_value(raw)
    return out


def _split_flaws(text: str) -> tuple[str, list[tuple[str, str]]]:
    """'hardened+blind-retries-no-headroom' -> ('hardened', [('+', 'blind-retries'), ('-', 'no-headroom')])."""
    bases = sorted(base_names(), key=len, reverse=True)
    base = next((b for b in bases if text == b or (text.startswith(b) and text[len(b)] in "+-")), None)
    if base is None:
        raise ConfigError(f"unknown target '{text}': valid bases are {', '.join(base_names())} (or a .toml path)")
    rest, ops = text[len(base):], []
    ids = sorted(FLAW_IDS, key=len, reverse=True)
    while rest:
        sign, rest = rest[0], rest[1:]
        flaw = next((f for f in ids if rest == f or (rest.startswith(f) and rest[len(f)] in "+-")), None)
        if sign not in "+-" or flaw is None:
            raise ConfigError(
                f"target '{text}': cannot read '{sign}{rest}': expected +FLAW or -FLAW with FLAW one of {', '.join(FLAW_IDS)}"
            )
        if (("-" if sign == "+" else "+"), flaw) in ops:
            raise ConfigError(f"target '{text}': both puts back and fixes '{flaw}'")
        ops.append((sign, flaw))
        rest = rest[len(flaw):]
    return base, ops


def _apply(knobs: dict[str, Any], ops: list[tuple[str, str]]) -> dict[str, Any]:
    for sign, flaw_id in ops:
        flaw = get_flaw(flaw_id)
        knobs.update(flaw.present if sign == "+" else flaw.fixed)
    return knobs


def _framework_knobs() -> frozenset[str]:
    from targets.frameworks.spec import framework_knob_names

    return framework_knob_names()


def resolve_target(spec: str, overrides: dict[str, Any] | None = None) -> TargetConfig:
    """The TargetConfig a spec string (or TOML path) names, overrides last. A framework
    target (targets.frameworks: `litserve`, `ray-serve`) gives the design it serves."""
    from targets.frameworks.spec import framework_target

    if spec.endswith(".toml") or Path(spec).is_file():
        return _from_toml(Path(spec), overrides or {})
    framework = framework_target(spec, overrides)
    if framework is not None:
        return framework.config
    foreign = sorted(set(overrides or {}) - set(TargetConfig.model_fields))
    if foreign:
        raise ConfigError(f"target '{spec}': '{foreign[0]}' is a framework's knob, not this target's "
                          "(give a framework its knobs in its spec: litserve:timeout=0.2)")
    text, _, knob_text = spec.partition(":")
    base, ops = _split_flaws(text)
    knobs = _apply(base_knobs(base), ops)
    if knob_text:
        knobs.update(parse_overrides(knob_text.split(","), source=f"target '{spec}'"))
    knobs.update(overrides or {})
    knobs["name"] = knobs.get("name") if "name" in (overrides or {}) else spec
    return validate(TargetConfig, knobs, f"target '{spec}'")


def _from_toml(path: Path, overrides: dict[str, Any]) -> TargetConfig:
    data = read_toml(path)
    allowed = {"base", "add", "fix", "name", "knobs", "description"}
    for key in data:
        if key not in allowed:
            raise ConfigError(f"{path}: key '{key}': unknown (allowed: {', '.join(sorted(allowed))})")
    base = data.get("base", "naive")
    if not isinstance(base, str):
        raise ConfigError(f"{path}: key 'base': must be a string")
    ops: list[tuple[str, str]] = []
    for key, sign in (("add", "+"), ("fix", "-")):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise ConfigError(f"{path}: key '{key}': must be a list of flaw ids")
        for item in items:
            if item not in FLAW_IDS:
                raise ConfigError(f"{path}: key '{key}': unknown flaw '{item}' (valid: {', '.join(FLAW_IDS)})")
            ops.append((sign, item))
    both = sorted({f for sign, f in ops if sign == "+"} & {f for sign, f in ops if sign == "-"})
    if both:
        raise ConfigError(f"{path}: keys 'add' and 'fix' both name {', '.join(repr(f) for f in both)}: "
                          "a design either has a flaw or fixes it")
    try:
        knobs = _apply(base_knobs(base), ops)
    except ConfigError as exc:
        raise ConfigError(f"{path}: key 'base': {exc}") from None
    table = data.get("knobs", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: key 'knobs': must be a table")
    for key in table:
        if key not in TargetConfig.model_fields:
            raise ConfigError(f"{path}: key 'knobs.{key}': not a target knob")
    knobs.update(table)
    knobs.update(overrides)
    knobs["name"] = overrides.get("name") or data.get("name") or path.stem
    try:
        return validate(TargetConfig, knobs, str(path))
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(f"{path}: key '", f"{path}: key 'knobs.")) from None


def flaws_present(config: TargetConfig) -> list[str]:
    """Flaw ids whose knobs in `config` all hold their 'present' values."""
    from targets.flaws import FLAWS

    knobs = config.model_dump(mode="json")
    out = []
    for flaw in FLAWS:
        if all(knobs.get(k) == (v.value if hasattr(v, "value") else v) for k, v in flaw.present.items()):
            out.append(flaw.id)
    return out
