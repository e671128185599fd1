"""The live front end: what puts a `ServingTarget` on the network (aiohttp, sockets, the wall clock).

Entry points:

- `api_servers.ApiServers`: N API servers (`server.create_app`, aiohttp) on one loop, each
  with its overload guards (`overload`), metrics (`metrics`) and hardened HTTP edge (`edge`);
  `parse.parse_predict` reads a /predict body.
- `l4proxy.L4Proxy`: the doc's layer-4 round-robin balancer, for real, with its
  connection policy (`conn_table`), canned refusals (`refusal`) and limits
  (`limits.EdgeLimits`); `python -m targets.http.l4proxy_cli` runs it alone.
- `stack.start_stack`: all of it with a modeled GPU, for security tests and abuse benchmarks.

`harness.live.host` puts it in front of torch workers (`targets.gpu`). The clock-free core of
`targets` never imports this package, nor aiohttp (import-linter's contracts in pyproject.toml).
This `__init__` imports nothing, so `limits` comes without aiohttp.
"""
