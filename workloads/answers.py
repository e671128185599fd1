"""What a scenario asks: the figures that answer its question, as data in the scenario file.

A scenario exposes some flaws; the figures that show them differ per scenario (the small
tenants' goodput under a dominant tenant's burst, recovery time after a spike, requests
lost in a GPU outage). A scenario file lists them as `[[answers]]`::

    [[answers]]
    figure = "tenants.!big.goodput_ratio"   # a dotted key of the run summary
    label = "small tenants' goodput"        # optional: else the figure's own label
    better = "higher"                       # optional: else the figure's usual direction
    tie = 0.01                              # optional: absolute noise threshold, in its unit

`FIGURES` is the catalogue of keys an answer may name, with each one's unit, usual
direction and what a missing value (None) means. `tenants.<selector>.<figure>` addresses a
group of tenants: a name (`big`), a glob (`small*`), `*` (all) or `!name` (every tenant
except that one); a group's goodput is aggregated from its members' counts and its
latency is the worst member's (an upper bound of the group's own percentile).

The compare library (`harness.analysis.compare.verdicts`) computes each figure for both sides and
names the winner; this module only says what may be asked and checks it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Answer", "FIGURES", "FigureSpec", "NoneMeans", "Unit", "figure_spec", "select_tenants",
           "split_tenant_key"]


class Unit(str, Enum):
    RATIO = "ratio"     # a share, 0..1
    SECONDS = "s"
    COUNT = "count"     # requests
    TIMES = "x"         # a multiple (attempts per request)
    GPU_S = "gpu_s"     # GPU-seconds


class NoneMeans(str, Enum):
    WORST = "worst"     # never (a percentile on unanswered requests, no recovery)
    ZERO = "zero"       # nothing (no cache lookups: no hits)


@dataclass(frozen=True)
class FigureSpec:
    """One figure an answer may name: its label, unit, usual direction, what None means,
    and its default noise threshold (|A - B| within max(tie_abs, tie_rel x max|A|,|B|))."""

    label: str
    unit: Unit
    better: Literal["higher", "lower"]
    none_means: NoneMeans = NoneMeans.WORST
    tie_abs: float = 0.0
    tie_rel: float = 0.0


def _ratio(label: str, better: Literal["higher", "lower"] = "higher",
           none: NoneMeans = NoneMeans.WORST) -> FigureSpec:
    return FigureSpec(label, Unit.RATIO, better, none, tie_abs=0.005)


def _secs(label: str) -> FigureSpec:
    return FigureSpec(label, Unit.SECONDS, "lower", NoneMeans.WORST, tie_abs=0.001, tie_rel=0.05)


def _count(label: str) -> FigureSpec:
    return FigureSpec(label, Unit.COUNT, "lower", NoneMeans.ZERO, tie_abs=0.0, tie_rel=0.05)


def _gpu_s(label: str, better: Literal["higher", "lower"] = "lower") -> FigureSpec:
    return FigureSpec(label, Unit.GPU_S, better, NoneMeans.ZERO, tie_abs=0.05, tie_rel=0.05)


_PCTS = {"p50": "p50", "p90": "p90", "p99": "p99", "p999": "p99.9", "max": "max", "mean": "mean"}

FIGURES: dict[str, FigureSpec] = {
    "goodput_ratio": _ratio("goodput"),
    "fairness_jain": _ratio("tenant fairness (Jain)"),
    "amplification": FigureSpec("attempts per request", Unit.TIMES, "lower", tie_abs=0.01),
    **{f"latency_s.{k}": _secs(f"{v} (all requests)") for k, v in _PCTS.items()},
    **{f"latency_ok_s.{k}": _secs(f"{v} (answered)") for k, v in _PCTS.items()},
    **{f"requests.{k}": _count(f"requests {k.replace('_', ' ')}")
       for k in ("lost", "shed", "timed_out", "failed", "unfinished")},
    "recovery.recovered_after_s": _secs("recovery time"),
    "cache.hit_rate": _ratio("cache hit rate", none=NoneMeans.ZERO),
    # Derived: cache hits x one request's share of a full batch's GPU time.
    "cache.gpu_s_saved": _gpu_s("GPU time the cache saved", better="higher"),
    "gpu.utilization": _ratio("GPU utilisation"),
    "gpu.batch_fill": _ratio("batch fill"),
    "gpu.wasted_gpu_s": _gpu_s("wasted GPU time"),
    **{f"gpu.wasted_breakdown_s.{k}": _gpu_s(f"GPU time wasted on {k}")
       for k in ("duplicate", "abandoned", "padding")},
}

# Per-tenant figures, under `tenants.<selector>.`.
TENANT_FIGURES: dict[str, FigureSpec] = {
    "goodput_ratio": _ratio("goodput"),
    "p50_s": _secs("worst p50 (all requests)"),
    "p99_s": _secs("worst p99 (all requests)"),
    "p50_ok_s": _secs("worst p50 (answered)"),
    "p99_ok_s": _secs("worst p99 (answered)"),
}


def split_tenant_key(figure: str) -> tuple[str, str] | None:
    """(selector, per-tenant figure) of a `tenants.<selector>.<figure>` key, else None."""
    if not figure.startswith("tenants."):
        return None
    selector, _, leaf = figure[len("tenants."):].rpartition(".")
    return (selector, leaf) if selector else None


def select_tenants(selector: str, names: list[str] | tuple[str, ...]) -> list[str]:
    """The tenants a selector names, in their order: `!x` is every tenant but x; else a
    name or a glob (`small*`, `*`)."""
    if selector.startswith("!"):
        return [n for n in names if n != selector[1:]]
    return [n for n in names if fnmatch.fnmatchcase(n, selector)]


def figure_spec(figure: str) -> FigureSpec:
    """The spec of a figure key; ValueError naming the valid keys if unknown."""
    tenant = split_tenant_key(figure)
    if tenant is not None:
        leaf = tenant[1]
        if leaf not in TENANT_FIGURES:
            raise ValueError(f"unknown tenant figure '{leaf}': valid are {', '.join(TENANT_FIGURES)}")
        return TENANT_FIGURES[leaf]
    if figure not in FIGURES:
        raise ValueError(f"unknown figure '{figure}': valid are {', '.join(FIGURES)}, "
                         f"or tenants.<name|glob|!name>.<{'|'.join(TENANT_FIGURES)}>")
    return FIGURES[figure]


class Answer(BaseModel):
    """One figure that answers the scenario's question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    figure: str = Field(min_length=1, description="dotted summary key (see FIGURES)")
    label: str = Field("", max_length=60, description="what the report calls it; default: the figure's")
    better: Literal["higher", "lower"] | None = Field(None, description="default: the figure's usual")
    tie: float | None = Field(None, ge=0, description="absolute noise threshold, in the figure's unit")

    @field_validator("figure")
    @classmethod
    def _known(cls, value: str) -> str:
        figure_spec(value)
        return value

    @property
    def spec(self) -> FigureSpec:
        return figure_spec(self.figure)

    @property
    def direction(self) -> Literal["higher", "lower"]:
        return self.better or self.spec.better

    @property
    def title(self) -> str:
        if self.label:
            return self.label
        tenant = split_tenant_key(self.figure)
        if tenant is None:
            return self.spec.label
        return f"tenants {tenant[0]}: {self.spec.label}"
