"""LLM URL gates: a CI performance gate on an OpenAI-compatible endpoint, driven live.

A gate file whose gates are `[[llm]]` tables (example: harness/gate/llm.toml)::

    [defaults]                  # all optional
    url = "http://127.0.0.1:8000/v1/completions"   # the endpoint under test:
                                # `--target URL` replaces it wherever a gate names it
                                # (every gate's url when this is not set); loopback
                                # unless `harness gate --allow-remote`
    seed = 1                    # the arrivals and lengths drawn, as `harness run URL --seed`
    tolerance = 0.05            # default relative tolerance of `baseline` checks
    mix = "short"               # a length mix or an LLM trace file (as `run URL -w`)
    rate_rps = 2                # offered rate, open loop
    duration_s = 20             # seconds of arrivals
    slo_ttft_s = 2.0            # the SLO goodput is counted under: TTFT and TPOT
    slo_tpot_s = 0.1
    attainment = 0.9            # (the share of requests that must meet it: the sweep's)
    model = "my-model"          # default: the first the server lists at /v1/models
    api_key_env = "OPENAI_API_KEY"
    dataset = "chats.json"      # prompts from a data set (as `run URL --dataset`): ShareGPT
                                # (every turn), JSONL/CSV of prompts, a Mooncake trace
    dataset_format = "sharegpt" # default: from the file
    concurrency = 4             # a closed loop of N users in place of rate_rps
    max_concurrency = 8         # an open loop at rate_rps, at most N in flight
    think_time_s = 1.0          # between an answer and its conversation's next turn
    prefix_tokens = 256         # a shared system prompt opening every conversation...
    prefix_groups = 4           # ...one of this many
    driver_procs = 2            # the run's conversations over N driver processes...
    driver_executor = "ray"     # ...spawned here ("process") or Ray actors ("ray": RAY_ADDRESS)

    [[llm]]                     # one live run of the endpoint, and checks on it
    url = "..."                 # optional; every key of [defaults] but seed and
    rate_rps = 4                # tolerance may be set per gate
    checks = [
      "ttft_s.p90 <= 0.5",                # seconds; no answer at all fails
      "tpot_s.p90 <= 0.05",
      "goodput_rps >= 3.5",               # req/s within the TTFT + TPOT SLO
      "error_ratio <= 0.01",
      "output_tok_s >= baseline -10%",    # relative to --baseline RESULT
      "ttft_s.p99 <= baseline",           # ... within defaults.tolerance
    ]

A check is ``KEY OP VALUE`` as in every gate file (harness/gate/file.py); KEY is one of
`LLM_KEYS`: the run's TTFT, TPOT, ITL and E2E percentiles, goodput under the SLO, tokens
per second, and the shares of requests that erred, timed out or were shed. A baseline is
an `llm` result of `harness run URL --out RUN.json` (or of `compare URL_A URL_B`), or an
earlier LLM gate's result: its run of the same mix at the same rate (the one of the same
URL where it has several). `--results RUN.json` judges saved `llm` results in place of
driving the endpoint.

Each gate is one run of `harness.analysis.llm.url.url_run`: the endpoint probed, then
driven open loop; a gate with a data set, a load mode or a shared prefix is one run of
`harness.analysis.llm.traffic.traffic_url_run` (its checks name it by the file and the
load: "chats.json concurrency 4"). An endpoint that cannot be reached or refuses the probe is no verdict on
its speed: the gate says it cannot judge (exit 2), as for an invalid request-level run.
Errors in a file name it, the key and the problem.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness.analysis.llm.compare import LlmSweep
from harness.gate.check import Summary, evaluate
from harness.gate.file import Check, Gate, _err, _number, _table, _tables, _threshold_checks
from harness.live.openai import DEFAULT_API_KEY_ENV, UrlTarget
from harness.live.openai.traffic import Traffic
from harness.results.base import Result
from harness.results.gate import CheckOutcome, GateResult
from harness.results.llm import LlmResult, LlmRun
from workloads.datasets import DatasetError
from workloads.loader import ConfigError, read_toml

__all__ = ["LLM_KEYS", "LlmGate", "LlmGateFile", "has_llm_gates", "llm_figures", "load_llm_gate_file",
           "run_llm_gate"]

_PCTS = ("mean", "p50", "p90", "p99", "max")
_LATENCY = {"ttft_s": "time to first token", "tpot_s": "time per output token after the first",
            "itl_s": "inter-token latency (over tokens)", "e2e_s": "end to end, scheduled start to last token"}
# key -> (unit, meaning): what a [[llm]] check may name (the docs page prints this table).
LLM_KEYS: dict[str, tuple[str, str]] = {
    **{f"{k}.{p}": ("s", f"{what}, {p}") for k, what in _LATENCY.items() for p in _PCTS},
    "goodput_rps": ("req/s", "requests per second finished within the TTFT and TPOT SLO"),
    "slo_attainment": ("-", "share of the requests sent that met the TTFT and TPOT SLO"),
    "output_tok_s": ("tokens/s", "output tokens per second over the arrivals' window"),
    "total_tok_s": ("tokens/s", "prompt and output tokens per second"),
    "requests": ("-", "requests sent"),
    "finished": ("-", "requests answered in full"),
    "error_ratio": ("-", "share of requests that erred: an HTTP status other than 200 or 429, a broken "
                         "connection or stream, or a stream cut short"),
    "timeout_ratio": ("-", "share of requests abandoned at their bound (twice their SLO budget)"),
    "shed_ratio": ("-", "share of requests the server refused with 429"),
}
_TRAFFIC = ("dataset", "dataset_format", "concurrency", "max_concurrency", "think_time_s", "prefix_tokens",
            "prefix_groups", "driver_procs", "driver_executor")
_SETTINGS = {"url", "mix", "rate_rps", "duration_s", "slo_ttft_s", "slo_tpot_s", "attainment", "model", "api_key_env",
             *_TRAFFIC}
DEFAULT_MIX = "short"
DEFAULT_RATE_RPS = 2.0
DEFAULT_DURATION_S = 20.0
OnRun = Callable[[str], None]


@dataclass(frozen=True)
class LlmGate:
    """The checks on one live run of an endpoint: `sweep` says what is sent (one mix, one rate)."""

    target: UrlTarget
    sweep: LlmSweep
    checks: tuple[Check, ...]
    where: str
    traffic: Traffic | None = None   # a data set, a load mode, a shared prefix (None: the mix, open loop)

    @property
    def scenario(self) -> str:
        """How the gate's checks name the run: its mix and rate (with traffic: its file and load)."""
        if self.traffic is not None:
            return traffic_scenario(self.traffic, self.sweep.mixes[0])
        return scenario_of(self.sweep.mixes[0], self.sweep.rates_rps[0])


@dataclass(frozen=True)
class LlmGateFile:
    path: str
    seed: int
    tolerance: float
    gates: tuple[LlmGate, ...]


def scenario_of(mix: str, rate_rps: float) -> str:
    return f"{Path(mix).name} {rate_rps:g} req/s"


def traffic_scenario(traffic: Traffic, mix: str) -> str:
    return f"{Path(traffic.dataset.path if traffic.dataset is not None else mix).name} {traffic.load.label}"


def _whole(data: dict[str, Any], p: str, key: str, name: str, low: int) -> int | None:
    v = data.get(name)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < low):
        raise _err(p, f"{key}.{name}", f"must be a whole number >= {low}, not {v!r}")
    return v


def _traffic(item: dict[str, Any], d: dict[str, Any], p: str, key: str, rate_rps: float | None) -> Traffic | None:
    """The gate's traffic keys (its own, else [defaults]'), as `run URL --dataset ... --concurrency ...`."""
    def where(name: str) -> tuple[dict[str, Any], str]:
        return (item, key) if name in item else (d, "defaults")

    if not any(name in item or name in d for name in _TRAFFIC):
        return None
    text = {n: _text(where(n)[0], p, where(n)[1], n, None) for n in ("dataset", "dataset_format", "driver_executor")}
    whole = {n: _whole(where(n)[0], p, where(n)[1], n, low) for n, low in
             (("concurrency", 1), ("max_concurrency", 1), ("prefix_tokens", 0), ("prefix_groups", 1),
              ("driver_procs", 1))}
    think = where("think_time_s")
    think_s = think[0].get("think_time_s", 0.0)
    if isinstance(think_s, bool) or not isinstance(think_s, (int, float)) or think_s < 0:
        raise _err(p, f"{think[1]}.think_time_s", f"must be a number >= 0, not {think_s!r}")
    try:
        return Traffic.of(text["dataset"], text["dataset_format"], rate_rps, whole["concurrency"],
                          whole["max_concurrency"], float(think_s), default_rate_rps=DEFAULT_RATE_RPS,
                          prefix_tokens=whole["prefix_tokens"] or 0, prefix_groups=whole["prefix_groups"] or 1,
                          driver_procs=whole["driver_procs"] or 1, driver_executor=text["driver_executor"] or "process")
    except DatasetError as exc:
        raise ConfigError(f"{where('dataset')[1]}.dataset: {exc}") from None
    except ValueError as exc:
        raise _err(p, key, str(exc)) from None


def has_llm_gates(path: str | Path) -> bool:
    """Whether a gate file holds [[llm]] gates (ConfigError: not TOML, or missing)."""
    return "llm" in read_toml(Path(path))


def _text(data: dict[str, Any], p: str, key: str, name: str, default: str | None) -> str | None:
    v = data.get(name, default)
    if v is not None and (not isinstance(v, str) or not v):
        raise _err(p, f"{key}.{name}" if key else name, f"must be a non-empty string, not {v!r}")
    return v


def _gate(item: dict[str, Any], d: dict[str, Any], p: str, key: str, seed: int, tol: float, under_test: str | None,
          target: str | None, allow_remote: bool) -> LlmGate:
    url = _text(item, p, key, "url", None) or under_test
    where = f"{key}.url" if "url" in item else "defaults.url"
    if target and (under_test is None or url == under_test):  # --target replaces the endpoint under test
        url, where = target, "--target"
    if url is None:
        raise _err(p, f"{key}.url", "missing: give url here, defaults.url or --target URL")
    model = _text(item, p, key, "model", _text(d, p, "defaults", "model", None))
    api_key_env = _text(item, p, key, "api_key_env", _text(d, p, "defaults", "api_key_env", DEFAULT_API_KEY_ENV))
    try:
        endpoint = UrlTarget.parse(url, allow_remote, model, api_key_env or DEFAULT_API_KEY_ENV)
    except ValueError as exc:
        raise (ConfigError(f"--target: {exc}") if where == "--target" else _err(p, where, str(exc))) from None
    numbers = {name: _number(item, p, key, name, _number(d, p, "defaults", name, None))
               for name in ("rate_rps", "duration_s", "slo_ttft_s", "slo_tpot_s", "attainment")}
    if numbers["attainment"] is not None and numbers["attainment"] > 1:
        raise _err(p, f"{key}.attainment" if "attainment" in item else "defaults.attainment",
                   f"must be a share in (0, 1], not {numbers['attainment']:g}")
    mix = _text(item, p, key, "mix", _text(d, p, "defaults", "mix", DEFAULT_MIX)) or DEFAULT_MIX
    if mix.endswith((".csv", ".jsonl", ".ndjson")) and not Path(mix).is_file():
        raise _err(p, f"{key}.mix" if "mix" in item else "defaults.mix", f"LLM trace file '{mix}' not found")
    slo = {k: v for k, v in numbers.items() if k in ("slo_ttft_s", "slo_tpot_s", "attainment") and v is not None}
    try:
        sweep = LlmSweep(policies=(endpoint.label,), mixes=(mix,), rates_rps=(numbers["rate_rps"] or DEFAULT_RATE_RPS,),
                         duration_s=numbers["duration_s"] or DEFAULT_DURATION_S, seed=seed, **slo)
    except (ValueError, OSError) as exc:
        raise _err(p, f"{key}.mix" if "mix" in item else "defaults.mix", str(exc)) from None
    traffic = _traffic(item, d, p, key, numbers["rate_rps"])
    parsed = _threshold_checks(item["checks"], tol, p, key, "LLM", LLM_KEYS, baseline=True)
    for j, c in enumerate(parsed):
        if c.bound.value != "mean":
            raise _err(p, f"{key}.checks[{j}].bound", "an LLM gate is one live run: there is no interval to bound")
    return LlmGate(endpoint, sweep, parsed, key, traffic)


def load_llm_gate_file(path: str | Path, target: str | None = None, allow_remote: bool = False) -> LlmGateFile:
    """Parse and validate a gate file of [[llm]] gates; `target` (a URL) replaces the endpoint under test.
    ConfigError naming the file, the key and the problem."""
    p = str(path)
    data = read_toml(Path(path))
    if any(k in data for k in ("scenario", "paired", "canary", "sweep")):
        other = next(k for k in ("scenario", "paired", "canary", "sweep") if k in data)
        raise _err(p, other, "an LLM gate drives a live endpoint and a sim gate runs in virtual time: keep "
                             "them in files of their own")
    _table(data, p, "", {"defaults", "llm", "description"})
    d = _table(data.get("defaults", {}), p, "defaults", _SETTINGS | {"seed", "tolerance"})
    seed = d.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _err(p, "defaults.seed", f"must be an integer, not {seed!r}")
    tol = _number(d, p, "defaults", "tolerance", 0.05)
    under_test = _text(d, p, "defaults", "url", None)
    if target is not None and "://" not in target:
        raise ConfigError(f"--target '{target}': the gates of {p} drive an LLM endpoint; give its URL")
    gates = []
    for key, item in _tables(data.get("llm", []), p, "llm"):
        _table(item, p, key, _SETTINGS | {"checks"}, ("checks",))
        gates.append(_gate(item, d, p, key, seed, tol, under_test, target, allow_remote))
    if not gates:
        raise _err(p, "llm", "holds no gate: one table per run of the endpoint")
    return LlmGateFile(p, seed, tol, tuple(gates))


def llm_figures(run: LlmRun) -> dict[str, Any]:
    """What a check reads of a run: its figures as its result spells them, with the shares of
    requests that erred, timed out or were shed (None when nothing was sent)."""
    doc = run.model_dump(mode="python", by_alias=True, include={*_LATENCY, *(k for k in LLM_KEYS if "." not in k)})
    u, n = run.url, run.requests
    errors = (u.errors + u.cut) if u is not None else None
    timed_out = u.timed_out if u is not None else run.unfinished
    doc.update(error_ratio=errors / n if n and errors is not None else None, timeout_ratio=timed_out / n if n else None,
               shed_ratio=run.shed / n if n else None)
    return doc


def _runs_of(result: Result, what: str) -> list[tuple[LlmRun, str]]:
    """(run, its target's URL) of an llm result, or of an LLM gate's result."""
    if isinstance(result, LlmResult):
        urls = {t.label: t.url for t in result.settings.targets or []}
        return [(r, urls.get(r.policy, r.policy)) for r in result.runs]
    if isinstance(result, GateResult) and result.llm:
        return [pair for r in result.llm for pair in _runs_of(r, what)]
    raise ValueError(f"{what} of an LLM gate must be an llm result (harness run URL --out RUN.json) or an LLM "
                     f"gate's result, not '{result.kind}'" + (" without LLM runs" if isinstance(result, GateResult)
                                                               else ""))


def _pick(gate: LlmGate, runs: list[tuple[LlmRun, str]]) -> LlmRun | None:
    """The run of the gate's mix and rate: the one of its URL, else the only one."""
    mix, rate = gate.sweep.mixes[0], gate.sweep.rates_rps[0]
    if gate.traffic is not None:   # the run of the same file (or mix) under the same load
        mix = gate.traffic.dataset.path if gate.traffic.dataset is not None else mix
        same = [(r, url) for r, url in runs if r.mix == mix and r.traffic is not None
                and r.traffic.load_label == gate.traffic.load.label]
    else:
        same = [(r, url) for r, url in runs if r.mix == mix and math.isclose(r.rate_rps, rate) and r.traffic is None]
    mine = [r for r, url in same if url == gate.target.url]
    return mine[-1] if mine else (same[0][0] if len(same) == 1 else None)


def _no_run(gate: LlmGate, why: str) -> list[CheckOutcome]:
    return [CheckOutcome(scenario=gate.scenario, target=gate.target.url, key=c.key, op=c.op, check=c.text,
                         threshold=c.value, measured=None, passed=False, note=why, skipped=False) for c in gate.checks]


def judge_llm_gate(gate: LlmGate, run: LlmRun, base: LlmRun | None, baseline_given: bool) -> list[CheckOutcome]:
    """Each check of the gate on its run, decided (`harness.gate.check.evaluate`); `base`: the
    baseline's run of the same mix and rate, None when there is none (`baseline_given`: a
    baseline was given, so a relative check fails saying so, rather than being skipped)."""
    g = Gate(gate.scenario, gate.target.url, None, gate.checks, None, gate.where)
    summaries: dict[tuple[str, str, float | None], Summary] = {(g.scenario, g.target, None): llm_figures(run)}
    baseline: dict[tuple[str, str], Summary] | None = None
    if baseline_given:
        baseline = {(g.scenario, g.target): llm_figures(base)} if base is not None else {}
    return [evaluate(c, g, summaries, baseline) for c in gate.checks]


def run_llm_gate(path: str, target: str | None = None, baseline: Result | None = None,
                 results: list[Result] | None = None, result_files: list[str] | None = None,
                 allow_remote: bool = False, on_run: OnRun | None = None) -> GateResult:
    """Parse (ConfigError), drive each gate's run (or read it from `results`), evaluate; the gate result.
    ValueError when the baseline or a given result is not an llm result (or an LLM gate's)."""
    from harness.analysis.llm.traffic import traffic_url_run
    from harness.analysis.llm.url import url_run
    from harness.live.openai.run import ProbeFailed

    started = time.perf_counter()
    gf = load_llm_gate_file(path, target, allow_remote)
    base_runs = _runs_of(baseline, "a baseline") if baseline is not None else []
    given = [pair for r in results or [] for pair in _runs_of(r, "--results")]
    checks: list[CheckOutcome] = []
    cannot: list[str] = []
    # The runs the checks read, kept in the gate's result (so it can be a later gate's baseline).
    made = [x for r in results or [] for x in ([r] if isinstance(r, LlmResult) else
                                               r.llm or [] if isinstance(r, GateResult) else [])]
    for gate in gf.gates:
        if results:
            run = _pick(gate, given)
            if run is None:
                have = ", ".join(sorted({f"{scenario_of(r.mix, r.rate_rps)} on {url}" for r, url in given}))
                raise ConfigError(f"--results: {gf.path} key '{gate.where}' needs a run of {gate.scenario} on "
                                  f"{gate.target.url}; the given results hold: {have or 'none'}")
        else:
            if on_run:
                on_run(f"{gate.target.label}, {gate.scenario}")
            try:
                result = url_run(gate.target, gate.sweep) if gate.traffic is None else \
                    traffic_url_run(gate.target, gate.sweep, gate.traffic)
            except ProbeFailed as exc:
                cannot.append(f"{gate.where}: {exc}")
                checks += _no_run(gate, "no run (see cannot judge)")
                continue
            made.append(result)
            run = result.runs[0]
        checks += judge_llm_gate(gate, run, _pick(gate, base_runs), baseline is not None)
    return GateResult(gate_file=gf.path, seed=gf.seed, target=target, checks=checks,
                      passed=all(c.passed for c in checks) and not cannot, summaries={}, durations={},
                      wall_s=time.perf_counter() - started, cannot_judge=cannot, results=list(result_files or []),
                      llm=made)
