"""A front end out of CPU: the sim's predicted saturation against live, and live at twice it.

Usage (from the repository root; a quiet machine gives the figures that mean something)::

    python benchmarks/frontend_overload.py            # about 5-7 minutes on 2 cores
    python benchmarks/frontend_overload.py --quick    # shorter steps, no handler-guard run
    python benchmarks/frontend_overload.py --rate 1800   # only the side-by-side runs at 1,800 req/s

With padding off (`harness serve hardened --pad-to-s 0`) a live host's GPUs
are fast and its one event loop (proxy, API servers, policies) is the
bottleneck. The script:

1. profiles that loop (`harness profile frontend`: its occupancy per request,
   CPU plus the wait for a core, near saturation; the cost of a refusal; the
   GPU batch time), harness.live.frontend_profile;
2. predicts the knee: `harness sweep` in sim on the live host's fleet with the
   profiled front-end knobs (FrontendCost.sim_knobs), and 1 / cost;
3. measures the knee the same way: `harness sweep TARGET --mode live
   --pad-to-s 0`;
4. runs live at twice the live knee (the predicted one if the live sweep found
   none; --rate R skips steps 1-3 and runs at R) for --duration s, one after
   another in one session: the proxy's guard (frontend_proxy_share =
   --proxy-share: the L4 proxy answers 503 itself), the handlers' age guard
   (frontend_age_share = --age-share; not with --quick) and no guard: shed,
   timed out, admitted p99 (an attempt answered OK), p99 of requests answered
   OK, goodput, and the driver's own figures (its send lag p99, the wait for a
   connection), so a client timeout the driver caused (a run marked invalid)
   is told apart from the target's.

Every figure is printed with the machine's 1-minute load average beside it:
other work on the machine stretches the loop's wait for a core, and the sim
predicts the machine the profile saw. Pass criteria (issue 13): sim knee within
20% of live; at 2x, shed > 0, admitted p99 within the SLO, no client timeouts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.sweep import run_sweep  # noqa: E402
from harness.analysis.traffic import traffic  # noqa: E402
from harness.live.frontend_profile import profile_frontend  # noqa: E402
from harness.live.plan import plan_live  # noqa: E402


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


_GUARDS_OFF = {"frontend_age_share": None, "frontend_proxy_share": None, "frontend_lag_limit_s": None}


def _find(doc: object, key: str) -> object:
    """The first value under ``key`` anywhere in a nested dict (the live figures' layout varies by driver)."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = _find(v, key)
            if found is not None:
                return found
    return None


def live_at(target: str, rate_rps: float, duration_s: float, overrides: dict) -> dict:
    """One live run of ``target`` (padding off, the default live fleet) at a constant ``rate_rps``,
    every front-end guard off but those ``overrides`` turns on."""
    plan = plan_live(target, "steady", overrides={**_GUARDS_OFF, **overrides}, pad_to_s=0, warmup_s=2.0)
    s = replace(plan, workload=traffic(rate_rps, duration_s, name="overload")).run().summary
    r = s.requests
    lag = _find(s.live, "send_lag_s") or {}
    return {"offered": s.offered_rps, "unique": r.unique, "shed": r.shed, "timed_out": r.timed_out,
            "admitted_p99": s.attempt_latency_ok_s.p99, "ok_p99": s.latency_ok_s.p99, "goodput": s.goodput_rps,
            "slo": s.slo_s, "valid": s.valid, "why": s.invalid_reasons[:1], "load": load(),
            "send_lag_p99": lag.get("p99") if isinstance(lag, dict) else None,
            "waited": _find(s.live, "waited_for_connection"), "conns": _find(s.live, "max_open_connections")}


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:,.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="hardened")
    ap.add_argument("--quick", action="store_true", help="shorter steps; skip the guard-off run")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of the runs at twice the knee")
    ap.add_argument("--age-share", type=float, default=0.25, help="the handlers' guard's limit, a share of the SLO")
    ap.add_argument("--proxy-share", type=float, default=0.05, help="the proxy's guard's limit, a share of the SLO")
    ap.add_argument("--rate", type=float, default=None, help="skip the profile and sweeps; compare the guards here")
    args = ap.parse_args()
    t = args.target
    started = time.perf_counter()
    print(f"front-end overload of {t}, padding off; {load()} at the start", flush=True)
    if args.rate:
        rows: list[tuple[str, str, str]] = []
        compare_guards(t, args.rate, args, rows)
        for name, value, note in rows:
            print(f"{name:<46}{value:>14}   {note}")
        print(f"\n{time.perf_counter() - started:.0f} s in all; {load()} at the end")
        return

    cost = profile_frontend(t, duration_s=3.0 if args.quick else 5.0)
    refusing = {id(cost.shed_step): "handler refusing", id(cost.proxy_shed_step): "proxy refusing"}
    for s in cost.steps + [x for x in (cost.shed_step, cost.proxy_shed_step) if x is not None]:
        what = refusing.get(id(s), "serving")
        print(f"  profile, {what} {s.rate_rps:6,.0f} req/s: loop {s.loop_cpu_s * 1e6:5,.0f} CPU-us + "
              f"{s.loop_wait_s * 1e6:5,.0f} us wait per request (busy {s.busy:4.0%}); GPU threads "
              f"{s.workers_cpu_s * 1e6:4,.0f} CPU-us, driver {s.driver_cpu_s * 1e6:4,.0f} CPU-us; load {s.load_1m:.1f}",
              flush=True)
    from harness.live.scaling import shrink
    from targets.spec import resolve_target

    design = resolve_target(t, {})
    live_cfg, _ = shrink(design)
    knobs = cost.sim_knobs(live_cfg)
    print(f"  sim knobs: {knobs}", flush=True)
    sim = run_sweep(t, "sim", overrides=knobs)
    print(f"  sim sweep knee: {sim.max_rate_within_slo or 0:,.0f} req/s ({sim.wall_s:.0f} s)", flush=True)
    live = run_sweep(t, "live", pad_to_s=0, duration_s=4.0 if args.quick else None,
                     on_step=lambda s: print(f"    live step {s.rate_rps:6,.0f} req/s: {s.why}; {load()}", flush=True))
    live_knee = live.max_rate_within_slo
    print(f"  live sweep knee: {live_knee or 0:,.0f} req/s ({live.wall_s:.0f} s); {load()}"
          + (f"; {live.notes[-1]}" if live.notes else ""), flush=True)

    base = live_knee or sim.max_rate_within_slo or cost.saturation_rps
    rows = [
        ("loop time per request (busiest step)", f"{cost.cost_s * 1e6:,.0f} us", "CPU + wait for a core"),
        ("loop CPU per request (busiest step)", f"{cost.cpu_s * 1e6:,.0f} us", "what the CPU-only model used"),
        ("loop time per refusal (profile)", "-" if cost.shed_cost_s is None else f"{cost.shed_cost_s * 1e6:,.0f} us",
         "answered before the body is parsed"),
        ("loop time per proxy refusal (profile)",
         "-" if cost.proxy_shed_cost_s is None else f"{cost.proxy_shed_cost_s * 1e6:,.0f} us",
         "the L4 proxy's canned 503, nothing relayed"),
        ("saturation, 1 / cost", f"{cost.saturation_rps:,.0f} req/s", f"load {cost.steps[-1].load_1m:.1f}"),
        ("saturation, loop CPU alone (old model)", f"{1 / cost.cpu_s:,.0f} req/s", "1 / CPU per request"),
        ("knee, sim sweep with the profiled knobs", f"{sim.max_rate_within_slo or 0:,.0f} req/s", "predicted"),
        ("knee, live sweep (--pad-to-s 0)", f"{live_knee or 0:,.0f} req/s",
         "measured" if live_knee else "none found: " + (live.notes[-1][:60] if live.notes else "")),
    ]
    if live_knee and sim.max_rate_within_slo:
        ratio = sim.max_rate_within_slo / live_knee
        rows.append(("sim / live knee", f"{ratio:.2f}", "pass" if abs(ratio - 1) <= 0.2 else "FAIL (> 20%)"))
    compare_guards(t, 2 * base, args, rows)
    print(f"\n{'figure':<46}{'value':>14}   note")
    for name, value, note in rows:
        print(f"{name:<46}{value:>14}   {note}")
    print(f"\n{time.perf_counter() - started:.0f} s in all; {load()} at the end")


def compare_guards(target: str, rate_rps: float, args: argparse.Namespace, rows: list) -> None:
    """Live at ``rate_rps`` with each guard and with none, one after another; their rows onto ``rows``."""
    guards = {"proxy guard": {"frontend_proxy_share": args.proxy_share}}
    if not args.quick:
        guards["handler guard"] = {"frontend_age_share": args.age_share}
    guards["no guard"] = {}
    for name, knobs in guards.items():
        r = live_at(target, rate_rps, args.duration, knobs)
        print(f"  {name} at {rate_rps:,.0f} req/s: shed {r['shed']:,} of {r['unique']:,}, timed out "
              f"{r['timed_out']:,}, admitted p99 {ms(r['admitted_p99'])}, send lag p99 {ms(r['send_lag_p99'])}; "
              f"{r['load']}", flush=True)
        ok = r["shed"] > 0 and r["timed_out"] == 0 and r["admitted_p99"] is not None and r["admitted_p99"] <= r["slo"]
        lag = "-" if r["send_lag_p99"] is None else f"{r['send_lag_p99'] * 1000:.1f} ms"
        rows += [
            (f"{rate_rps:,.0f} req/s, {name}: shed", f"{r['shed']:,} of {r['unique']:,}", r["load"]),
            (f"  {name}: timed out", f"{r['timed_out']:,}", "valid" if r["valid"] else f"invalid: {r['why']}"),
            (f"  {name}: driver send lag p99", lag, f"waited for a connection {r['waited']}, "
             f"most open {r['conns']}"),
            (f"  {name}: admitted p99 / SLO", f"{ms(r['admitted_p99'])}", f"SLO {ms(r['slo'])}"),
            (f"  {name}: p99 answered OK, goodput", f"{ms(r['ok_p99'])}", f"goodput {r['goodput']:,.0f} req/s"),
            (f"  {name}: verdict", "pass" if ok else "fail", "shed > 0, no timeouts, admitted p99 <= SLO"),
        ]


if __name__ == "__main__":
    main()
