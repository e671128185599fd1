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

    def describe(self) -> str:
        """How it differs from the baseline, from its own settings: 'batch time +50%, 2% 5xx'
        ('same as the baseline' when in nothing)."""
        parts = []
        if self.cost_factor != 1.0:
            parts.append(f"batch time {'+' if self.cost_factor > 1 else ''}{(self.cost_factor - 1) * 100:.3g}%")
        if self.error_rate:
            parts.append(f"{self.error_rate * 100:.3g}% 5xx")
        if self.output_shift:
            parts.append(f"{self.output_shift * 100:.3g}% of answers in another class")
        return ", ".join(parts) or "same as the baseline"


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
