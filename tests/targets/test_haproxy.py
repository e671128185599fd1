"""HAProxy as the balancer: the policy in its terms, the file it reads, and the process in front of
real API servers (loopback), its stats read back and nothing left running after it."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
from pathlib import Path

import aiohttp
import pytest

from targets.http.haproxy import Balancer, HaproxyPolicy, haproxy_config, refusal_503
from targets.http.haproxy_proc import HaproxyBalancer, haproxy_path, parse_stat_csv, stat_figures
from targets.http.limits import EdgeLimits
from targets.spec import resolve_target

HAPROXY = haproxy_path()
needs_haproxy = pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (Debian's `haproxy` "
                                   "package; .ci/run installs it)")


def test_naive_is_layer_4_round_robin_with_no_queue() -> None:
    p = HaproxyPolicy.for_target(resolve_target("naive"))
    assert (p.mode, p.balance, p.server_maxconn, p.queue_timeout_s) == ("tcp", "roundrobin", None, None)
    cfg = haproxy_config(p, ("127.0.0.1", 9000), [("127.0.0.1", 9001), ("127.0.0.1", 9002)], "/tmp/s.sock")
    assert "    mode tcp\n" in cfg and "    balance roundrobin\n" in cfg
    assert "server api0 127.0.0.1:9001\n" in cfg and "server api1 127.0.0.1:9002\n" in cfg
    assert "timeout queue" not in cfg and "errorfile" not in cfg and "http-request" not in cfg


def test_hardened_caps_each_server_and_answers_503_after_the_guards_budget() -> None:
    cfg = resolve_target("hardened", {"api_servers": 2})
    p = HaproxyPolicy.for_target(cfg)
    ceiling = cfg.fleet_gpus * cfg.batch_size / cfg.batch_time_s
    assert (p.mode, p.balance) == ("http", "leastconn")
    assert p.server_maxconn == math.ceil(ceiling * cfg.slo_s / 2)  # the ceiling held for one SLO, per server
    assert p.queue_timeout_s == pytest.approx(cfg.frontend_proxy_share * cfg.slo_s)
    text = haproxy_config(p, ("127.0.0.1", 9000), [("127.0.0.1", 9001)], "/tmp/s.sock", "/tmp/503.http")
    assert f"server api0 127.0.0.1:9001 maxconn {p.server_maxconn}\n" in text
    assert f"timeout queue {round(p.queue_timeout_s * 1000)}ms\n" in text
    assert "errorfile 503 /tmp/503.http\n" in text
    assert "use_backend ops if { path /metrics } || { path /healthz }" in text  # scrapes skip the queue
    assert "timeout http-request 10000ms" in text  # EdgeLimits.header_timeout_s: 408 in http mode


def test_the_connection_caps_and_idle_timeout_are_the_edge_limits() -> None:
    limits = EdgeLimits(max_connections=100, max_connections_per_client=7, idle_timeout_s=2.5)
    text = haproxy_config(HaproxyPolicy("tcp", "roundrobin", limits), ("127.0.0.1", 1), [("127.0.0.1", 2)], "/s")
    assert "    maxconn 100\n" in text and "timeout client 2500ms" in text
    assert "reject if { sc_conn_cur(0) gt 7 }" in text


def test_the_503_is_the_proxy_refusals_body_with_retry_after() -> None:
    p = HaproxyPolicy("http", "leastconn", EdgeLimits(), server_maxconn=4, queue_timeout_s=0.03)
    head, _, body = refusal_503(p).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1" in head and b"X-Retry-After-Ms: 50" in head
    assert json.loads(body)["error"] == "overloaded"
    assert f"Content-Length: {len(body)}".encode() in head


def test_bad_policies_and_names_are_refused() -> None:
    with pytest.raises(ValueError, match="go together"):
        HaproxyPolicy("http", "leastconn", EdgeLimits(), server_maxconn=4)
    with pytest.raises(ValueError, match="needs mode http"):
        HaproxyPolicy("tcp", "roundrobin", EdgeLimits(), server_maxconn=4, queue_timeout_s=0.1)
    with pytest.raises(ValueError, match="valid are python, haproxy"):
        Balancer.parse("nginx")


def test_stat_csv_is_read_into_counters() -> None:
    text = ("# pxname,svname,qcur,qmax,scur,smax,stot,bin,bout,dcon,econ,req_tot,hrsp_5xx,qtime,\n"
            "api,FRONTEND,,,3,9,40,100,200,1,,50,7,,\n"
            "api,api0,0,2,1,4,20,,,,,,3,1,\n"
            "api,api1,0,1,1,5,21,,,,,,0,2,\n"
            "api,BACKEND,1,3,2,9,41,,,,4,,7,2,\n")
    f = stat_figures(parse_stat_csv(text))
    assert (f["connections"], f["requests"], f["responses_5xx"], f["own_5xx"]) == (40, 50, 7, 4)
    assert (f["queue_timeouts"], f["queue_max"], f["per_api_server"], f["denied_connections"]) == (4, 3, [20, 21], 1)
    with pytest.raises(ValueError):
        parse_stat_csv("hello")


@needs_haproxy
def test_haproxy_accepts_both_configurations(tmp_path: Path) -> None:
    for spec in ("naive", "hardened"):
        p = HaproxyPolicy.for_target(resolve_target(spec))
        (tmp_path / "503.http").write_bytes(refusal_503(p))
        cfg = tmp_path / f"{spec}.cfg"
        cfg.write_text(haproxy_config(p, ("127.0.0.1", 1), [("127.0.0.1", 2), ("127.0.0.1", 3)],
                                      str(tmp_path / "s.sock"), str(tmp_path / "503.http")))
        res = subprocess.run([HAPROXY, "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
        assert res.returncode == 0, res.stdout + res.stderr


async def _slow_server(delay_s: float):
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        await asyncio.sleep(delay_s)
        return web.json_response({"ok": request.path})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_haproxy
@pytest.mark.live
async def test_over_its_cap_haproxy_answers_503_and_counts_it_and_stops_clean() -> None:
    runner, port = await _slow_server(0.3)
    policy = HaproxyPolicy("http", "leastconn", EdgeLimits(), server_maxconn=1, queue_timeout_s=0.05)
    lb = HaproxyBalancer(policy, [("127.0.0.1", port)])
    front = lb.start()
    pid = lb.pid
    try:
        async with aiohttp.ClientSession() as s:
            async def get(path: str) -> tuple[int, str | None]:
                async with s.get(f"http://127.0.0.1:{front}{path}") as r:
                    await r.read()
                    return r.status, r.headers.get("Retry-After")

            answers = await asyncio.gather(*(get("/predict") for _ in range(4)), get("/metrics"))
        codes = sorted(code for code, _ in answers[:4])
        assert codes == [200, 503, 503, 503]  # one in flight, the rest queued past 50 ms
        assert all(ra == "1" for code, ra in answers[:4] if code == 503)
        assert answers[4][0] == 200  # /metrics has a backend of its own: never queued
        stats = await asyncio.to_thread(lb.stats)
        assert stats["kind"] == "haproxy" and stats["own_5xx"] == 3 and stats["queue_timeouts"] == 3
        assert stats["requests"] == 5 and stats["policy"]["server_maxconn"] == 1
    finally:
        lb.stop()
        await runner.cleanup()
    assert pid is not None and _gone(pid) and lb.dir is None


@needs_haproxy
@pytest.mark.live
def test_a_taken_port_is_a_clear_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        lb = HaproxyBalancer(HaproxyPolicy("tcp", "roundrobin", EdgeLimits()), [("127.0.0.1", 1)], port=taken)
        with pytest.raises(RuntimeError, match="haproxy did not start"):
            lb.start()
    assert lb.proc is None and lb.dir is None


def test_binding_beyond_loopback_needs_expose() -> None:
    with pytest.raises(ValueError, match="--expose"):
        HaproxyBalancer(HaproxyPolicy("tcp", "roundrobin", EdgeLimits()), [("127.0.0.1", 1)], host="0.0.0.0")
