"""Suite files: the workload scenarios a suite runs, and the canary rollouts it runs.

A suite is TOML (example: workloads/suites/bad-day.toml)::

    description = "..."           # optional
    scenarios = ["steady", "spike"]   # workload scenarios (`harness compare`, `rank`, `alerts`)

    [durations]                   # optional: seconds to run a scenario for in this suite
    steady = 20

    [[canary]]                    # optional: a rollout plan on some canary bad days
    plan = "careful"              # a built-in plan name or a plan TOML path
    days = ["good", "slow"]       # canary days (workloads/canary_days.py)

A suite names scenarios, canary rollouts, or both. Canary rollouts are not
workloads: `harness compare`/`rank`/`alerts --suite` run only the scenarios (a
suite with none is refused there, with a pointer to `harness canary --suite`),
and `harness canary --suite` runs only the rollouts. Validated here (pydantic)
so a bad file fails where it is read, with file, key and problem; whether each
scenario name resolves is checked by `workloads.loader`, which finds the files.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationInfo, field_validator, model_validator

from workloads.canary_days import CANARY_DAYS
from workloads.canary_plan import load_plan

__all__ = ["CanaryEntry", "Suite"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CanaryEntry(_Frozen):
    """One rollout plan on the canary days listed: one table row per (plan, day)."""

    plan: str = Field(min_length=1, description="a built-in plan name (careful, fast) or a plan TOML path")
    days: tuple[str, ...] = Field(min_length=1, description="canary days, e.g. good, slow, erroring, wrong")

    @field_validator("plan")
    @classmethod
    def _plan_loads(cls, plan: str) -> str:
        load_plan(plan)  # its ConfigError (a ValueError) names the plan and the valid names
        return plan

    @field_validator("days")
    @classmethod
    def _known_days(cls, days: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [d for d in days if d not in CANARY_DAYS]
        if unknown:
            raise ValueError(f"unknown canary day(s) {', '.join(unknown)}: valid are {', '.join(CANARY_DAYS)}")
        if len(set(days)) < len(days):
            raise ValueError("a day is listed twice")
        return days


class Suite(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    scenarios: tuple[str, ...] = Field((), description="workload scenario names or TOML paths")
    durations: dict[str, PositiveFloat] = Field(default_factory=dict,
                                                description="seconds to run a scenario for in this suite")
    canary: tuple[CanaryEntry, ...] = Field((), description="rollout plans on canary days")

    @field_validator("durations")
    @classmethod
    def _durations_of_scenarios(cls, durations: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        stray = [k for k in durations if k not in info.data.get("scenarios", ())]
        if stray:
            raise ValueError(f"{', '.join(stray)}: not one of the suite's scenarios")
        return durations

    @field_validator("canary")
    @classmethod
    def _each_rollout_once(cls, canary: tuple[CanaryEntry, ...]) -> tuple[CanaryEntry, ...]:
        pairs = [(e.plan, d) for e in canary for d in e.days]
        twice = sorted({f"{p} on {d}" for p, d in pairs if pairs.count((p, d)) > 1})
        if twice:
            raise ValueError(f"listed twice: {', '.join(twice)}")
        return canary

    @model_validator(mode="after")
    def _not_empty(self) -> "Suite":
        if not self.scenarios and not self.canary:
            raise ValueError("a suite names workload `scenarios`, `[[canary]]` rollouts, or both; this has neither")
        return self

    @property
    def rollouts(self) -> list[tuple[str, str]]:
        """(plan, day) of every canary rollout, in file order."""
        return [(e.plan, d) for e in self.canary for d in e.days]

    def contents(self) -> str:
        """One line for listings: 'steady, spike; canary: careful on good, slow'."""
        rollouts = "; ".join(f"canary: {e.plan} on {', '.join(e.days)}" for e in self.canary)
        return "; ".join(x for x in (", ".join(self.scenarios), rollouts) if x)
