"""`harness run URL --dataset F --concurrency N` against the tiny decoder, checked from the server's side.

Usage: python benchmarks/llm_traffic_served.py [--conversations 200] [--concurrency 4] [--duration 20]
       python benchmarks/llm_traffic_served.py --write chats.json   (only write the ShareGPT file)

Makes a ShareGPT file of `--conversations` conversations (1 to 4 turns of short questions and
recorded answers, seeded) in a temporary folder, serves `llm-continuous` (the tiny decoder, as
`harness serve llm-continuous` does) on 127.0.0.1 in this process, and runs the CLI against it in
a process of its own: `harness run URL --dataset F --concurrency N --duration S`. The server's own
count: every call into its engine (`LiveEngine.generate`) but the client's probes (user "probe") is
counted in and out, and the most at once is its peak of the run's requests in flight. Prints the CLI's output, then the server's peak beside N.
Exit 0: the peak is at most N (and at least 1); 1: it was not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, AsyncIterator

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the sea sun ship wind river city night light mountain story paper school".split()


def sharegpt(path: Path, n: int, seed: int = 1) -> Path:
    """`n` ShareGPT conversations of 1-4 turns, short enough for the tiny decoder's 512 tokens."""
    r = random.Random(seed)
    doc = []
    for k in range(n):
        turns: list[dict[str, str]] = []
        for _ in range(r.randint(1, 4)):
            turns.append({"from": "human", "value": " ".join(r.choice(WORDS) for _ in range(r.randint(3, 12)))})
            turns.append({"from": "gpt", "value": " ".join(r.choice(WORDS) for _ in range(r.randint(2, 6)))})
        doc.append({"id": f"c{k}", "conversations": turns})
    path.write_text(json.dumps(doc))
    return path


class Served:
    """llm-continuous on 127.0.0.1 on a thread of its own; `peak`: the most engine calls at once."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.now = self.peak = self.calls = 0
        self.server: Any = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        if not ready.wait(120) or self.server is None:
            raise RuntimeError("the tiny decoder did not start")

    def _run(self, ready: threading.Event) -> None:
        from harness.live.llm_profile import LIVE_ENGINE
        from harness.live.llm_serve import start_llm_server
        from targets.llm import LlmPolicy

        async def start() -> None:
            self.server = await start_llm_server(replace(LIVE_ENGINE, policy=LlmPolicy("llm-continuous")))
            engine, inner = self.server.engine, self.server.engine.generate

            async def counted(prompt: list[int], max_tokens: int, request_id: str | None = None,
                              tenant: str = "default") -> AsyncIterator[int]:
                if tenant == "probe":   # the client's calibration probes (`user: "probe"`), before the run
                    async for token in inner(prompt, max_tokens, request_id, tenant):
                        yield token
                    return
                self.now += 1
                self.calls += 1
                self.peak = max(self.peak, self.now)
                try:
                    async for token in inner(prompt, max_tokens, request_id, tenant):
                        yield token
                finally:
                    self.now -= 1
            engine.generate = counted
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(start())
        ready.set()
        self.loop.run_forever()

    @property
    def url(self) -> str:
        return str(self.server.url)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--write", type=Path, help="only write the ShareGPT file here, and exit")
    args = ap.parse_args(argv)
    if args.write is not None:
        sharegpt(args.write, args.conversations)
        print(f"{args.write}: {args.conversations} ShareGPT conversations")
        return 0
    served = Served()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = sharegpt(Path(tmp) / "chats.json", args.conversations)
            cmd = [str(Path(sys.executable).parent / "harness"), "run", f"{served.url}", "--dataset", str(data),
                   "--concurrency", str(args.concurrency), "--duration", f"{args.duration:g}",
                   "--out", str(Path(tmp) / "run.json")]
            print("$ harness run URL --dataset chats.json --concurrency "
                  f"{args.concurrency} --duration {args.duration:g}", flush=True)
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    env={**os.environ, "COLUMNS": "80"})
            out, _ = proc.communicate(timeout=args.duration + 180)
            print(out)
    finally:
        served.close()
    ok = proc.returncode == 0 and 1 <= served.peak <= args.concurrency
    print(f"server side: {served.calls} of the run's requests reached the engine, at most {served.peak} "
          f"at once; the run's --concurrency {args.concurrency}: {'ok' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
