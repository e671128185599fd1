"""Canary rollout plans: steps of traffic weight and duration, routing, and the analysis thresholds.

A plan is a workload-like input (`harness canary PLAN.toml`): the traffic it
runs under (`rate_rps`, a steady design-peak shape scaled to it), the canary's
share at each step, how requests are split (by request hash, or sticky by
tenant), and the thresholds each step's analysis holds the canary to. A suite lists plans
on canary days as scenarios (`[[canary]]`, workloads/suite.py), and a gate
file checks one plan on one day (`[[canary]]`, harness/gate/file.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workloads.config_files import ConfigError, read_toml, validate

__all__ = ["AnalysisThresholds", "CanaryPlan", "RolloutStep", "load_plan", "plan_names"]

PLAN_DIR = Path(__file__).parent / "canary"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RolloutStep(_Frozen):
    weight: float = Field(gt=0, le=1, description="share of traffic (or tenants) the canary gets in this step")
    duration_s: float = Field(gt=0, description="how long the step runs before its analysis")


class AnalysisThresholds(_Frozen):
    alpha: float = Field(0.001, gt=0, lt=1, description="significance level of every test")
    min_samples: int = Field(50, ge=5, description="fewer canary answers than this: hold the step")
    latency_ratio: float = Field(1.1, ge=1, description="roll back if the canary's median latency is over this x")
    error_increase: float = Field(0.005, ge=0, description="roll back if the canary's 5xx share exceeds by this")
    output_distance: float = Field(0.05, ge=0, le=1, description="roll back past this Jensen-Shannon distance")


class CanaryPlan(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    rate_rps: float = Field(1000, gt=0, description="the traffic the rollout runs under (requests/s)")
    routing: Literal["hash", "sticky-tenant"] = "hash"
    canary_gpus: int | None = Field(None, ge=1, description="the canary's replicas; None: sized for the largest step")
    max_holds: int = Field(2, ge=0, description="times a step may be extended for evidence before the plan stops")
    steps: tuple[RolloutStep, ...] = Field(min_length=1)
    analysis: AnalysisThresholds = AnalysisThresholds()

    @model_validator(mode="after")
    def _rising(self) -> "CanaryPlan":
        weights = [s.weight for s in self.steps]
        if weights != sorted(weights):
            raise ValueError("step weights must not fall (a rollout only widens)")
        return self

    @property
    def duration_s(self) -> float:
        """The longest a rollout can run: every step, each held as often as allowed."""
        return sum(s.duration_s for s in self.steps) * (1 + self.max_holds)


def plan_names() -> list[str]:
    return sorted(p.stem for p in PLAN_DIR.glob("*.toml"))


def load_plan(name_or_path: str) -> CanaryPlan:
    """A plan by built-in name (`careful`) or by TOML path."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" or path.exists()):
        path = PLAN_DIR / f"{name_or_path}.toml"
        if not path.exists():
            raise ConfigError(f"unknown canary plan '{name_or_path}': valid names are {', '.join(plan_names())}")
    data = read_toml(path)
    data.setdefault("name", path.stem)
    return validate(CanaryPlan, data, str(path))
