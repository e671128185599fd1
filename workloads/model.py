"""The workload model: what traffic a scenario sends, as validated config.

A workload is phases of an aggregate rate over time (requests per second), an
arrival process that places requests under that rate, tenants that share the
rate and reach the target over a few keep-alive connections each, payloads
(unique, or repeated with a Zipf popularity), request sizes, and faults the
scenario injects into the target (GPU death, slowdowns). All times are seconds
from the start of the run; all rates are requests per second.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from workloads.answers import Answer, select_tenants, split_tenant_key


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArrivalProcess(str, Enum):
    POISSON = "poisson"
    UNIFORM = "uniform"
    GAMMA = "gamma"


class ConstantPhase(_Frozen):
    kind: Literal["constant"] = "constant"
    duration_s: float = Field(gt=0)
    rate_rps: float = Field(ge=0)

    def rate(self, t: np.ndarray) -> np.ndarray:
        return np.full_like(t, self.rate_rps)

    @property
    def peak_rps(self) -> float:
        return self.rate_rps


class RampPhase(_Frozen):
    kind: Literal["ramp"] = "ramp"
    duration_s: float = Field(gt=0)
    from_rps: float = Field(ge=0)
    to_rps: float = Field(ge=0)

    def rate(self, t: np.ndarray) -> np.ndarray:
        return self.from_rps + (self.to_rps - self.from_rps) * (t / self.duration_s)

    @property
    def peak_rps(self) -> float:
        return max(self.from_rps, self.to_rps)


class SpikePhase(_Frozen):
    """`base_rps`, except `spike_rps` during [at_s, at_s + spike_s)."""

    kind: Literal["spike"] = "spike"
    duration_s: float = Field(gt=0)
    base_rps: float = Field(ge=0)
    spike_rps: float = Field(ge=0)
    at_s: float = Field(ge=0)
    spike_s: float = Field(gt=0)

    def rate(self, t: np.ndarray) -> np.ndarray:
        inside = (t >= self.at_s) & (t < self.at_s + self.spike_s)
        return np.where(inside, self.spike_rps, self.base_rps)

    @property
    def peak_rps(self) -> float:
        return max(self.base_rps, self.spike_rps)


class SinusoidPhase(_Frozen):
    """mean + amplitude * sin(2 pi t / period): a compressed day, for example."""

    kind: Literal["sinusoid"] = "sinusoid"
    duration_s: float = Field(gt=0)
    mean_rps: float = Field(ge=0)
    amplitude_rps: float = Field(ge=0)
    period_s: float = Field(gt=0)
    offset_s: float = 0.0

    @model_validator(mode="after")
    def _non_negative(self) -> "SinusoidPhase":
        if self.amplitude_rps > self.mean_rps:
            raise ValueError("amplitude_rps must not exceed mean_rps (rates cannot go negative)")
        return self

    def rate(self, t: np.ndarray) -> np.ndarray:
        return self.mean_rps + self.amplitude_rps * np.sin(
            2 * math.pi * (t + self.offset_s) / self.period_s
        )

    @property
    def peak_rps(self) -> float:
        return self.mean_rps + self.amplitude_rps


Phase = Annotated[
    Union[ConstantPhase, RampPhase, SpikePhase, SinusoidPhase], Field(discriminator="kind")
]


class Burst(_Frozen):
    """A tenant's rate is multiplied by `factor` during [start_s, end_s)."""

    start_s: float = Field(ge=0)
    end_s: float = Field(gt=0)
    factor: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> "Burst":
        if self.end_s <= self.start_s:
            raise ValueError("end_s must be after start_s")
        return self


class Tenant(_Frozen):
    name: str = Field(min_length=1, max_length=64)
    share: float = Field(gt=0, le=1)
    connections: int = Field(default=8, ge=1, le=100_000)
    bursts: tuple[Burst, ...] = ()


class Payloads(_Frozen):
    """Payload identity. `unique`: every request's content differs. `zipf`:
    content drawn from `catalog_size` items with popularity ~ 1/rank^zipf_s.
    `variants`: how many byte-level serialisations one content has (field
    order, whitespace, client-side timestamps): an exact-payload cache sees
    them as different keys, a normalised one as the same."""

    kind: Literal["unique", "zipf"] = "unique"
    zipf_s: float = Field(default=1.1, gt=0)
    catalog_size: int = Field(default=10_000, ge=1)
    variants: int = Field(default=1, ge=1, le=1000)


class Sizes(_Frozen):
    """Input length per request (tokens). `fixed` at `length`; `lognormal`
    with median `length` and shape `sigma`; `pareto` with minimum `length` and
    tail index `alpha`. Always clipped to [1, max_length]."""

    kind: Literal["fixed", "lognormal", "pareto"] = "fixed"
    length: int = Field(default=64, ge=1)
    sigma: float = Field(default=1.0, gt=0)
    alpha: float = Field(default=1.5, gt=0)
    max_length: int = Field(default=2048, ge=1)


class FaultKind(str, Enum):
    GPU_DOWN = "gpu-down"
    SLOWDOWN = "slowdown"


class Fault(_Frozen):
    """`gpu-down`: `fraction` of the GPUs die at `at_s` (batches in flight
    included) and come back after `duration_s`. `slowdown`: every batch started
    during the window takes `factor` times as long."""

    kind: FaultKind
    at_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)
    fraction: float = Field(default=0.25, gt=0, le=1)
    factor: float = Field(default=2.0, gt=0)


class WorkloadConfig(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    exposes: tuple[str, ...] = ()
    good_target: str = ""
    process: ArrivalProcess = ArrivalProcess.POISSON
    burstiness: float = Field(default=1.0, gt=0, description="gamma: squared CV of gaps")
    phases: tuple[Phase, ...] = Field(min_length=1)
    tenants: tuple[Tenant, ...] = (Tenant(name="default", share=1.0, connections=100),)
    payloads: Payloads = Payloads()
    sizes: Sizes = Sizes()
    faults: tuple[Fault, ...] = ()
    window_s: float = Field(default=1.0, gt=0)
    # The figures that answer the scenario's question (workloads.answers); compare judges them.
    answers: tuple[Answer, ...] = ()

    @field_validator("answers")
    @classmethod
    def _tenants_exist(cls, answers: tuple[Answer, ...], info: ValidationInfo) -> tuple[Answer, ...]:
        names = [t.name for t in info.data.get("tenants", ())]
        for i, answer in enumerate(answers):
            key = split_tenant_key(answer.figure)
            if key is None or not names:
                continue
            selector = key[0]
            if selector.startswith("!") and selector[1:] not in names:
                problem = f"'{selector[1:]}' is not a tenant"
            elif not select_tenants(selector, names):
                problem = f"'{selector}' matches no tenant"
            else:
                continue
            raise ValueError(f"answers[{i}].figure '{answer.figure}': {problem} "
                             f"(tenants: {', '.join(names)})")
        return answers

    @model_validator(mode="after")
    def _check(self) -> "WorkloadConfig":
        total = sum(t.share for t in self.tenants)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"tenant shares must add up to 1 (they add up to {total:g})")
        names = [t.name for t in self.tenants]
        if len(set(names)) != len(names):
            raise ValueError("tenant names must be unique")
        return self

    @property
    def duration_s(self) -> float:
        return sum(p.duration_s for p in self.phases)

    @property
    def peak_rps(self) -> float:
        return max(p.peak_rps for p in self.phases)

    def phase_bounds(self) -> list[tuple[str, float, float]]:
        """(kind, start_s, end_s) of each phase, for reports' phase markers."""
        out, t = [], 0.0
        for p in self.phases:
            out.append((p.kind, t, t + p.duration_s))
            t += p.duration_s
        return out

    def disturbance_end_s(self) -> float | None:
        """When the scenario's last disturbance (spike, fault, burst) ends."""
        ends, start = [], 0.0
        for p in self.phases:
            if isinstance(p, SpikePhase):
                ends.append(start + p.at_s + p.spike_s)
            start += p.duration_s
        ends += [f.at_s + f.duration_s for f in self.faults]
        ends += [b.end_s for t in self.tenants for b in t.bursts]
        return max(ends) if ends else None

    def rate(self, t: np.ndarray) -> np.ndarray:
        """Aggregate rate (before tenant bursts) at times `t`, requests/s."""
        out = np.zeros_like(t, dtype=float)
        start = 0.0
        for p in self.phases:
            inside = (t >= start) & (t < start + p.duration_s)
            if inside.any():
                out[inside] = p.rate(t[inside] - start)
            start += p.duration_s
        return np.maximum(out, 0.0)

    def rate_factor(self, rate_rps: float | None) -> float:
        """The factor that makes the peak `rate_rps` (1 for None or a workload with no traffic)."""
        return rate_rps / self.peak_rps if rate_rps and self.peak_rps else 1.0

    def at_rate(self, rate_rps: float | None = None, duration_s: float | None = None) -> "WorkloadConfig":
        """This workload with its rates scaled so the peak is `rate_rps` (None: as
        written) and its phases cut or stretched to `duration_s` (None: as written)."""
        factor = self.rate_factor(rate_rps)
        if factor == 1.0 and not duration_s:
            return self
        return self.scaled(factor, duration_s)

    def scaled(self, rate_factor: float = 1.0, duration_s: float | None = None) -> "WorkloadConfig":
        """Rates times `rate_factor`; phases cut or stretched to `duration_s`."""
        out = self._scaled(rate_factor, duration_s)
        notes = []
        if rate_factor != 1.0:
            notes.append(f"rates x{rate_factor:.3g}")
        if duration_s is not None and duration_s != self.duration_s:
            notes.append(f"run for {duration_s:g} s")
        if notes:
            out = out.model_copy(update={"description": f"{self.description} [{', '.join(notes)}]"})
        return out

    def _scaled(self, rate_factor: float, duration_s: float | None) -> "WorkloadConfig":
        phases = []
        for p in self.phases:
            upd = {k: v * rate_factor for k, v in p.model_dump().items() if k.endswith("_rps")}
            phases.append(p.model_copy(update=upd))
        if duration_s is not None and duration_s != self.duration_s:
            simple = (len(phases) == 1 and phases[0].kind == "constant" and not self.faults
                      and not any(t.bursts for t in self.tenants))
            if simple:
                phases = [phases[0].model_copy(update={"duration_s": duration_s})]
            else:
                # The script keeps its shape: phases, faults and bursts stretch together.
                k = duration_s / self.duration_s
                phases = [_stretch(p, k) for p in phases]
                faults = tuple(
                    f.model_copy(update={"at_s": f.at_s * k, "duration_s": f.duration_s * k})
                    for f in self.faults
                )
                tenants = tuple(
                    t.model_copy(update={"bursts": tuple(
                        b.model_copy(update={"start_s": b.start_s * k, "end_s": b.end_s * k})
                        for b in t.bursts)})
                    for t in self.tenants
                )
                return self.model_copy(
                    update={"phases": tuple(phases), "faults": faults, "tenants": tenants})
        return self.model_copy(update={"phases": tuple(phases)})


def _stretch(phase, k: float):
    upd = {"duration_s": phase.duration_s * k}
    for key in ("at_s", "spike_s", "period_s", "offset_s"):
        if hasattr(phase, key):
            upd[key] = getattr(phase, key) * k
    return phase.model_copy(update=upd)
