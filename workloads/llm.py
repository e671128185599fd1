"""LLM workloads: who asks for how many tokens, and when.

A workload is arrivals (Poisson, or gamma renewal gaps whose squared
coefficient of variation `burstiness` > 1 makes bursts), tenants (shares of the
requests), and two length distributions: prompt tokens and output tokens, the
same for every tenant unless `tenant_lengths` gives a tenant its own.
Lengths are fixed, lognormal (given by its mean, so `mean_tokens` is the mean
drawn), or a mixture of lognormals. `build_llm_schedule(workload, seed)` draws
the requests, deterministic for (workload, seed); a trace file can stand in for
the draws (`workloads.llm_trace`).

The "sharegpt-like" mixture matches the means the vLLM paper reports for the
ShareGPT conversations (Kwon et al. 2023, section 6.1: about 161 prompt and 338
output tokens) with a long tail; it is a shape, not the data set.

Named mixes (`LENGTH_MIXES`) are one tenant's lengths, except where
`TENANT_SPLITS` splits a mix among tenants: "dominant-tenant" is three chat
tenants sending 90% of the requests and a "bulk" tenant sending 10%, each of
thousands of tokens, so bulk holds most of the tokens (and of the KV cache)
with few requests. `mix_workload(name, rate, duration)` builds either kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LENGTH_MIXES", "LLM_SUITES", "TENANT_SPLITS", "Arrival", "LengthDist", "LlmSchedule", "LlmWorkload", "Lognormal",
           "TenantLengths", "build_llm_schedule", "length_mix", "llm_suite", "mix_workload"]


class Arrival(str, Enum):
    POISSON = "poisson"
    GAMMA = "gamma"


class Lognormal(BaseModel):
    """One lognormal component: its mean (tokens), log-space sigma, and weight in a mixture."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    mean_tokens: float = Field(gt=0)
    sigma: float = Field(0.8, ge=0)
    weight: float = Field(1.0, gt=0)


class LengthDist(BaseModel):
    """Token lengths: `fixed_tokens`, else the (weighted) mixture of `lognormal` components; clipped to [1, max_tokens]."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    fixed_tokens: int | None = Field(None, ge=1)
    lognormal: tuple[Lognormal, ...] = ()
    max_tokens: int = Field(4096, ge=1)

    @model_validator(mode="after")
    def _one_form(self) -> "LengthDist":
        if (self.fixed_tokens is None) == (not self.lognormal):
            raise ValueError("a length distribution is either fixed_tokens or lognormal components, not both or none")
        return self

    @classmethod
    def fixed(cls, tokens: int) -> "LengthDist":
        return cls(fixed_tokens=tokens, max_tokens=max(tokens, 1))

    @classmethod
    def of_lognormal(cls, mean_tokens: float, sigma: float = 0.8, max_tokens: int = 4096) -> "LengthDist":
        return cls(lognormal=(Lognormal(mean_tokens=mean_tokens, sigma=sigma),), max_tokens=max_tokens)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.fixed_tokens is not None:
            return np.full(n, self.fixed_tokens, dtype=np.int64)
        weights = np.array([c.weight for c in self.lognormal])
        which = rng.choice(len(self.lognormal), size=n, p=weights / weights.sum())
        mean = np.array([c.mean_tokens for c in self.lognormal])[which]
        sigma = np.array([c.sigma for c in self.lognormal])[which]
        drawn = rng.lognormal(np.log(mean) - sigma ** 2 / 2, sigma)  # E[X] = mean
        return np.clip(np.rint(drawn), 1, self.max_tokens).astype(np.int64)


class TenantLengths(BaseModel):
    """One tenant's own prompt and output lengths."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    prompt: LengthDist
    output: LengthDist


class LlmWorkload(BaseModel):
    """Requests/s over `duration_s`, split among `tenants` by share, with prompt and output lengths
    (`tenant_lengths`: a tenant's own, in place of `prompt` and `output`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = "llm"
    rate_rps: float = Field(10.0, gt=0)
    duration_s: float = Field(60.0, gt=0)
    arrival: Arrival = Arrival.POISSON
    burstiness: float = Field(1.0, gt=0)  # gamma gaps' squared coefficient of variation
    tenants: dict[str, float] = Field(default_factory=lambda: {"default": 1.0})
    prompt: LengthDist = LengthDist.of_lognormal(500)
    output: LengthDist = LengthDist.of_lognormal(200)
    tenant_lengths: dict[str, TenantLengths] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shares(self) -> "LlmWorkload":
        if not self.tenants or any(not s > 0 for s in self.tenants.values()):
            raise ValueError("tenants need at least one positive share")
        unknown = set(self.tenant_lengths) - set(self.tenants)
        if unknown:
            raise ValueError(f"tenant_lengths names tenant(s) {', '.join(sorted(unknown))} not in tenants "
                             f"({', '.join(self.tenants)})")
        if self.rate_rps * self.duration_s > 20_000_000:
            raise ValueError("workload would schedule over 20,000,000 requests; lower the rate or duration")
        return self


@dataclass(frozen=True)
class LlmSchedule:
    """Requests in arrival order: `arrival_s`, `prompt_tokens`, `output_tokens`, `tenant` (index into `tenants`)."""

    name: str
    duration_s: float
    tenants: tuple[str, ...]
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    tenant: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


def _arrivals(rng: np.random.Generator, w: LlmWorkload) -> np.ndarray:
    mean_gap = 1.0 / w.rate_rps
    n = int(w.rate_rps * w.duration_s * 1.2) + 64
    times = np.empty(0)
    while not len(times) or times[-1] < w.duration_s:
        if w.arrival is Arrival.POISSON:
            gaps = rng.exponential(mean_gap, n)
        else:
            gaps = rng.gamma(1.0 / w.burstiness, w.burstiness * mean_gap, n)
        start = times[-1] if len(times) else 0.0
        times = np.concatenate([times, start + np.cumsum(gaps)])
    return times[times < w.duration_s]


def build_llm_schedule(w: LlmWorkload, seed: int) -> LlmSchedule:
    """Every request of `w`, deterministic for (w, seed)."""
    rng = np.random.default_rng(seed)
    arrival = _arrivals(rng, w)
    n = len(arrival)
    names = tuple(w.tenants)
    shares = np.array([w.tenants[t] for t in names], dtype=float)
    tenant = rng.choice(len(names), size=n, p=shares / shares.sum())
    prompt, output = w.prompt.draw(rng, n), w.output.draw(rng, n)
    for k, name in enumerate(names):  # drawn after the shared lengths: a workload without them is unchanged
        own = w.tenant_lengths.get(name)
        if own is not None:
            mine = tenant == k
            prompt[mine] = own.prompt.draw(rng, int(mine.sum()))
            output[mine] = own.output.draw(rng, int(mine.sum()))
    return LlmSchedule(w.name, w.duration_s, names, arrival, prompt, output, tenant)


def _mix(*parts: tuple[float, float, float], max_tokens: int = 4096) -> LengthDist:
    return LengthDist(lognormal=tuple(Lognormal(weight=p, mean_tokens=m, sigma=s) for p, m, s in parts),
                      max_tokens=max_tokens)


# Named (prompt, output) length mixes.
LENGTH_MIXES: dict[str, tuple[LengthDist, LengthDist]] = {
    "lognormal": (LengthDist.of_lognormal(500, 0.8), LengthDist.of_lognormal(200, 0.8)),
    "sharegpt-like": (_mix((0.7, 60, 1.0), (0.3, 400, 0.9)), _mix((0.5, 120, 0.8), (0.5, 556, 0.6))),
    "fixed": (LengthDist.fixed(512), LengthDist.fixed(128)),
    # Short chats (means 48 and 24 tokens, at most 200 and 64): fits a small model's context, such as
    # the tiny decoder that `harness serve llm-...` serves (512 tokens); the default of LLM URL targets.
    "short": (LengthDist.of_lognormal(48, 0.5, 200), LengthDist.of_lognormal(24, 0.5, 64)),
    # Bad days: a few very long prompts among short chats (head-of-line blocking of decodes) ...
    "long-prompts": (_mix((0.9, 200, 0.5), (0.1, 3000, 0.2)), LengthDist.of_lognormal(150, 0.5)),
    # ... and long generations that outgrow the KV cache (preemption).
    "long-outputs": (LengthDist.of_lognormal(200, 0.5), LengthDist.of_lognormal(1200, 0.4)),
    # A dominant tenant by tokens: these are the chat tenants' lengths; TENANT_SPLITS adds "bulk".
    "dominant-tenant": (LengthDist.of_lognormal(300, 0.6), LengthDist.of_lognormal(150, 0.5)),
}

# Mixes split among tenants: (request shares, the tenants with lengths of their own).
TENANT_SPLITS: dict[str, tuple[dict[str, float], dict[str, TenantLengths]]] = {
    "dominant-tenant": ({"chat-a": 0.3, "chat-b": 0.3, "chat-c": 0.3, "bulk": 0.1},
                        {"bulk": TenantLengths(prompt=LengthDist.of_lognormal(3000, 0.2),
                                               output=LengthDist.of_lognormal(1500, 0.2))}),
}


# Suites of LLM mixes (`compare llm-A llm-B --suite NAME`): the LLM bad days, each exposing a flaw of
# an LLM server, and a replay of the sample of Azure's public LLM inference trace (workloads.llm_trace).
LLM_SUITES: dict[str, tuple[str, ...]] = {
    "llm-bad-day": ("long-prompts", "long-outputs", "dominant-tenant",
                    str(Path(__file__).parent / "traces" / "azure-llm-sample.csv")),
}


def llm_suite(name: str) -> tuple[str, ...]:
    """The mixes of a named LLM suite; ValueError listing the names."""
    try:
        return LLM_SUITES[name]
    except KeyError:
        raise ValueError(f"unknown LLM suite '{name}': valid are {', '.join(LLM_SUITES)}") from None


def length_mix(name: str) -> tuple[LengthDist, LengthDist]:
    """(prompt, output) lengths of a named mix; ValueError listing the names."""
    try:
        return LENGTH_MIXES[name]
    except KeyError:
        raise ValueError(f"unknown length mix '{name}': valid are {', '.join(LENGTH_MIXES)}") from None


def mix_workload(name: str, rate_rps: float, duration_s: float) -> LlmWorkload:
    """The workload of a named mix at `rate_rps` for `duration_s`, split among its tenants where
    `TENANT_SPLITS` says so; ValueError listing the names."""
    prompt, output = length_mix(name)
    shares, own = TENANT_SPLITS.get(name, ({"default": 1.0}, {}))
    return LlmWorkload(name=name, rate_rps=rate_rps, duration_s=duration_s, prompt=prompt, output=output,
                       tenants=shares, tenant_lengths=own)
