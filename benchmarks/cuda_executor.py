"""Check the torch executor on CUDA and print batch time against batch size per model.

Usage (from the repository root)::

    python benchmarks/cuda_executor.py                 # CUDA, then the same on CPU
    python benchmarks/cuda_executor.py --device cpu --repeats 2 --batch-sizes 1,8

Checks, each printed as PASS/FAIL (exit status 1 if any fails, 2 if CUDA is missing):

1. outputs on the device match the CPU reference model (same seed) within tolerance;
2. ``pad_to_s`` holds each batch to at least the padded wall time;
3. ``fail()`` raises ``WorkerDied`` in flight and ``recover()`` brings the worker back.

Then a table per device: median batch compute time (ms; ``TorchExecutor.last_compute_s``,
CUDA synchronised) and throughput (requests/s) per batch size and model. Sized to finish
in well under two minutes on an H200 host; ``--profile-out DIR`` also writes a full
``CostTable`` JSON per model for sim mode.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import statistics
import sys
import time
from pathlib import Path

import torch

from harness.live.profile import profile_model
from targets.gpu.executor import TorchExecutor, WorkerDied, describe_device, resolve_device
from targets.gpu.models import MODEL_NAMES, ModelHandle, create_model


def _parse_ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


@functools.cache
def _codec(model: str) -> ModelHandle:
    """A CPU handle used only for its input codec; cached because building one draws
    millions of weights (~50 ms), which must stay out of timed regions."""
    return create_model(model)


def _inputs(model: str, batch: int, length: int, seed: int) -> list:
    rng = random.Random(seed)
    codec = _codec(model)
    return [codec.synthetic_input(rng, length) for _ in range(batch)]


async def _check_outputs(device: str, models: tuple[str, ...], length: int) -> bool:
    """Device outputs against the CPU reference. cuDNN convolutions default to TF32 on
    Ampere and later, so the tolerance is relative to the logits' scale, not 1e-5."""
    ok = True
    for model in models:
        inputs = _inputs(model, 4, length, seed=1)
        reference = _codec(model).run(inputs)
        with TorchExecutor(model, device=device) as executor:
            outputs = await executor.run_batch(inputs)
        scale = max(1.0, max(abs(x) for o in reference for x in o["logits"]))
        diff = max(abs(a - b) for o, r in zip(outputs, reference)
                   for a, b in zip(o["logits"], r["logits"]))
        passed = diff <= 1e-2 * scale
        ok &= passed
        print(f"  {'PASS' if passed else 'FAIL'} {model}: max |logit diff| vs CPU "
              f"{diff:.2e} (scale {scale:.1f})")
    return ok


async def _check_pad_and_faults(device: str) -> bool:
    pad_s = 0.1
    ok = True
    with TorchExecutor("mlp", device=device, pad_to_s=pad_s) as executor:
        await executor.warm_up()
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            await executor.run_batch(_inputs("mlp", 8, 0, seed=2))
            walls.append(time.perf_counter() - start)
        busy = executor.busy_s
        passed = min(walls) >= 0.99 * pad_s and busy >= 3 * 0.99 * pad_s
        ok &= passed
        print(f"  {'PASS' if passed else 'FAIL'} pad_to_s={pad_s}: batch walls "
              f"{', '.join(f'{w * 1e3:.1f}' for w in walls)} ms, busy {busy:.3f} s, "
              f"compute {executor.last_compute_s * 1e3:.2f} ms")

        in_flight = asyncio.create_task(executor.run_batch(_inputs("mlp", 8, 0, seed=3)))
        await asyncio.sleep(0.02)
        executor.fail()
        try:
            await in_flight
            died = False
        except WorkerDied:
            died = True
        executor.recover()
        recovered = len(await executor.run_batch(_inputs("mlp", 1, 0, seed=4))) == 1
        passed = died and recovered
        ok &= passed
        print(f"  {'PASS' if passed else 'FAIL'} fail()/recover(): in-flight died={died}, "
              f"recovered={recovered}")
    return ok


async def _time_table(device: str, models: tuple[str, ...], batch_sizes: tuple[int, ...],
                      length: int, repeats: int, warmup: int) -> dict[tuple[str, int], float]:
    """Median compute seconds per (model, batch), measured through run_batch."""
    medians: dict[tuple[str, int], float] = {}
    for model in models:
        with TorchExecutor(model, device=device) as executor:
            hops = []
            for batch in batch_sizes:
                inputs = _inputs(model, batch, length, seed=batch)
                for _ in range(warmup):
                    await executor.run_batch(inputs)
                times = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    await executor.run_batch(inputs)
                    wall = time.perf_counter() - start
                    times.append(executor.last_compute_s)
                    hops.append(wall - executor.last_timing.busy_s)
                medians[(model, batch)] = statistics.median(times)
        print(f"  {model}: median event-loop <-> worker hop {statistics.median(hops) * 1e6:.0f} us")
    return medians


def _print_table(title: str, models: tuple[str, ...], batch_sizes: tuple[int, ...],
                 length: int, medians: dict[tuple[str, int], float]) -> None:
    names = [f"{m} (L={length})" if _codec(m).variable_length else m for m in models]
    print(f"\n{title}")
    print("batch | " + " | ".join(f"{n:>23}" for n in names))
    for batch in batch_sizes:
        cells = [f"{medians[(m, batch)] * 1e3:9.3f} ms {batch / medians[(m, batch)]:8.0f}/s"
                 for m in models]
        print(f"{batch:5d} | " + " | ".join(cells))


async def _run_device(device: str, args: argparse.Namespace, models: tuple[str, ...],
                      batch_sizes: tuple[int, ...], checks: bool) -> bool:
    dev = resolve_device(device)
    print(f"\n== {describe_device(dev)}: torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads ==")
    ok = True
    if checks:
        ok &= await _check_outputs(device, models, args.length)
        ok &= await _check_pad_and_faults(device)
    start = time.perf_counter()
    medians = await _time_table(device, models, batch_sizes, args.length, args.repeats,
                                args.warmup)
    _print_table(f"batch compute time, median of {args.repeats} (ms, and requests/s) on "
                 f"{describe_device(dev)} [{time.perf_counter() - start:.1f} s]",
                 models, batch_sizes, args.length, medians)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--batch-sizes", default="1,8,32,128")
    parser.add_argument("--length", type=int, default=64, help="transformer tokens per input")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--no-cpu-compare", action="store_true",
                        help="with --device cuda, skip the CPU table")
    parser.add_argument("--profile-out", type=Path, default=None,
                        help="also write a CostTable JSON per model here")
    args = parser.parse_args(argv)
    models = tuple(m for m in args.models.split(",") if m)
    batch_sizes = _parse_ints(args.batch_sizes)
    unknown = [m for m in models if m not in MODEL_NAMES]
    if unknown:
        parser.error(f"unknown models {unknown}; valid: {', '.join(MODEL_NAMES)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"error: --device cuda but torch.cuda.is_available() is False (torch "
              f"{torch.__version__}, CUDA build {torch.version.cuda}, "
              f"{torch.cuda.device_count()} devices). Install a CUDA build of torch on a "
              "machine with an NVIDIA GPU, or pass --device cpu.", file=sys.stderr)
        return 2
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    ok = asyncio.run(_run_device(args.device, args, models, batch_sizes, checks=True))
    if args.device == "cuda" and not args.no_cpu_compare:
        ok &= asyncio.run(_run_device("cpu", args, models, batch_sizes, checks=False))
    if args.profile_out is not None:
        args.profile_out.mkdir(parents=True, exist_ok=True)
        for model in models:
            table = profile_model(model, args.device, repeats=max(3, args.repeats // 2),
                                  warmup=args.warmup, threads=args.threads)
            path = args.profile_out / f"{model}-{args.device}.json"
            table.to_json(path)
            print(f"wrote {path} ({len(table.points)} points)")
    print("\nall checks passed" if ok else "\nSOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
