"""`harness profile frontend`: the live front end's CPU per request, for the sim's `frontend_cost_s`.

Calls ``harness.live.frontend_profile.profile_frontend`` and prints the figure and how to use it.
"""

from __future__ import annotations

from harness.cli.common import err, fail, out


def profile_frontend_cmd(target: str = "hardened", rate_rps: float = 200.0, duration_s: float = 6.0) -> None:
    """Measure `harness serve TARGET --pad-to-s 0`'s event-loop CPU per request and print it."""
    from harness.live.frontend_profile import profile_frontend

    try:
        c = profile_frontend(target, rate_rps, duration_s)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc), code=1)
    out.print(f"front end of {target} (proxy + API servers on one event loop), {c.requests:,} requests at "
              f"{c.rate_rps:g} req/s: {c.cost_s * 1e6:,.0f} CPU-us per request ({c.cpu_s:.2f} CPU-s); "
              f"one loop saturates near {1 / c.cost_s:,.0f} req/s if it has a core to itself\n"
              f"use it in sim:\n  harness sweep {target} --set frontend_cost_s={c.cost_s:.6f}", highlight=False,
              soft_wrap=True)
    if not c.valid:
        err.print("[bold yellow]warning:[/] the measuring run was invalid (driver behind on a busy machine): "
                  "the CPU figure stands, its latency does not", highlight=False, soft_wrap=True)
