"""The LLM driver's TTFT and ITL against the truth a raw-socket client reads, on two servers.

Usage: python benchmarks/llm_truth.py [--duration 8] [--rate 8] [--concurrency 4] [--cap 4]
           [--levels 1,2,4,8,16] [--streams 16,32,64,128] [--guidellm PATH] [--only ours|mock]

Servers (each in a process of its own, on 127.0.0.1):
- ours: `tests/harness/fake_openai.py`, 8 tokens a chunk (usage on every chunk), TTFT 50 ms, ITL 10 ms;
- mock: GuideLLM's `guidellm mock-server --ttft-ms 50 --itl-ms 10` (one token a chunk), when
  `--guidellm` names its binary (install it in a venv of its own: pip install guidellm==0.8.1).
The truth is `harness.live.openai.truth` (one fresh connection per request, asyncio streams, no
aiohttp), run alone on the same load before the driver. Both send the same bodies: a JSONL data set
made here of `--requests` prompts asking for 32 tokens each.

1. open loop at `--rate` for `--duration` s (`harness run URL --dataset F --rate R`), and closed loop
   at `--concurrency` (`--concurrency N`): TTFT p50 and mean, ITL mean, ours over the truth.
2. `--knee-on ours,mock`: a server capped at `--cap` concurrent requests (ours `--max-concurrent`;
   the mock `--max-concurrent-requests`, whose 0.8.1 semaphore is let go when its handler returns the
   stream object, so it caps no streamed request: the check shows it): a concurrency sweep over `--levels`,
   its knee against CAP, each level's rate against the closed form min(N, CAP) / T, T the truth's
   E2E p50 at one user.
3. `--streams`: closed loops of that many streams, ours in one driver process and in two
   (`--driver-procs 2`) against the truth at the same count: the largest count each keeps within 5%.
Every loop is bounded: each run by its duration plus the request timeout. Prints `uptime` first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.llm import LlmSweep  # noqa: E402
from harness.analysis.llm.traffic import traffic_url_run, traffic_url_sweep  # noqa: E402
from harness.live.openai import UrlTarget  # noqa: E402
from harness.live.openai.traffic import Traffic  # noqa: E402
from harness.live.openai.run import ProbeFailed  # noqa: E402
from harness.live.openai.truth import TruthSummary, summary, truth_closed, truth_open  # noqa: E402
from harness.live.serve_child import stop_child  # noqa: E402
from harness.results.llm import LlmRun  # noqa: E402
from workloads.llm import build_llm_schedule, mix_workload  # noqa: E402

TTFT_MS, ITL_MS, OUT_TOKENS = 50, 10, 32
TIMEOUT_S = 20.0
WITHIN = 0.05


def dataset(path: Path, n: int) -> Path:
    with path.open("w") as f:
        for k in range(n):
            f.write(json.dumps({"prompt": f"question {k}: tell me about the sea and the ships on it",
                                "output_tokens": OUT_TOKENS}) + "\n")
    return path


@contextmanager
def server(cmd: list[str], url_of: Any, timeout_s: float = 60.0) -> Iterator[str]:
    """`cmd` started; yields its completions URL once `/v1/models` answers."""
    import urllib.request

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        url = url_of(proc)
        models = url.rsplit("/v1/", 1)[0] + "/v1/models"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                urllib.request.urlopen(models, timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{cmd[0]} did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        stop_child(proc)


def ours_server(args: argparse.Namespace, cap: int | None = None) -> Any:
    cmd = [sys.executable, "-m", "tests.harness.fake_openai", "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
           "--tokens-per-chunk", "8", "--continuous-usage"]
    if cap is not None:   # holds its slot until the stream's end
        cmd += ["--max-concurrent", str(cap)]

    def url_of(proc: subprocess.Popen) -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        return f"http://127.0.0.1:{int(line.split()[1])}/v1/completions"
    return server(cmd, url_of)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mock_server(args: argparse.Namespace, cap: int | None = None) -> Any:
    port = free_port()
    cmd = [args.guidellm, "mock-server", "--host", "127.0.0.1", "--port", str(port), "--ttft-ms", str(TTFT_MS),
           "--itl-ms", str(ITL_MS), "--output-tokens", str(OUT_TOKENS), "--workers", "1"]   # its cap is per worker
    if cap is not None:
        cmd += ["--max-concurrent-requests", str(cap)]
    return server(cmd, lambda _proc: f"http://127.0.0.1:{port}/v1/completions")


def bodies(target: UrlTarget, model: str, n: int) -> list[dict[str, Any]]:
    return [target.body(model, f"question {k}: tell me about the sea and the ships on it", OUT_TOKENS, "default",
                        ignore_eos=False, include_usage=True) for k in range(n)]


def model_of(url: str) -> str:
    import urllib.request

    doc = json.loads(urllib.request.urlopen(url.rsplit("/v1/", 1)[0] + "/v1/models", timeout=5).read())
    return str(doc["data"][0]["id"])


def _run(coro: Any) -> Any:
    """The raw client on uvloop where it is installed (its loop, not the driver's precise one)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def truth(url: str, args: argparse.Namespace, *, rate: float | None = None, users: int | None = None,
          duration_s: float | None = None) -> TruthSummary:
    target = UrlTarget.parse(url)
    d = duration_s or args.duration
    if rate is not None:
        starts = [float(a) for a in build_llm_schedule(mix_workload("short", rate, d), args.seed).arrival_s]
        readings = _run(truth_open(url, bodies(target, model_of(url), len(starts)), starts, TIMEOUT_S))
        return summary(readings, d)
    assert users is not None
    readings, _ = _run(truth_closed(url, bodies(target, model_of(url), args.requests), users, d, TIMEOUT_S))
    return summary(readings, d)


def ours(url: str, data: Path, args: argparse.Namespace, *, rate: float | None = None, users: int | None = None,
         procs: int = 1, duration_s: float | None = None) -> LlmRun:
    target = UrlTarget.parse(url)
    sweep = LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(rate or 1.0,),
                     duration_s=duration_s or args.duration, seed=args.seed)
    traffic = Traffic.of(str(data), None, rate, users, None, driver_procs=procs)
    return traffic_url_run(target, sweep, traffic).runs[0]


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.2f}"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def line(label: str, t: TruthSummary, run: LlmRun) -> bool:
    pairs = [("TTFT p50", run.ttft_s.p50, t.ttft_p50_s), ("TTFT mean", run.ttft_s.mean, t.ttft_mean_s),
             ("ITL mean", run.itl_s.mean, t.itl_mean_s)]
    ok = all(r is not None and abs(r - 1) <= WITHIN for r in (ratio(a, b) for _, a, b in pairs))
    cells = "  ".join(f"{name} {ms(a)} vs {ms(b)} ms ({(ratio(a, b) or 0) - 1:+.1%})" for name, a, b in pairs)
    lag = run.url.send_lag_p50_s if run.url is not None else None
    print(f"  {label}: {run.finished}/{run.requests} ours, {t.finished}/{t.requests} truth; {cells}: "
          f"{'within 5%' if ok else 'NOT within 5%'} (our send lag p50 {ms(lag)} ms)", flush=True)
    return ok


def accuracy(name: str, url: str, data: Path, args: argparse.Namespace) -> None:
    print(f"{name}: {url}", flush=True)
    line(f"open loop {args.rate:g} req/s", truth(url, args, rate=args.rate), ours(url, data, args, rate=args.rate))
    line(f"concurrency {args.concurrency}", truth(url, args, users=args.concurrency),
         ours(url, data, args, users=args.concurrency))


def knee(args: argparse.Namespace, data: Path, which: str = "mock") -> None:
    """The concurrency sweep against a server capped at `args.cap` streams: guidellm's mock
    (`--max-concurrent-requests`; 0.8.1 releases its slot when the handler returns the stream
    object, before the first token, so streamed requests are not capped: the check shows it) or
    ours (`--max-concurrent`, its slot held to the stream's end)."""
    levels = [int(x) for x in args.levels.split(",")]
    start = mock_server(args, args.cap) if which == "mock" else ours_server(args, args.cap)
    with start as url:
        print(f"{which} capped at {args.cap} concurrent requests: {url}", flush=True)
        one = truth(url, args, users=1)
        per_request_s = one.e2e_p50_s or float("nan")   # T: the truth's time a request at one user
        target = UrlTarget.parse(url)
        sweep = LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(1.0,), duration_s=args.duration,
                         seed=args.seed)
        traffic = Traffic.of(str(data), None, None, levels[0], None)
        result = traffic_url_sweep(target, sweep, traffic, levels)
        assert result.concurrency is not None
        for p in result.concurrency.points:
            form = min(p.concurrency, args.cap) / per_request_s
            print(f"  concurrency {p.concurrency}: {p.requests_per_s:.2f} req/s, closed form "
                  f"min({p.concurrency}, {args.cap}) / {per_request_s * 1000:.0f} ms = {form:.2f} "
                  f"({p.requests_per_s / form - 1:+.1%}), TTFT p50 {ms(p.ttft_p50_s)} ms", flush=True)
        got = result.concurrency.knee_concurrency
        print(f"  knee: concurrency {got} (the server's cap: {args.cap}): "
              f"{'at the cap' if got == args.cap else 'NOT at the cap'}", flush=True)


def streams(name: str, url: str, data: Path, args: argparse.Namespace) -> None:
    counts = [int(x) for x in args.streams.split(",")]
    kept: dict[int, int | None] = {1: None, 2: None}
    for n in counts:
        try:
            t = truth(url, args, users=n)
        except OSError as exc:   # a server that stopped answering (the mock did once at 16 streams over 2)
            print(f"  {n} streams: the server no longer answers ({type(exc).__name__}: {exc}); stopped", flush=True)
            break
        for procs in (1, 2):
            if procs > n:
                continue
            try:
                run = ours(url, data, args, users=n, procs=procs)
            except ProbeFailed as exc:   # the server stopped answering between the truth and us
                print(f"  {n} streams, {procs} driver process(es): {exc}; stopped", flush=True)
                return report(name, kept, args)
            if line(f"{n} streams, {procs} driver process{'es' if procs > 1 else ''}", t, run):
                kept[procs] = n
    report(name, kept, args)


def report(name: str, kept: dict[int, int | None], args: argparse.Namespace) -> None:
    print(f"  {name}: within 5% of the truth up to {kept[1]} streams in one driver process, {kept[2]} in two "
          f"(of {args.streams})", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--rate", type=float, default=8.0)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--cap", type=int, default=4)
    ap.add_argument("--levels", default="1,2,4,8,16")
    ap.add_argument("--streams", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--guidellm", default=None, help="the guidellm binary (its mock server); none: ours only")
    ap.add_argument("--only", choices=("ours", "mock", "knee"), default=None)
    ap.add_argument("--knee-on", default="ours,mock", help="servers the capped concurrency sweep runs against")
    ap.add_argument("--requests", type=int, default=5000, help="prompts in the data set (a bound on each run)")
    args = ap.parse_args(argv)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = dataset(Path(tmp) / "prompts.jsonl", args.requests)
        if args.only not in ("mock", "knee"):
            with ours_server(args) as url:
                accuracy("ours (8 tokens a chunk)", url, data, args)
                if args.streams:
                    streams("ours", url, data, args)
        knee_on = [w for w in args.knee_on.split(",") if w == "ours" or args.guidellm]
        if args.only == "knee":
            for which in knee_on:
                knee(args, data, which)
        elif args.guidellm and args.only != "ours":
            with mock_server(args) as url:
                accuracy("guidellm mock (1 token a chunk)", url, data, args)
                if args.streams:
                    streams("mock", url, data, args)
        if args.only is None:
            for which in knee_on:
                knee(args, data, which)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
