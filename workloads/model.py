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
    duration_s: float = Field(gt=0, description="how long this phase lasts")
    rate_rps: float = Field(ge=0, description="aggregate rate of all tenants together")

    def rate(self, t: np.ndarray) -> np.ndarray:
        return np.full_like(t, self.rate_rps)

    @property
    def peak_rps(self) -> float:
        return self.rate_rps


class RampPhase(_Frozen):
    kind: Literal["ramp"] = "ramp"
    duration_s: float = Field(gt=0, description="how long this phase lasts")
    from_rps: float = Field(ge=0, description="rate at the phase's start; it moves linearly to to_rps")
    to_rps: float = Field(ge=0, description="rate at the phase's end")

    def rate(self, t: np.ndarray) -> np.ndarray:
        return self.from_rps + (self.to_rps - self.from_rps) * (t / self.duration_s)

    @property
    def peak_rps(self) -> float:
        return max(self.from_rps, self.to_rps)


class SpikePhase(_Frozen):
    """`base_rps`, except `spike_rps` during [at_s, at_s + spike_s)."""

    kind: Literal["spike"] = "spike"
    duration_s: float = Field(gt=0, description="how long this phase lasts")
    base_rps: float = Field(ge=0, description="rate outside the spike")
    spike_rps: float = Field(ge=0, description="rate during the spike")
    at_s: float = Field(ge=0, description="when the spike starts, from the phase's start")
    spike_s: float = Field(gt=0, description="how long the spike lasts")

    def rate(self, t: np.ndarray) -> np.ndarray:
        inside = (t >= self.at_s) & (t < self.at_s + self.spike_s)
        return np.where(inside, self.spike_rps, self.base_rps)

    @property
    def peak_rps(self) -> float:
        return max(self.base_rps, self.spike_rps)


class SinusoidPhase(_Frozen):
    """mean + amplitude * sin(2 pi t / period): a compressed day, for example."""

    kind: Literal["sinusoid"] = "sinusoid"
    duration_s: float = Field(gt=0, description="how long this phase lasts")
    mean_rps: float = Field(ge=0, description="the rate the wave swings around")
    amplitude_rps: float = Field(ge=0, description="the swing either side of mean_rps; at most mean_rps")
    period_s: float = Field(gt=0, description="one full cycle (a compressed day, say)")
    offset_s: float = Field(0.0, description="shifts the wave: the phase starts at this point of the cycle")

    @model_validator(mode="after")
    def _non_negative(self) -> "SinusoidPhase":
        """A sinusoid phase's amplitude_rps is at most its mean_rps: rates never go negative."""
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

    start_s: float = Field(ge=0, description="when the burst starts, from the start of the run")
    end_s: float = Field(gt=0, description="when it ends, from the start of the run; after start_s")
    factor: float = Field(gt=0, description="the tenant's rate is multiplied by this during the burst")

    @model_validator(mode="after")
    def _ordered(self) -> "Burst":
        """A burst's end_s is after its start_s."""
        if self.end_s <= self.start_s:
            raise ValueError("end_s must be after start_s")
        return self


class Tenant(_Frozen):
    name: str = Field(min_length=1, max_length=64, description="unique among the tenants; sent as the request's tenant")
    share: float = Field(gt=0, le=1, description="fraction of the aggregate rate; all tenants' shares add up to 1")
    connections: int = Field(default=8, ge=1, le=100_000,
                             description="keep-alive connections the tenant's clients use (an L4 balancer pins these)")
    bursts: tuple[Burst, ...] = Field((), description="windows in which this tenant sends more")


class Payloads(_Frozen):
    """Payload identity. `unique`: every request's content differs. `zipf`:
    content drawn from `catalog_size` items with popularity ~ 1/rank^zipf_s.
    `variants`: how many byte-level serialisations one content has (field
    order, whitespace, client-side timestamps): an exact-payload cache sees
    them as different keys, a normalised one as the same."""

    kind: Literal["unique", "zipf"] = Field("unique", description="unique: every request differs; zipf: repeats")
    zipf_s: float = Field(default=1.1, gt=0, description="zipf: popularity exponent (larger: fewer items dominate)")
    catalog_size: int = Field(default=10_000, ge=1, description="zipf: how many distinct contents exist")
    variants: int = Field(default=1, ge=1, le=1000, description="byte-level serialisations of one content")


class Sizes(_Frozen):
    """Input length per request (tokens). `fixed` at `length`; `lognormal`
    with median `length` and shape `sigma`; `pareto` with minimum `length` and
    tail index `alpha`. Always clipped to [1, max_length]."""

    kind: Literal["fixed", "lognormal", "pareto"] = Field("fixed", description="the length distribution")
    length: int = Field(default=64, ge=1, description="fixed: the length; lognormal: the median; pareto: the minimum")
    sigma: float = Field(default=1.0, gt=0, description="lognormal: shape (standard deviation of the log)")
    alpha: float = Field(default=1.5, gt=0, description="pareto: tail index (smaller: heavier tail)")
    max_length: int = Field(default=2048, ge=1, description="every length is clipped to 1..max_length")


class FaultKind(str, Enum):
    GPU_DOWN = "gpu-down"
    SLOWDOWN = "slowdown"


class Fault(_Frozen):
    """`gpu-down`: `fraction` of the GPUs die at `at_s` (batches in flight
    included) and come back after `duration_s`. `slowdown`: every batch started
    during the window takes `factor` times as long."""

    kind: FaultKind = Field(description="gpu-down or slowdown")
    at_s: float = Field(ge=0, description="when the fault starts, from the start of the run")
    duration_s: float = Field(gt=0, description="how long it lasts")
    fraction: float = Field(default=0.25, gt=0, le=1, description="gpu-down: share of the GPUs that die")
    factor: float = Field(default=2.0, gt=0, description="slowdown: batch time multiplier")


class WorkloadConfig(_Frozen):
    name: str = Field(min_length=1, description="the scenario's name in reports (a file without one: its file name)")
    description: str = Field("", description="one line on what the traffic is")
    exposes: tuple[str, ...] = Field((), description="flaw ids (harness targets) this scenario is meant to expose")
    good_target: str = Field("", description="what a good target does under this traffic, in words")
    process: ArrivalProcess = Field(ArrivalProcess.POISSON, description="how arrivals are placed under the rate")
    burstiness: float = Field(default=1.0, gt=0, description="gamma: squared CV of gaps")
    phases: tuple[Phase, ...] = Field(min_length=1, description="the rate over time, one phase after another")
    tenants: tuple[Tenant, ...] = Field((Tenant(name="default", share=1.0, connections=100),),
                                        description="who sends the traffic; shares add up to 1")
    payloads: Payloads = Field(Payloads(), description="how often request contents repeat")
    sizes: Sizes = Field(Sizes(), description="input length per request, in tokens")
    faults: tuple[Fault, ...] = Field((), description="faults injected into the target")
    window_s: float = Field(default=1.0, gt=0, description="width of a time-series window in the result")
    # The figures that answer the scenario's question (workloads.answers); compare judges them.
    answers: tuple[Answer, ...] = Field((), description="the figures that answer the scenario's question")

    @field_validator("answers")
    @classmethod
    def _tenants_exist(cls, answers: tuple[Answer, ...], info: ValidationInfo) -> tuple[Answer, ...]:
        """An answer's `tenants.<selector>.` names a tenant of this workload, or matches one."""
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
        """Tenant shares add up to 1, and tenant names are unique."""
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
        out: list[tuple[str, float, float]] = []
        t = 0.0
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
