"""Routers that ship, run before a live fleet's replicas: sglang-router and vllm-router.

`EXTERNAL_ROUTERS` names each (`router=NAME:POLICY` in a live fleet spec,
`harness.live.llm_fleet_serve`): its Python package, the project's extra that installs it,
the policies it has that serve these replicas, and its word for "warnings and errors only".
`start_external_front(name, replica_urls, policy)` starts one as its own process on
127.0.0.1 (its metrics listener too) and returns once it has routed one completion;
`external_available(name)` says whether it is installed. `until_ok` and `free_port` are
the loopback helpers the fleet's start shares.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from harness.live.llm_serve import MODEL_NAME

__all__ = ["EXTERNAL_ROUTERS", "START_TIMEOUT_S", "ExternalRouter", "external_available", "free_port",
           "start_external_front", "until_ok"]

START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ExternalRouter:
    """A router that ships, run as its own process (`python -m MODULE.launch_router`) before the replicas."""
    name: str                     # the router= prefix
    module: str                   # its Python package
    extra: str                    # the project's extra that installs it
    policies: tuple[str, ...]     # those that serve these replicas (no KV events, no PD split)
    log_level: str                # its word for "warnings and errors only"

    @property
    def install(self) -> str:
        return f"pip install 'inference-harness[{self.extra}]'"


# vllm-router (forked from sglang-router) also has kv_aware, which scores by the KV events a vLLM worker
# publishes (the tiny decoder publishes none), consistent_hash and sticky_least_loaded (keyed by a session the
# chat day does not send: probed, the turns of one head scatter) and PD-disaggregated modes: left out.
EXTERNAL_ROUTERS = {
    "sglang": ExternalRouter("sglang", "sglang_router", "sglang",
                             ("round_robin", "cache_aware", "power_of_two", "random"), "warn"),
    "vllm": ExternalRouter("vllm", "vllm_router", "vllm",
                           ("round_robin", "cache_aware", "power_of_two", "random"), "warning"),
}


def external_available(name: str) -> bool:
    """That shipped router is installed (its launcher module can be found; nothing is imported)."""
    import importlib.util

    return importlib.util.find_spec(EXTERNAL_ROUTERS[name].module) is not None


async def until_ok(http: aiohttp.ClientSession, method: str, url: str, deadline: float, **kw: Any) -> None:
    """Ask `method url` every 0.2 s until it answers 200 (its body read); RuntimeError with the last
    answer or error when `deadline` (monotonic) passes first."""
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            async with http.request(method, url, timeout=aiohttp.ClientTimeout(total=5), **kw) as resp:
                if resp.status == 200:
                    await resp.read()
                    return
                last = f"HTTP {resp.status}: {(await resp.text())[:120]}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{url} not ready in time ({last})")


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound and released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_external_front(name: str, replica_urls: list[str], policy: str, port: int = 0,
                               token: str | None = None, http: aiohttp.ClientSession | None = None,
                               deadline: float | None = None) -> tuple[subprocess.Popen, str]:
    """The shipped router `name` (an EXTERNAL_ROUTERS key) with `policy` on 127.0.0.1:`port` in front of
    running replicas: its process and its /v1/completions, once it has routed one completion (its worker
    health checks have passed; one lookup on a replica). The caller stops the process (SIGTERM to its
    group). RuntimeError when it is not installed or not ready by `deadline`."""
    ext = EXTERNAL_ROUTERS[name]
    if not external_available(name):
        raise RuntimeError(f"router={name}:... needs {ext.module.replace('_', '-')}: {ext.install}")
    if policy not in ext.policies:
        raise ValueError(f"{name} policy '{policy}' is not one of {', '.join(ext.policies)}")
    deadline = deadline or time.monotonic() + START_TIMEOUT_S
    port = port or free_port()
    # Its metrics listener binds 0.0.0.0:29000 (sglang) or 127.0.0.1:29000 (vllm) unless told: loopback, and
    # a free port, so a second router on the machine (another fleet, a user's own) does not stop this one
    # from starting. It logs warnings and errors only (its INFO lines are two a request, kept in a file
    # nobody reads).
    cmd = [sys.executable, "-m", f"{ext.module}.launch_router", "--host", "127.0.0.1", "--port", str(port),
           "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()), "--log-level", ext.log_level,
           "--policy", policy, "--worker-urls", *replica_urls]
    log = tempfile.TemporaryFile()   # its own words, for the error if it never gets ready
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1/completions"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with aiohttp.ClientSession() if http is None else _borrowed(http) as session:
            await until_ok(session, "POST", url, deadline, headers=headers,
                         json={"model": MODEL_NAME, "prompt": "ready?", "max_tokens": 1})
    except BaseException as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if isinstance(exc, RuntimeError):
            log.seek(0)
            said = [line for line in log.read().decode(errors="replace").splitlines() if line.strip()]
            raise RuntimeError(f"{ext.module.replace('_', '-')} did not get ready: {exc}"
                               + (f"; it said: {said[-1][-300:]}" if said else "")) from None
        raise
    finally:
        log.close()   # the router keeps its own handle; what it writes once ready is not read
    return proc, url


class _borrowed:
    """A session used as `async with` without closing it."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http

    async def __aenter__(self) -> aiohttp.ClientSession:
        return self.http

    async def __aexit__(self, *exc: object) -> None:
        return None
