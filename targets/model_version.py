"""A model version (the settings a canary rollout can change) and an answer tagged with its
version: the types `targets.versions` uses, in a module of their own because mypyc compiles
that one with the core and compiles neither a pydantic model nor a tuple subclass."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BASELINE", "ModelVersion", "VersionedOutput"]


class ModelVersion(BaseModel):
    """A model version: its batch-time factor, its share of 5xx answers, and how
    often it answers a different class than the baseline would (a wrong model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field("v1", min_length=1)
    cost_factor: float = Field(1.0, gt=0, description="batch time x this")
    error_rate: float = Field(0.0, ge=0, le=1, description="share of its answers that are 5xx")
    output_shift: float = Field(0.0, ge=0, le=1, description="share of its answers moved to another class")


BASELINE = ModelVersion()  # the version a target serves unless a rollout attaches a canary


class VersionedOutput(tuple):
    """(label, version name): an answer and the version that computed it."""

    __slots__ = ()

    def __new__(cls, label: int, version: str) -> "VersionedOutput":
        return super().__new__(cls, (label, version))

    @property
    def label(self) -> int:
        return self[0]

    @property
    def version(self) -> str:
        return self[1]
