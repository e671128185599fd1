"""The harness against an independent OpenAI-compatible server with known timing: TTFT and ITL read back.

Usage: python benchmarks/llm_mock_timing.py [--ttft-ms 50] [--itl-ms 10] [--rates 2,8] [--duration 20]

The server is GuideLLM's mock server (`guidellm mock-server`, PyPI `guidellm` 0.8.1), set to a
first token after `--ttft-ms` and a token every `--itl-ms`. It is not a project dependency: it is
installed in a virtual environment of its own (HARNESS_MOCK_VENV, default runs/mock-venv; made on
first use with `guidellm==0.8.1` and the project's pinned CPU torch, about 2 GB). For each rate
(low load: the mock serves every request concurrently) and each API (completions, chat) it runs
`harness run URL --mode live -w short --json` and compares TTFT p50 and ITL p50 (and TPOT p50)
with the set values: within 10% passes. Prints the 1-minute load average beside every figure:
on a busy shared machine the client's own scheduling adds to both, so re-measure a miss quietly.
Exit 0: every figure within 10%; 1: one was not; 2: the mock could not be started.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDELLM = "guidellm==0.8.1"
TORCH = "torch==2.13.0"   # the project's pin (CPU): guidellm asks for torch unpinned
TOLERANCE = 0.10


def venv() -> Path:
    where = Path(os.environ.get("HARNESS_MOCK_VENV", ROOT / "runs" / "mock-venv"))
    exe = where / "bin" / "guidellm"
    if not exe.exists():
        print(f"installing {GUIDELLM} into {where} (its own venv, not the project's)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        subprocess.run([str(where / "bin" / "pip"), "install", "-q", GUIDELLM, TORCH], check=True)
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mock(exe: Path, port: int, ttft_ms: float, itl_ms: float) -> subprocess.Popen:
    proc = subprocess.Popen([str(exe), "mock-server", "--host", "127.0.0.1", "--port", str(port), "--model", "mock",
                             "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the mock server exited: {proc.stderr.read()[-500:] if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the mock server did not answer /v1/models within 120 s")


def harness_run(url: str, rate: float, duration: float) -> dict:
    cmd = [str(Path(sys.executable).parent / "harness"), "run", url, "--mode", "live", "-w", "short", "--rate", f"{rate:g}",
           "--duration", f"{duration:g}", "--json", "--out", str(ROOT / "runs" / "llm-mock-timing.json")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"harness run failed ({done.returncode}): {done.stderr[-500:]}")
    return json.loads(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=10.0)
    ap.add_argument("--rates", default="2,8", help="offered req/s, comma-separated (low load)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of arrivals per run")
    args = ap.parse_args()
    try:
        exe = venv()
        port = free_port()
        mock = start_mock(exe, port, args.ttft_ms, args.itl_ms)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"cannot start the mock server: {exc}")
        return 2
    worst = 0.0
    try:
        for api in ("completions", "chat/completions"):
            url = f"http://127.0.0.1:{port}/v1/{api}"
            for rate in (float(r) for r in args.rates.split(",")):
                doc = harness_run(url, rate, args.duration)
                run, target = doc["runs"][0], doc["settings"]["targets"][0]
                ttft, itl, tpot = run["ttft_s"]["p50"], run["itl_s"]["p50"], run["tpot_s"]["p50"]
                off = max(abs(ttft * 1000 / args.ttft_ms - 1), abs(itl * 1000 / args.itl_ms - 1))
                worst = max(worst, off)
                print(f"{api:>16} {rate:>4g} req/s: TTFT p50 {ttft * 1000:6.1f} ms (set {args.ttft_ms:g}), "
                      f"ITL p50 {itl * 1000:5.2f} ms, TPOT p50 {tpot * 1000:5.2f} ms (set {args.itl_ms:g}); "
                      f"{run['finished']}/{run['requests']} answered, tokens from {run['url']['token_count']}, "
                      f"prompts {target['prompt_sizing'].split(':')[0]}; off by {off:.1%}; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        mock.terminate()
        try:
            mock.wait(10)
        except subprocess.TimeoutExpired:
            mock.kill()
    print(f"worst: {worst:.1%} off the set values (limit {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
