"""The layer-4 proxy (targets.http.l4proxy) run alone: `python -m targets.http.l4proxy_cli --listen
127.0.0.1:8000 --backend 127.0.0.1:9001 --backend 127.0.0.1:9002`; Ctrl-C or SIGTERM stops
it and prints its connection counts."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from targets.http.l4proxy import L4Proxy


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _serve(listen: tuple[str, int], backends: list[tuple[str, int]], expose: bool) -> None:
    proxy = L4Proxy(backends, *listen, expose=expose)
    port = await proxy.start()
    print(f"l4proxy on {listen[0]}:{port} -> {', '.join(f'{h}:{p}' for h, p in backends)}", flush=True)
    if proxy.exposed:
        print(f"EXPOSED: {listen[0]}:{port} accepts connections from beyond this machine", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await proxy.stop()
    s = proxy.stats
    print(f"connections {s.accepted}, per backend {s.per_backend}, failed {s.failed}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Layer-4 round-robin TCP proxy.")
    parser.add_argument("--listen", type=_address, default=("127.0.0.1", 8000))
    parser.add_argument("--backend", type=_address, action="append", required=True)
    parser.add_argument("--expose", action="store_true", help="allow listening beyond loopback")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.listen, args.backend, args.expose))
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
