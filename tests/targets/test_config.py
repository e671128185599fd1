"""The knobs in groups: each knob belongs to one group and says where it applies, the flat
names keep working wherever a config is read or written, and a sim-only knob is read by no
live code (nor a live-only knob by sim-only code)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Annotated, Any, Iterator

import pytest
from pydantic import Field

from targets.client import ClientPolicy
from targets.config import (KNOB_GROUPS, KNOBS, BOTH, LIVE, SIM, Backoff, Batching, CacheKnobs, CacheMode,
                            ClientKnobs, CostModel, KnobGroup, ModelKnobs, Routing, TargetConfig, Topology, Where)
from targets.executors import cost_function
from targets.flaws import hardened_knobs
from targets.spec import parse_overrides, resolve_target

ROOT = Path(__file__).resolve().parents[2]
# Live code: the aiohttp front end, the torch side, and the live host and drivers.
LIVE_CODE = ("targets/http", "targets/gpu", "harness/live")
# Sim-only code: the virtual-time engine and the modeled front end (the modeled GPU's
# cost function is not here: live admission predicts with it too).
SIM_CODE = ("harness/engine", "targets/frontend_cpu.py")
OLD_RESULT = ROOT / "tests/reports/data/compare-night-df40d0b.json"  # written before the knobs were grouped
KNOBS_ADDED_SINCE_OLD_RESULT = ("client_throttle_k", "client_throttle_window_s", "admission_fill")

# Every knob turned off its naive default (and valid together): a round trip must keep each.
EVERY_KNOB_SET: dict[str, Any] = {
    "name": "all-set", "peak_qps": 2_000, "slo_s": 0.25,
    "batch_size": 16, "batch_time_s": 0.05, "cost_model": "affine", "cost_t0_s": 0.01, "cost_per_item_s": 0.002,
    "cost_table": None, "reference_length": 32,
    "api_servers": 4, "gpus": 7, "target_utilization": 0.8, "spare_gpus": 1, "failure_handling": True,
    "batch_timeout_factor": 3.0,
    "routing": "p2c", "topology": "shared",
    "batching": "adaptive", "max_wait_s": 0.02, "reserve_fraction": 0.5, "batch_utilization": 0.6,
    "length_bucketing": True,
    "cache": "normalized", "cache_hop_s": 0.001, "cache_entries": 500, "model_version": "v2",
    "client_timeout_s": 0.5, "client_retries": 2, "client_backoff": "exponential", "backoff_base_s": 0.01,
    "backoff_cap_s": 0.5, "request_ids": True, "dedupe": True, "retry_budget": 0.2, "honour_retry_after": True,
    "propagate_deadline": True, "client_throttle_k": 3.0, "client_throttle_window_s": 5.0,
    "admission": True, "admission_target": 0.8, "admission_fill": "max-wait",
    "tenant_limits": True, "tenant_limit_share": 0.5, "tenant_burst_s": 0.1,
    "frontend_lag_limit_s": 0.05, "frontend_age_share": 0.5, "frontend_proxy_share": 0.1,
    "frontend_cost_s": 0.0003, "frontend_shed_cost_s": 0.0001, "frontend_proxy_shed_cost_s": 0.00005,
    "frontend_cores": 2,
}


# -- every knob has one group and a where-tag ---------------------------------------------

def test_every_knob_is_in_exactly_one_group_with_a_where_tag() -> None:
    by_group = [name for g in KNOB_GROUPS for name in g.model_fields]
    assert len(by_group) == len(set(by_group)), "a knob is declared in two groups"
    assert sorted(by_group) == sorted(TargetConfig.model_fields) == sorted(KNOBS)
    for name, knob in KNOBS.items():
        assert name in knob.group.model_fields and isinstance(knob.where, Where)
    for g in KNOB_GROUPS:
        assert g.title and g.read_by and g.__doc__, f"{g.__name__} does not say what it is or who reads it"
        assert issubclass(TargetConfig, g)


def test_a_group_refuses_a_knob_that_says_not_where_it_applies() -> None:
    with pytest.raises(TypeError, match="untagged_s say not where they apply"):
        class Untagged(KnobGroup):
            tagged_s: Annotated[float, SIM] = Field(1.0)
            untagged_s: float = 1.0


def test_a_dump_lists_the_knobs_group_by_group() -> None:
    assert list(TargetConfig().model_dump()) == [n for g in KNOB_GROUPS for n in g.model_fields]
    assert [KNOBS[n].where for n in ("frontend_cost_s", "frontend_age_share", "slo_s")] == [SIM, BOTH, BOTH]


# -- flat names round-trip -----------------------------------------------------------------

def test_every_knob_set_round_trips_through_a_flat_json_dump() -> None:
    assert set(EVERY_KNOB_SET) == set(KNOBS)
    cfg = TargetConfig.model_validate(EVERY_KNOB_SET)
    defaults = TargetConfig().model_dump(mode="json")
    dumped = cfg.model_dump(mode="json")
    assert [k for k in KNOBS if dumped[k] == defaults[k]] == ["cost_table"]  # None is the only valid path here
    assert TargetConfig.model_validate(json.loads(json.dumps(dumped))) == cfg
    for group in KNOB_GROUPS:  # each group alone reads its own flat keys and keeps the same values
        alone = group.model_validate({k: dumped[k] for k in group.model_fields})
        assert alone.model_dump(mode="json") == {k: dumped[k] for k in group.model_fields}


@pytest.mark.parametrize("base", ["naive", "hardened"])
def test_old_result_files_load_and_dump_the_same_flat_target_config(base: str) -> None:
    old = json.loads(OLD_RESULT.read_text())["runs"]["night"][base]["target_config"]
    dumped = TargetConfig.model_validate(old).model_dump(mode="json")
    added = {k: dumped[k] for k in KNOBS_ADDED_SINCE_OLD_RESULT}  # knobs newer than the file take their defaults
    assert added == {k: TargetConfig.model_fields[k].default for k in KNOBS_ADDED_SINCE_OLD_RESULT}
    assert {k: v for k, v in dumped.items() if k not in added} == old


def test_flat_names_work_in_set_spec_strings_and_design_files(tmp_path: Path) -> None:
    one_per_group = {"slo_s": 0.2, "reference_length": 128, "gpus": 40, "topology": "per-server",
                     "max_wait_s": 0.01, "cache_entries": 10, "client_retries": 1, "admission_target": 0.7,
                     "tenant_burst_s": 0.5, "frontend_cost_s": 0.001}
    assert {KNOBS[k].group for k in one_per_group} == set(KNOB_GROUPS)
    pairs = [f"{k}={json.dumps(v)}" for k, v in one_per_group.items()]
    from_set = resolve_target("hardened", parse_overrides(pairs))
    from_spec = resolve_target("hardened:" + ",".join(pairs))
    design = tmp_path / "design.toml"
    design.write_text('base = "hardened"\n[knobs]\n' + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in one_per_group.items()))
    from_toml = resolve_target(str(design))
    for cfg in (from_set, from_spec, from_toml):
        assert {k: getattr(cfg, k) for k in one_per_group} == one_per_group


@pytest.mark.parametrize("spec, message", [
    ("hardened:backoff_base_s=2", "backoff_cap_s must be >= backoff_base_s"),  # a group's own rule
    ("naive:cost_model=table", "cost_model = 'table' needs cost_table"),
    ("hardened:frontend_cores=0", "key 'frontend_cores': Input should be greater than or equal to 1"),
])
def test_a_broken_knob_still_names_the_source_key_and_problem(spec: str, message: str) -> None:
    from workloads.config_files import ConfigError

    with pytest.raises(ConfigError, match=f"target '{spec}'") as err:
        resolve_target(spec)
    assert message in str(err.value)


# -- a component takes its group ------------------------------------------------------------

def test_components_read_their_group_alone_as_from_the_whole_config() -> None:
    cfg = TargetConfig.model_validate(hardened_knobs())
    client = ClientKnobs.model_validate({k: getattr(cfg, k) for k in ClientKnobs.model_fields})
    assert ClientPolicy.from_target(client) == ClientPolicy.from_target(cfg)
    assert ClientPolicy.from_target(client).backoff is Backoff.EXPONENTIAL
    model = ModelKnobs(cost_model=CostModel.AFFINE, cost_t0_s=0.01, cost_per_item_s=0.001)
    whole = TargetConfig(cost_model=CostModel.AFFINE, cost_t0_s=0.01, cost_per_item_s=0.001)
    assert cost_function(model)(8, 64) == cost_function(whole)(8, 64) == pytest.approx(0.018)
    assert CacheKnobs().cache is CacheMode.EXACT and isinstance(cfg, CacheKnobs)
    assert (cfg.routing, cfg.topology, cfg.batching) == (Routing.LEAST_LOADED, Topology.SHARED, Batching.RATE)


# -- where a knob applies is where it is read -----------------------------------------------

def _sources(roots: tuple[str, ...]) -> Iterator[Path]:
    for root in roots:
        path = ROOT / root
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def _knobs_read(path: Path) -> set[str]:
    """The knob names a module reads: `x.knob`, `getattr(x, "knob", ...)`, `x["knob"]` (not in
    docstrings or comments, and not a dict it writes)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            found.add(str(node.args[1].value))
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
              and isinstance(node.slice, ast.Constant)):
            found.add(str(node.slice.value))
    return found & set(KNOBS)


@pytest.mark.parametrize("where, elsewhere, roots", [(SIM, "live", LIVE_CODE), (LIVE, "sim-only", SIM_CODE)])
def test_a_knob_for_one_kind_of_run_is_not_read_by_the_other(where: Where, elsewhere: str,
                                                             roots: tuple[str, ...]) -> None:
    tagged = {k for k, knob in KNOBS.items() if knob.where is where}
    wrong = {f"{p.relative_to(ROOT)} reads {k}" for p in _sources(roots) for k in _knobs_read(p) & tagged}
    assert not wrong, f"knobs tagged {where.value} read by {elsewhere} code: {sorted(wrong)}"


def test_the_sim_only_knobs_are_read_by_sim_code() -> None:
    """The control for the test above: the scan finds reads (every sim knob has its reader)."""
    read = set().union(*(_knobs_read(p) for p in _sources(SIM_CODE)))
    sim = {k for k, knob in KNOBS.items() if knob.where is SIM}
    assert sim and sim <= read
    assert "frontend_age_share" in set().union(*(_knobs_read(p) for p in _sources(LIVE_CODE)))
