"""The `llm` result: LLM serving policies on the same token workloads, rate by rate.

Each `LlmRun` is one policy at one offered rate on one length mix: the latency
users of LLM APIs feel (TTFT, TPOT, ITL, E2E), tokens/s, goodput under a TTFT +
TPOT SLO, and where the GPU's work went (KV cache use, preemptions, idle slots,
padding). `LlmResult` holds every run of a compare sweep, each policy's
throughput-vs-TPOT curve with its knee (`Curve`), and per mix the ratio of
continuous to static throughput at the same SLO with the measured reasons
(`CapacityRatio`). The review's LLM answer is the same result with `flaws`:
each LLM flaw of `targets.llm.flaws` measured with its knobs present and fixed
(`LlmFlawCost`). Every figure is decided in the library; `reports/llm.py`
only words it.

A run against an OpenAI-compatible URL (`harness run URL`, `compare URL_A URL_B`,
`sweep URL`) is the same `LlmRun`, its `url` block saying how the answers were
counted (`UrlRunFigures`), and the settings name each URL and how its prompts were
sized (`UrlTargetSettings`) in place of an engine; a sweep adds `search` (`LlmSearch`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.llm_traffic import ConcurrencySweep, Pcts, TrafficFigures
from harness.results.server_metrics import ServerMetricsFigures
from harness.results.stats import Interval

__all__ = ["CapacityRatio", "Curve", "CurvePoint", "EngineSettings", "LlmFlawCost", "LlmResult", "LlmRun",
           "LlmSearch", "LlmSeeds", "LlmSettings", "Pcts", "RATIO_FIGURES", "RUN_FIGURES", "TenantFigures",
           "UrlRunFigures", "UrlTargetSettings", "run_key"]


class TenantFigures(Figures):
    """One tenant's requests: `tokens_requested` is prompt + output tokens asked for, `shed` those its
    rate limit refused."""

    requests: int
    finished: int
    ttft_s: Pcts
    tpot_s: Pcts
    output_tok_s: float
    goodput_rps: float
    tokens_requested: int = 0
    shed: int = 0


class UrlRunFigures(Figures):
    """How one run against a URL was read. `token_count`: where output tokens were counted from
    ("usage": the server's usage.completion_tokens for every answer; "chunks": one per content
    chunk, the server sent no usage; "mixed": some of each; None: no answer finished).
    `short_answers`: finished with fewer tokens than max_tokens asked; `cut`: the stream ended
    before the server said the answer was complete; `prompt_tokens_error`: the mean of
    |prompt tokens the server counted - the target| / the target (None without usage)."""

    token_count: Literal["usage", "chunks", "mixed"] | None
    counted_by_usage: int
    counted_by_chunks: int
    chunks: int
    tokens: int
    short_answers: int
    cut: int
    timed_out: int
    errors: int
    first_errors: list[str] = Field(default_factory=list)
    http_status: dict[str, int] = Field(default_factory=dict)
    prompt_tokens_target_mean: float | None = None
    prompt_tokens_mean: float | None = None      # as the server counted them (usage)
    prompt_tokens_error: float | None = None
    # The client's own lag: when each request's send began less its scheduled start (TTFT and E2E hold it,
    # as they are from the scheduled start; a closed loop's is 0). None: not measured.
    send_lag_p50_s: float | None = None
    send_lag_p99_s: float | None = None


class LlmRun(Figures):
    """One policy at one offered rate on one mix. Token rates count tokens emitted within the arrival window.

    Shares: `idle_slot_share` of the batch slot-tokens held whose sequence had
    already ended; `padding_share` of prefill tokens computed that were padding;
    `kv_utilization` the time-mean share of KV blocks held (paged policies);
    `queue_wait_s` arrival to first scheduled work (head-of-line waiting, and any
    wait for a tenant's rate limit); `shed` requests its tenant limits refused.
    `small_tenants_ttft_p99_s`: the worst TTFT p99 of any tenant but the one that
    asked for the most tokens (the others' view of a dominant tenant; None with
    one tenant, or when none of the others finished a request).
    """

    policy: str
    mix: str
    rate_rps: float
    duration_s: float
    requests: int
    finished: int
    rejected: int
    unfinished: int
    ttft_s: Pcts
    tpot_s: Pcts
    itl_s: Pcts
    e2e_s: Pcts
    queue_wait_s: Pcts
    output_tok_s: float
    total_tok_s: float
    goodput_rps: float
    slo_attainment: float
    busy_share: float
    steps: int
    mean_decode_rows: float | None = None
    kv_utilization: float | None = None
    preemptions: int = 0
    shed: int = 0
    idle_slot_share: float | None = None
    padding_share: float | None = None
    small_tenants_ttft_p99_s: float | None = None
    per_tenant: dict[str, TenantFigures] = Field(default_factory=dict)
    url: UrlRunFigures | None = None   # a run against a URL: how its answers were read
    traffic: TrafficFigures | None = None   # a run with a data set or a load mode (harness.results.llm_traffic)
    server_metrics: ServerMetricsFigures | None = None   # --server-metrics: the engine's own series

    OMIT_IF_NONE = frozenset({"url", "traffic", "server_metrics"})

    def figure(self, name: str) -> float | None:
        """A flaw's symptom by name: a field of this run, or "itl_max_s" (the longest inter-token gap)."""
        return self.itl_s.max if name == "itl_max_s" else getattr(self, name)


class EngineSettings(Figures):
    """The engine every policy ran on (targets.llm.LlmEngineSpec, less the policy)."""

    batch_size: int
    max_wait_s: float
    kv_blocks: int
    block_size: int
    max_seqs: int
    max_batched_tokens: int
    chunked_prefill: bool
    chunk_tokens: int
    tenant_rps: float = 0.0
    tenant_burst_requests: float = 10.0
    tenant_tok_s: float = 0.0
    tenant_burst_tokens: float = 20_000.0
    over_limit: str = "shed"
    max_delay_s: float = 10.0
    tenant_priority: dict[str, int] = Field(default_factory=dict)
    prefix_caching: bool = False
    cost: dict[str, float]


class UrlTargetSettings(Figures):
    """One URL target as it was driven: its label (the `policy` of its runs), the model and what was
    sent (`ignore_eos`, `include_usage`: asked for usage; `extra_fields`: the template's), and how
    prompts were sized: `prompt_sizing` in words, from the server's usage, a tokenizer, or assumed
    (`tokens_per_word` and `overhead_tokens` per prompt). The API key is named, never kept."""

    label: str
    url: str
    api: Literal["completions", "chat"]
    model: str
    ignore_eos: bool
    include_usage: bool
    prompt_sizing: str
    tokens_per_word: float
    overhead_tokens: float
    calibrated: bool
    tokenizer: str | None = None
    api_key_env: str
    api_key_sent: bool
    extra_fields: list[str] = Field(default_factory=list)
    request_timeout_s: float
    notes: list[str] = Field(default_factory=list)


class LlmSettings(Figures):
    """What ran. `engine`: the engine every policy ran on (None: URL targets, each in `targets`)."""

    OMIT_IF_NONE = frozenset({"targets"})

    policies: list[str]
    mixes: list[str]
    rates_rps: list[float]
    duration_s: float
    seed: int
    slo_ttft_s: float
    slo_tpot_s: float
    attainment: float
    engine: EngineSettings | None
    targets: list[UrlTargetSettings] | None = None


class CurvePoint(Figures):
    rate_rps: float
    output_tok_s: float
    tpot_p50_s: float | None
    tpot_p90_s: float | None
    ttft_p90_s: float | None
    meets_slo: bool
    small_tenants_ttft_p99_s: float | None = None   # LlmRun's: None on a mix of one tenant


class Curve(Figures):
    """Throughput against TPOT over the rate sweep. `knee`: index of the point of greatest
    normalised distance below the chord from the first to the last point (Kneedle's rule),
    where more throughput starts to cost TPOT fastest; None with under 3 points."""

    policy: str
    mix: str
    points: list[CurvePoint]
    knee: int | None = None


class CapacityRatio(Figures):
    """Each policy's best output tokens/s over the sweep points meeting the SLO (`*_tok_s`:
    `attainment` of requests within TTFT and TPOT; `*_tpot_tok_s`: p90 TPOT alone), their
    ratios b / a (None: a never meets it), and the reasons measured at `at_rate_rps`
    (a's best point)."""

    mix: str
    a: str
    b: str
    a_tok_s: float | None
    b_tok_s: float | None
    ratio: float | None
    a_tpot_tok_s: float | None
    b_tpot_tok_s: float | None
    tpot_ratio: float | None
    at_rate_rps: float
    a_idle_slot_share: float | None = None
    a_padding_share: float | None = None
    a_queue_wait_p50_s: float | None = None
    b_queue_wait_p50_s: float | None = None
    a_mean_decode_rows: float | None = None
    a_useful_decode_rows: float | None = None   # rows per step whose sequence still made a token
    b_mean_decode_rows: float | None = None
    b_preemptions: int | None = None


class LlmFlawCost(Figures):
    """One LLM flaw on one mix that exposes it, at `rate_rps`: its `symptom` (an `LlmRun` share that the
    fix raises, or "itl_max_s", the longest stall of a running decode, that it cuts) with the flaw
    present and fixed, beside goodput and TTFT p50 either way."""

    id: str
    doc_item: str
    failure: str
    fix: str
    present: str            # the knobs, as `--set` words ("policy=llm-dynamic")
    fixed: str
    mix: str
    rate_rps: float
    symptom: str
    symptom_present: float | None
    symptom_fixed: float | None
    goodput_present_rps: float
    goodput_fixed_rps: float
    ttft_p50_present_s: float | None
    ttft_p50_fixed_s: float | None
    # A fleet flaw (`targets.llm.flaws`, fleet=True) on a fleet day: the prefix cache's hit rate either way,
    # and the day's exact repeats (the share of requests whose whole prompt an earlier one sent: what an
    # exact-response cache could serve at best). None on an engine flaw.
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"replicas", "prefix_hit_present", "prefix_hit_fixed",
                                                          "tokens_saved_fixed", "prompt_tokens", "exact_repeat_share"})

    replicas: int | None = None
    prefix_hit_present: float | None = None
    prefix_hit_fixed: float | None = None
    tokens_saved_fixed: int | None = None
    prompt_tokens: int | None = None
    exact_repeat_share: float | None = None


class LlmSearch(Figures):
    """`harness sweep URL`: the highest offered rate at which `attainment` of the requests met the
    TTFT + TPOT SLO (None: no rate did), searched by galloping from `start_rps` then bisecting to
    `rel_tol`; `first_failing_rate` the lowest failing rate above it (None: none failed). Each step
    is one of the result's runs."""

    target: str
    mix: str
    start_rps: float
    step_duration_s: float
    rel_tol: float
    max_rate_within_slo: float | None
    first_failing_rate: float | None
    steps: int


class LlmSeeds(Figures):
    """`compare llm-A llm-B --seeds N`: the sweep under seeds `seeds` (the same arrivals on both sides
    per seed), each figure's mean and 95% interval over them. `ratios`: per mix, the capacity
    figures of `CapacityRatio` (`RATIO_FIGURES`); `runs`: per "policy, mix, rate" (as
    `run_key` writes it), the run figures of `RUN_FIGURES`. The rest of the result is the first
    seed's."""

    seeds: list[int]
    ratios: dict[str, dict[str, Interval]] = Field(default_factory=dict)
    runs: dict[str, dict[str, Interval]] = Field(default_factory=dict)


RATIO_FIGURES = ("a_tok_s", "b_tok_s", "ratio", "a_tpot_tok_s", "b_tpot_tok_s", "tpot_ratio")
RUN_FIGURES = ("output_tok_s", "goodput_rps", "slo_attainment", "ttft_s.p50", "ttft_s.p90", "tpot_s.p50",
               "tpot_s.p90", "e2e_s.p90")


def run_key(run: LlmRun) -> str:
    return f"{run.policy}, {run.mix}, {run.rate_rps:g}"


class LlmResult(Result):
    OMIT_IF_NONE = frozenset({"search", "over_seeds", "concurrency"})

    kind: Literal["llm"] = "llm"
    settings: LlmSettings
    runs: list[LlmRun] = Field(default_factory=list)
    curves: list[Curve] = Field(default_factory=list)
    ratios: list[CapacityRatio] = Field(default_factory=list)
    flaws: list[LlmFlawCost] = Field(default_factory=list)
    search: LlmSearch | None = None
    over_seeds: LlmSeeds | None = None
    concurrency: ConcurrencySweep | None = None   # `sweep URL --concurrency 1,2,4,...`

    def summary_json(self) -> dict[str, Any]:
        """What `--json` prints: settings, curves and ratios (runs without per-tenant blocks)."""
        doc = self.to_json()
        doc.pop("versions", None)
        for run in doc["runs"]:
            run.pop("per_tenant", None)
        return doc
