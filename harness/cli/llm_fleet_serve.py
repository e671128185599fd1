"""`harness serve llm-fleet:router=...,replicas=N`: a live fleet of tiny-decoder replicas behind a router.

The replicas are `serve llm-continuous` processes with prefix caching on; the front is
the project's router (any sim router name) or a router that ships: sglang-router (`router=sglang:POLICY`)
or vllm-router (`router=vllm:POLICY`),
all on 127.0.0.1 (`harness.live.llm_fleet_serve`). `--set` engine knobs go to every
replica; `--port` is the front's. Runs until Ctrl-C, then prints the fleet's prefix
figures and the router's own cost. No arithmetic lives here.
"""

from __future__ import annotations

from harness.cli.common import fail, out

__all__ = ["serve_fleet_cmd"]

_LOOPBACK = ("127.0.0.1", "localhost")


def serve_fleet_cmd(target: str, port: int, host: str, expose: bool, token: str | None, set_: list[str],
                    unused: list[str]) -> None:
    import asyncio

    from harness.cli.common import until_stopped
    from harness.live.driver_loop import new_loop
    from harness.live.llm_fleet_serve import parse_live_fleet, start_fleet

    if unused:
        fail(f"{', '.join(unused)}: not used by an LLM fleet (serve llm-fleet:... takes --port, --token and --set)")
    if expose or host not in _LOOPBACK:
        fail(f"--host {host}: a live LLM fleet binds 127.0.0.1 only (its replicas and router are loopback processes)")
    for pair in set_:
        if "=" not in pair or pair.startswith("="):
            fail(f"--set '{pair}' is not KEY=VALUE")
    spec = target + ("," if ":" in target else ":") + ",".join(set_) if set_ else target
    try:
        live = parse_live_fleet(spec)
    except ValueError as exc:
        fail(str(exc))

    async def main() -> None:
        try:
            fleet = await start_fleet(live, port, token=token or None)
        except (OSError, RuntimeError) as exc:
            fail(str(exc), code=1)
        front = (f"{live.external}-router --policy {live.external_policy}" if live.external
                 else f"the project's router ({live.fleet.router})")
        out.print(f"serving {target} at {fleet.url}\n"
                  f"  {live.fleet.replicas} replicas of llm-continuous (prefix caching "
                  f"{'on' if live.fleet.engine.prefix_caching else 'off'}): "
                  f"{', '.join(fleet.replica_urls)}\n  front: {front}; GET /health"
                  f"{', /router_stats' if not live.external else ''}; each replica's /get_server_info has "
                  "its prefix figures; Ctrl-C stops", highlight=False, soft_wrap=True)
        try:
            await until_stopped()
            figures = await fleet.figures()
            rate = figures["hit_rate"]
            out.print(f"prefix cache: hit rate {'-' if rate is None else f'{rate:.1%}'} of "
                      f"{figures['prompt_tokens']} prompt tokens, {figures['hit_tokens']} saved, "
                      f"{figures['evictions']} evictions; requests per replica {figures['lookups']}",
                      highlight=False)
            cost = figures.get("router_cost")
            if cost:
                out.print(f"router: {cost['requests']} requests, route p50 {cost['route_us_p50']} us, "
                          f"CPU {cost['cpu_us_per_request']} us per request", highlight=False)
        finally:
            await fleet.close()
        out.print("stopped", highlight=False)

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
