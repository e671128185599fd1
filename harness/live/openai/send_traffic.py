"""A run's traffic sent to a URL: `drive_traffic` plans it (`traffic.sessions_plan`) and drives it in one
process (`sessions.drive_sessions`) or over `traffic.driver_procs` processes (`procs.drive_over_procs`),
scraping the server's metrics around it when the target names them (`run.scraped`).

Its own module so that `procs` (which plans each process's share with `traffic`) and `traffic` import
neither each other nor this.
"""

from __future__ import annotations

import asyncio

from harness.live.driver_loop import new_loop
from harness.live.openai.drive import Driven
from harness.live.openai.procs import drive_over_procs
from harness.live.openai.run import Prepared, scraped
from harness.live.openai.sessions import SessionsDriven, drive_sessions
from harness.live.openai.target import UrlTarget
from harness.live.openai.traffic import Traffic, sessions_plan

__all__ = ["drive_traffic"]


def drive_traffic(target: UrlTarget, prepared: Prepared, traffic: Traffic, mix: str, duration_s: float, seed: int = 0,
                  timeout_s: float = 60.0) -> SessionsDriven:
    """The traffic sent to `target` for `duration_s` s, in an event loop of its own (the live driver's);
    over `traffic.driver_procs` processes (`procs.drive_over_procs`) when more than one, or as many Ray
    actors with `traffic.driver_executor` "ray" (`ray_procs.drive_over_ray`)."""
    procs = traffic.driver_procs

    async def main() -> SessionsDriven:
        if procs > 1 and traffic.driver_executor == "ray":
            from harness.live.openai.ray_procs import drive_over_ray   # Ray: an optional extra

            drive = drive_over_ray(target, prepared, traffic, mix, duration_s, seed, timeout_s, procs)
        elif procs > 1:
            drive = drive_over_procs(target, prepared, traffic, mix, duration_s, seed, timeout_s, procs)
        else:
            plan = sessions_plan(target, prepared, traffic, mix, duration_s, seed)
            drive = drive_sessions(target.url, target.api, plan.conversations, plan.load, plan.request_of, duration_s,
                                   plan.starts_s, target.headers(), timeout_s, plan.opening, plan.count)
        if target.server_metrics_url is None:
            return await drive
        done: list[SessionsDriven] = []

        async def driven() -> Driven:  # the scrape wraps the drive (run.scraped) and sets its `server`
            done.append(await drive)
            return done[0].driven
        await scraped(target.server_metrics_url, driven())
        return done[0]

    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(main())
