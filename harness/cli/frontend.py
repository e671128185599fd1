"""`harness profile frontend`: the live front end's time per request, for the sim's front-end knobs.

Calls ``harness.live.frontend_profile.profile_frontend`` and prints each step, the figures and
the sim knobs that model the profiled host.
"""

from __future__ import annotations

from harness.cli.common import err, fail, out


def profile_frontend_cmd(target: str = "hardened", profiles: int = 1, scale: float | None = None) -> None:
    """Profile `harness serve TARGET`'s event loop (`profiles` fresh hosts, their median) and print what
    the sim needs. Without `scale`, the default fleet unpadded (`--pad-to-s 0`, the front end the
    bottleneck); with it, the host a live run at that scale starts, batches padded as that run pads them."""
    from harness.live.frontend_profile import profile_frontend
    from harness.live.scaling import shrink
    from targets.spec import resolve_target

    try:
        if scale is None:  # the default fleet, unpadded: the front end is the bottleneck
            c = profile_frontend(target, profiles=profiles)
        else:  # the host a live run at `scale` starts, padded as it pads
            c = profile_frontend(target, profiles=profiles, pad_to_s=None, scale=scale)
        design = resolve_target(target, {})
        live_cfg, _ = shrink(design, scale)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc), code=1)
    if len(c.profiles_s) > 1:
        each = ", ".join(f"{x * 1e6:,.0f}" for x in c.profiles_s)
        out.print(f"{len(c.profiles_s)} profiles, the loop's us per request: {each}; the median's steps:",
                  highlight=False, soft_wrap=True)
    refusing = {id(c.shed_step): "handler refusing", id(c.proxy_shed_step): "proxy refusing"}
    for s in c.steps + [x for x in (c.shed_step, c.proxy_shed_step) if x is not None]:
        what = refusing.get(id(s), "serving")
        out.print(f"  {what} {s.rate_rps:,.0f} req/s: loop {s.loop_cpu_s * 1e6:,.0f} CPU-us + "
                  f"{s.loop_wait_s * 1e6:,.0f} us waiting for a core per request, busy {s.busy:.0%}; GPU threads "
                  f"{s.workers_cpu_s * 1e6:,.0f} CPU-us, driver {s.driver_cpu_s * 1e6:,.0f} CPU-us; "
                  f"load {s.load_1m:.1f}", highlight=False, soft_wrap=True)
    knobs = " ".join(f"--set {k}={v}" for k, v in c.sim_knobs(live_cfg).items())
    median = " (median)" if len(c.profiles_s) > 1 else ""
    out.print(f"front end of {target} (proxy + API servers on one event loop): {c.cost_s * 1e6:,.0f} us of the "
              f"loop per request at the busiest step{median} ({c.cpu_s * 1e6:,.0f} us of it CPU, the rest waiting "
              "for a core)"
              + (f", {c.shed_cost_s * 1e6:,.0f} us per refusal" if c.shed_cost_s is not None else "")
              + (f" ({c.proxy_shed_cost_s * 1e6:,.0f} us when the proxy refuses)"
                 if c.proxy_shed_cost_s is not None else "")
              + f"; the loop is busy all the time at {c.saturation_rps:,.0f} req/s\n"
              f"model it in sim:\n  harness sweep {target} {knobs}", highlight=False, soft_wrap=True)
    if not all(s.valid for s in c.steps):
        err.print("[bold yellow]warning:[/] a measuring run was invalid (driver behind on a busy machine): "
                  "the time per request stands, its latency does not", highlight=False, soft_wrap=True)
