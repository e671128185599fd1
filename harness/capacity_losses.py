"""Where realtime throughput goes: each source of loss, measured by targeted sim runs.

``loss_points`` lists the runs (on the realtime fleet, once it is known);
``measure_losses`` turns their results into rows ``{source, measured, unit,
explanation}`` plus the figures the explanation quotes (``detail``). A measured
value is None when the run it needs never answered enough requests to say.

Each run isolates one effect by changing one thing against a baseline:

| source | run | baseline |
|---|---|---|
| partial batches | peak on the realtime fleet | (fill vs load) |
| GPUs idle while batches form | peak, probed every 1 ms | - |
| queueing variance | uniform arrivals, lowest stable fleet | Poisson, same fleet |
| the SLO's cap on batch wait | 1% of peak, max wait uncapped | 1% of peak, SLO-derived max wait |
| per-server queues | hardened+per-server-queues at 10% of peak | hardened at 10% |
| duplicates from retries | hardened+blind-retries+no-admission-control, 80% of peak, batch time x3 for a third | (hardened, same) |
| padding | hardened+fixed-batch-time, lognormal sizes, 40% of peak | (hardened: length buckets) |
| affine t(b) | 1% of peak, affine cost | 1% of peak, the plan's cost model |

Runs in parentheses are contrast runs, made only in full plans.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.capacity_sim import Point, lowest_stable_fleet
from workloads.model import Fault, FaultKind, Sizes

__all__ = ["LOW_LOAD", "MID_LOAD", "loss_points", "measure_losses"]

LOW_LOAD = 0.01   # night: a shared queue fills B=32 in 0.32 s at 100 QPS, past any SLO-derived wait
MID_LOAD = 0.1    # where ten private queues each see a tenth of the traffic
SLOW_LOAD = 0.8   # the slowdown scenario's share of peak
SLOW_MIN_S = 6.0  # virtual s: the slowdown lasts a third of it, twice the 1 s client timeout
SLOW_FACTOR = 3.0  # batch time x3: the queue outgrows the client timeout within the slowdown
BLIND = "hardened+blind-retries+no-admission-control"
PAD_LOAD = 0.4    # the variable-sizes scenario's share of peak
VARIABLE_SIZES = Sizes(kind="lognormal", length=64, sigma=0.6, max_length=1024)


class _Planner(Protocol):
    inp: Any
    knobs: dict[str, Any]
    budget: Any

    def point(self, key: str, gpus: int, rate_rps: float, target: str = "hardened",
              extra: dict[str, Any] | None = None, duration_s: float | None = None,
              **traffic_kw: Any) -> Point: ...


def loss_points(pl: _Planner, gpus: int, loads: tuple[float, ...]) -> list[Point]:
    """Every run the losses and the fill-vs-load table need, on a fleet of ``gpus``."""
    qps, b, t_b = pl.inp.qps, pl.inp.batch_size, pl.knobs["batch_time_s"]
    low = qps * LOW_LOAD
    pts = [pl.point(f"load{f:g}", gpus, qps * f) for f in sorted(set(loads) | {LOW_LOAD, MID_LOAD})
           if f != 1.0]
    # Uncapped: wait long enough for B requests to arrive (twice their mean time), whatever
    # the SLO says; admission control would shed every request predicted to wait that long,
    # and the client's deadline would drop it, so both make room.
    fill_s = 2 * b / low
    pts.append(pl.point("nocap", gpus, low, extra={
        "max_wait_s": fill_s, "admission": False, "client_timeout_s": max(1.0, fill_s + 4 * t_b)}))
    pts.append(pl.point("per-server-mid", gpus, qps * MID_LOAD, target="hardened+per-server-queues"))
    # Long enough that a third of it outlasts the clients' timeouts several times over.
    d_slow = max(pl.budget.duration_s(qps * SLOW_LOAD), SLOW_MIN_S)
    slow = dict(faults=(Fault(kind=FaultKind.SLOWDOWN, at_s=d_slow / 3, duration_s=d_slow / 3, factor=SLOW_FACTOR),),
                duration_s=d_slow)
    # The doc's items 4 and 5 together: without admission control the queue grows, clients
    # time out and retry, and the GPUs compute the abandoned originals and the retries.
    pts.append(pl.point("blind-slow", gpus, qps * SLOW_LOAD, target=BLIND, **slow))
    pts.append(pl.point("pad-off", gpus, qps * PAD_LOAD, target="hardened+fixed-batch-time",
                        sizes=VARIABLE_SIZES))
    if pl.knobs["cost_model"] == "affine":
        other = {"cost_model": "constant"}
    else:
        other = {"cost_model": "affine", "cost_t0_s": 0.2 * t_b, "cost_per_item_s": 0.8 * t_b / b}
    pts.append(pl.point("cost-low", gpus, low, extra=other))
    if pl.budget.extras:
        pts.append(pl.point("per-server-peak", gpus, qps, target="hardened+per-server-queues"))
        pts.append(pl.point("hardened-slow", gpus, qps * SLOW_LOAD, **slow))
        pts.append(pl.point("pad-on", gpus, qps * PAD_LOAD, sizes=VARIABLE_SIZES))
    return pts


def _ms(x: float | None) -> str:
    return "never (unbounded)" if x is None else f"{x * 1000:.0f} ms"


def _ratio_loss(num: float | None, den: float | None) -> float | None:
    """1 - num / den: the share of per-GPU throughput lost when fill drops from den to num."""
    if not num or not den:
        return None
    return max(0.0, 1.0 - num / den)


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def measure_losses(results: dict[str, dict[str, Any]], doc: dict[str, Any], extras: bool) -> list[dict[str, Any]]:
    """Rows {source, measured, unit, explanation, detail} from the runs ``loss_points`` made."""
    inp = doc["inputs"]
    qps, b, t_b, slo = inp["qps"], inp["batch_size"], inp["batch_time_s"], inp["slo_p99_s"]
    g = doc["realtime_gpus"]
    g_stable = lowest_stable_fleet(doc["theoretical_gpus"])
    R = results
    peak, low, mid = R[f"x1:{g}"], R[f"load{LOW_LOAD:g}"], R[f"load{MID_LOAD:g}"]
    rows: list[dict[str, Any]] = []

    def row(source: str, measured: float | None, unit: str, explanation: str, **detail: Any) -> None:
        rows.append({"source": source, "measured": measured, "unit": unit,
                     "explanation": explanation, "detail": detail})

    row("partial batches", 1 - peak["batch_fill"], "share of batch slots empty at peak",
        f"a shared queue at {qps:,.0f} QPS fills B={b} in {1000 * b / qps:.1f} ms, so batches leave "
        f"{peak['batch_fill']:.1%} full at peak; at {LOW_LOAD:.0%} of peak only "
        f"{low['batch_fill']:.0%} (the max-wait timer fires first), and a GPU-second then "
        f"serves {low['batch_fill']:.0%} of what the formula assumes",
        fill_peak=peak["batch_fill"], fill_low=low["batch_fill"])
    row("GPUs idle while batches form", peak["idle_forming_frac"], "share of GPU time at peak",
        f"sampled every 1 ms on {g} GPUs: a free GPU beside a queue shorter than B waits for "
        f"B requests or the {doc['max_wait_s'] * 1000:.0f} ms max-wait timer; at "
        f"{LOW_LOAD:.0%} of peak it is {low['idle_forming_frac']:.1%}",
        idle_peak=peak["idle_forming_frac"], idle_low=low["idle_forming_frac"])
    pois, uni = R[f"x1:{g_stable}"], R["uniform"]
    extra_txt = ""
    if extras and "bursty" in R:
        extra_txt = f"; bursty arrivals (gamma, squared CV 4): p99 {_ms(R['bursty']['p99_s'])}"
    delta = None if pois["p99_s"] is None or uni["p99_s"] is None else pois["p99_s"] - uni["p99_s"]
    row("queueing variance", delta, f"s of p99 on {g_stable} GPUs ({doc['theoretical_gpus'] / g_stable:.0%} busy)",
        f"evenly spaced arrivals: p99 {_ms(uni['p99_s'])}; Poisson: {_ms(pois['p99_s'])}{extra_txt}. "
        f"A batch of {b} smooths Poisson noise (its arrivals vary 1/{b} as much), so variance "
        "costs little at a steady peak; bursts longer than a batch do not smooth: that is "
        "what the headroom fleet is for",
        p99_uniform_s=uni["p99_s"], p99_poisson_s=pois["p99_s"],
        p99_bursty_s=R["bursty"]["p99_s"] if "bursty" in R else None)
    nocap = R["nocap"]
    row("the SLO's cap on batch wait", _ratio_loss(low["batch_fill"], nocap["batch_fill"]),
        f"share of per-GPU throughput at {LOW_LOAD:.0%} of peak",
        f"the SLO leaves a {doc['max_wait_s'] * 1000:.0f} ms max wait, so at {qps * LOW_LOAD:,.0f} QPS batches "
        f"leave {low['batch_fill']:.0%} full; waiting for full batches fills {nocap['batch_fill']:.0%} "
        f"but p99 becomes {_ms(nocap['p99_s'])} against the {slo * 1000:.0f} ms target",
        fill_capped=low["batch_fill"], fill_uncapped=nocap["batch_fill"], p99_uncapped_s=nocap["p99_s"])
    ps = R["per-server-mid"]
    peak_txt = ""
    if extras and "per-server-peak" in R:
        pp = R["per-server-peak"]
        peak_txt = (f"; at peak p99 {_ms(pp['p99_s'])} vs {_ms(peak['p99_s'])} shared, GPUs idle "
                    f"while batches form {pp['idle_forming_frac']:.1%} vs {peak['idle_forming_frac']:.1%}")
    row("fragmentation across per-server queues", _ratio_loss(ps["batch_fill"], mid["batch_fill"]),
        f"share of per-GPU throughput at {MID_LOAD:.0%} of peak",
        f"ten private queues each see a tenth of {qps * MID_LOAD:,.0f} QPS: batches leave "
        f"{ps['batch_fill']:.0%} full against {mid['batch_fill']:.0%} from one shared queue{peak_txt}",
        fill_per_server=ps["batch_fill"], fill_shared=mid["batch_fill"])
    bs = R["blind-slow"]
    hs_txt = ""
    if extras and "hardened-slow" in R:
        hs = R["hardened-slow"]
        hs_txt = (f"; with request IDs, dedupe and backoff: {_share(hs['wasted_s']['duplicate'], hs['busy_gpu_s']) or 0:.1%}"
                  f", amplification {hs['amplification']:.2f}")
    row("duplicates from retries", _share(bs["wasted_s"]["duplicate"], bs["busy_gpu_s"]),
        "share of GPU time computing duplicates",
        f"batch time x{SLOW_FACTOR:g} for a third of a run at {SLOW_LOAD:.0%} of peak; with no admission "
        f"control the queue outgrows the client timeout, blind retries (no IDs, no backoff) send "
        f"{bs['amplification']:.2f} attempts per request, and a further "
        f"{_share(bs['wasted_s']['abandoned'], bs['busy_gpu_s']) or 0:.0%} of GPU time serves "
        f"clients that already gave up{hs_txt}",
        amplification=bs["amplification"], duplicate_gpu_s=bs["wasted_s"]["duplicate"],
        abandoned_gpu_s=bs["wasted_s"]["abandoned"])
    po = R["pad-off"]
    on_txt = ""
    if extras and "pad-on" in R:
        on_txt = f"; length buckets cut it to {_share(R['pad-on']['wasted_s']['padding'], R['pad-on']['busy_gpu_s']) or 0:.1%}"
    row("padding with variable sizes", _share(po["wasted_s"]["padding"], po["busy_gpu_s"]),
        "share of GPU time spent on padding",
        f"lognormal input lengths (median 64 tokens) at {PAD_LOAD:.0%} of peak: a batch runs as long "
        f"as its longest input, so shorter ones are padded{on_txt}",
        p99_s=po["p99_s"], padding_gpu_s=po["wasted_s"]["padding"])
    other = R["cost-low"]
    full_cost = t_b / b
    affine_run, base_run = (low, other) if inp["cost_model"] == "affine" else (other, low)
    aff = affine_run["gpu_s_per_request"]
    base = base_run["gpu_s_per_request"]
    base_name = "constant" if inp["cost_model"] == "affine" else inp["cost_model"]
    row("affine t(b) on small batches", None if aff is None else aff / full_cost,
        f"x the full-batch GPU time per request, at {LOW_LOAD:.0%} of peak",
        f"with t(b) = t0 + k b (t0 = 20% of t(B)) a small batch costs less than a full one, so "
        f"partial batches waste less than the {base_name} model says "
        f"({'-' if base is None else f'{base / full_cost:.1f}x'}); the fixed t0 still makes "
        f"each request in them dearer than in a full batch",
        gpu_s_per_request_affine=aff, gpu_s_per_request_base=base, full_batch_gpu_s=full_cost)
    return rows
