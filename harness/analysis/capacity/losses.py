"""Where realtime throughput goes: each source of loss, measured by targeted sim runs.

``loss_points`` lists the runs (on the realtime fleet, once it is known);
``measure_losses`` turns their results into rows ``{source, measured, unit,
explanation}`` plus the figures the explanation quotes (``detail``). A measured
value is None when the run it needs never answered enough requests to say.

Each run isolates one effect by changing one thing against a baseline. Where the
question is how batches form, both sides pin DYNAMIC batching (flush at B or after
the SLO-derived max wait), whatever the hardened target's own batching is:

| source | run | baseline |
|---|---|---|
| partial batches | peak on the realtime fleet | (fill vs load) |
| GPUs idle while batches form | peak, probed every 1 ms | - |
| queueing variance | bursty arrivals (gamma, CV^2 4), lowest stable fleet | evenly spaced, same fleet |
| the SLO's cap on batch wait | 1% of peak, dynamic, max wait uncapped | 1% of peak, dynamic |
| per-server queues | hardened+per-server-queues, dynamic, 10% of peak | hardened, dynamic, 10% |
| duplicates from retries | doc items 4+5 (BLIND), 80% of peak, batch time x3 mid-run | (hardened, same) |
| padding | hardened+fixed-batch-time, lognormal sizes, 40% of peak | (hardened: length buckets) |
| affine t(b) | 1% of peak, affine cost | 1% of peak, the plan's cost model |

Runs in parentheses are contrast runs, made only in full plans.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.analysis.capacity.sim import Point, lowest_stable_fleet
from workloads.model import Fault, FaultKind, Sizes

__all__ = ["LOW_LOAD", "MID_LOAD", "loss_points", "measure_losses"]

LOW_LOAD = 0.01   # night: a shared queue fills B=32 in 0.32 s at 100 QPS, past any SLO-derived wait
MID_LOAD = 0.1    # where ten private queues each see a tenth of the traffic
SLOW_LOAD = 0.8   # the slowdown scenario's share of peak
SLOW_FACTOR = 3.0  # batch time x3: the queue outgrows the client timeout within the slowdown
BLIND = "hardened+blind-retries+no-admission-control"
DYNAMIC = {"batching": "dynamic"}  # isolate batch formation from the hardened batcher's choice
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
    low, mid = qps * LOW_LOAD, qps * MID_LOAD
    pts = [pl.point(f"load{f:g}", gpus, qps * f) for f in sorted(set(loads) | {LOW_LOAD, MID_LOAD})
           if f != 1.0]
    pts.append(pl.point("cap-low", gpus, low, extra=DYNAMIC))
    # Uncapped: wait long enough for B requests to arrive (twice their mean time), whatever
    # the SLO says; admission control would shed every request predicted to wait that long,
    # and the client's deadline would drop it, so both make room.
    fill_s = 2 * b / low
    pts.append(pl.point("nocap", gpus, low, extra={
        **DYNAMIC, "max_wait_s": fill_s, "admission": False, "client_timeout_s": max(1.0, fill_s + 4 * t_b)}))
    pts.append(pl.point("shared-mid", gpus, mid, extra=DYNAMIC))
    pts.append(pl.point("per-server-mid", gpus, mid, target="hardened+per-server-queues", extra=DYNAMIC))
    # The slowdown (the middle half) must outlast the clients' 1 s timeout: at x3 the
    # queue's wait grows by about 1.3 s per second of it.
    d_slow = max(pl.budget.duration_s(qps * SLOW_LOAD), pl.budget.slow_min_s)
    slow = dict(faults=(Fault(kind=FaultKind.SLOWDOWN, at_s=d_slow / 4, duration_s=d_slow / 2,
                              factor=SLOW_FACTOR),), duration_s=d_slow)
    # The doc's items 4 and 5 together: without admission control the queue grows, clients
    # time out and retry, and the GPUs compute the abandoned originals and the retries.
    pts.append(pl.point("blind-slow", gpus, qps * SLOW_LOAD, target=BLIND, **slow))
    # Padding's share settles within a few hundred batches: the shortest run will do.
    pad = dict(sizes=VARIABLE_SIZES, duration_s=pl.budget.min_s)
    pts.append(pl.point("pad-off", gpus, qps * PAD_LOAD, target="hardened+fixed-batch-time", **pad))
    if pl.knobs["cost_model"] == "affine":
        other = {"cost_model": "constant"}
    else:
        other = {"cost_model": "affine", "cost_t0_s": 0.2 * t_b, "cost_per_item_s": 0.8 * t_b / b}
    pts.append(pl.point("cost-low", gpus, low, extra=other))
    if pl.budget.extras:
        pts.append(pl.point("shared-peak", gpus, qps, extra=DYNAMIC))
        pts.append(pl.point("per-server-peak", gpus, qps, target="hardened+per-server-queues", extra=DYNAMIC))
        pts.append(pl.point("hardened-slow", gpus, qps * SLOW_LOAD, **slow))
        pts.append(pl.point("pad-on", gpus, qps * PAD_LOAD, **pad))
    return pts


# Why batches are partial at low load, by the hardened target's batching mode.
BATCHING_AT_LOW_LOAD = {
    "adaptive": " (with most GPUs free the adaptive batcher sends whatever is queued: latency first)",
    "dynamic": " (the max-wait timer fires before B requests arrive)",
    "greedy": " (a free GPU takes whatever is queued)",
    "rate": " (at a low measured rate the fleet can afford small batches: latency first)",
}


def _fill(x: float) -> str:
    return f"{x:.2%}" if 0.99 <= x < 1 else f"{x:.0%}"


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
    peak, low = R[f"x1:{g}"], R[f"load{LOW_LOAD:g}"]
    rows: list[dict[str, Any]] = []

    def row(source: str, measured: float | None, unit: str, explanation: str, **detail: Any) -> None:
        rows.append({"source": source, "measured": measured, "unit": unit,
                     "explanation": explanation, "detail": detail})

    why_low = BATCHING_AT_LOW_LOAD.get(doc.get("batching", ""), "")
    row("partial batches", 1 - peak["batch_fill"], "share of batch slots empty at peak",
        f"a shared queue at {qps:,.0f} QPS fills B={b} in {1000 * b / qps:.1f} ms, so batches leave "
        f"{_fill(peak['batch_fill'])} full at peak; at {LOW_LOAD:.0%} of peak {_fill(low['batch_fill'])}"
        f"{why_low}: a GPU-second then serves that share of what the formula assumes",
        fill_peak=peak["batch_fill"], fill_low=low["batch_fill"])
    row("GPUs idle while batches form", peak["idle_forming_frac"], "share of GPU time at peak",
        f"sampled every 1 ms on {g} GPUs: a free GPU beside queued requests that the batcher "
        f"holds back to fill a batch (up to the {doc['max_wait_s'] * 1000:.0f} ms max wait); at "
        f"{LOW_LOAD:.0%} of peak it is {low['idle_forming_frac']:.1%}",
        idle_peak=peak["idle_forming_frac"], idle_low=low["idle_forming_frac"])
    pois, uni, bursty = R[f"x1:{g_stable}"], R["uniform"], R["bursty"]
    delta = None if bursty["p99_s"] is None or uni["p99_s"] is None else bursty["p99_s"] - uni["p99_s"]
    row("queueing variance", delta,
        f"s of p99, bursty vs even arrivals, {g_stable} GPUs ({doc['theoretical_gpus'] / g_stable:.0%} busy)",
        f"p99 with evenly spaced arrivals {_ms(uni['p99_s'])}, Poisson {_ms(pois['p99_s'])}, bursty "
        f"(gamma gaps, squared CV 4) {_ms(bursty['p99_s'])}. A batch of {b} averages out Poisson "
        "noise; bursts that outlast a batch do not, and only spare GPUs absorb them: the "
        "headroom fleet",
        p99_uniform_s=uni["p99_s"], p99_poisson_s=pois["p99_s"], p99_bursty_s=bursty["p99_s"])
    cap, nocap = R["cap-low"], R["nocap"]
    row("the SLO's cap on batch wait", _ratio_loss(cap["batch_fill"], nocap["batch_fill"]),
        f"share of per-GPU throughput at {LOW_LOAD:.0%} of peak",
        f"with dynamic batching the SLO leaves a {doc['max_wait_s'] * 1000:.0f} ms max wait, so at "
        f"{qps * LOW_LOAD:,.0f} QPS batches leave {_fill(cap['batch_fill'])} full; waiting for full batches "
        f"fills {_fill(nocap['batch_fill'])} but p99 becomes {_ms(nocap['p99_s'])} against the "
        f"{slo * 1000:.0f} ms target",
        fill_capped=cap["batch_fill"], fill_uncapped=nocap["batch_fill"], p99_capped_s=cap["p99_s"],
        p99_uncapped_s=nocap["p99_s"])
    ps, shared = R["per-server-mid"], R["shared-mid"]
    peak_txt = ""
    if extras and "per-server-peak" in R:
        pp, sp = R["per-server-peak"], R["shared-peak"]
        peak_txt = (f"; at peak p99 {_ms(pp['p99_s'])} against {_ms(sp['p99_s'])} shared, GPUs idle "
                    f"while batches form {pp['idle_forming_frac']:.1%} against {sp['idle_forming_frac']:.1%}")
    row("fragmentation across per-server queues", _ratio_loss(ps["batch_fill"], shared["batch_fill"]),
        f"share of per-GPU throughput at {MID_LOAD:.0%} of peak",
        f"dynamic batching either way: ten private queues each see a tenth of {qps * MID_LOAD:,.0f} QPS, "
        f"so batches leave {_fill(ps['batch_fill'])} full against {_fill(shared['batch_fill'])} from one "
        f"shared queue{peak_txt}",
        fill_per_server=ps["batch_fill"], fill_shared=shared["batch_fill"])
    bs = R["blind-slow"]
    hs_txt = ""
    if extras and "hardened-slow" in R:
        hs = R["hardened-slow"]
        dup = _share(hs["wasted_s"]["duplicate"], hs["busy_gpu_s"]) or 0.0
        hs_txt = f"; with request IDs, dedupe and backoff: {dup:.1%}, amplification {hs['amplification']:.2f}"
    row("duplicates from retries", _share(bs["wasted_s"]["duplicate"], bs["busy_gpu_s"]),
        "share of GPU time computing duplicates",
        f"batch time x{SLOW_FACTOR:g} for half of a run at {SLOW_LOAD:.0%} of peak; with no admission "
        f"control the queue outgrows the client timeout, blind retries (no IDs, no backoff) send "
        f"{bs['amplification']:.2f} attempts per request, and a further "
        f"{_share(bs['wasted_s']['abandoned'], bs['busy_gpu_s']) or 0:.0%} of GPU time serves "
        f"clients that already gave up{hs_txt}",
        amplification=bs["amplification"], duplicate_gpu_s=bs["wasted_s"]["duplicate"],
        abandoned_gpu_s=bs["wasted_s"]["abandoned"])
    po = R["pad-off"]
    on_txt = ""
    if extras and "pad-on" in R:
        on = R["pad-on"]
        on_txt = f"; length buckets cut it to {_share(on['wasted_s']['padding'], on['busy_gpu_s']) or 0.0:.1%}"
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
