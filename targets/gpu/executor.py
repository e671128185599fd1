"""The torch GPU executor for live mode: one instance = one GPU worker.

``TorchExecutor.run_batch(inputs)`` runs one real forward pass off the event loop, on a
dedicated single-thread ``concurrent.futures`` executor, so an instance runs one batch at
a time (as one GPU does) while the loop keeps serving requests. Live mode only: sim mode
forbids threads and uses a cost model instead (see ``harness.live.profile.CostTable``).

Timing contract (seconds, wall clock, ``time.perf_counter``):

- ``compute_s``: collate (validation, host tensors, host-to-device copy) + forward +
  CUDA synchronise + device-to-host copy of the logits. This is what the profiler
  measures too (:func:`measure_batch`), so sim and live agree on what "a batch" costs.
- ``busy_s``: ``compute_s`` plus the ``pad_to_s`` sleep: how long the worker was occupied.

``pad_to_s`` pads every batch up to a fixed wall time (the design doc's 100 ms) so live
runs reproduce the doc's arithmetic on any machine; a batch whose compute already exceeds
it is counted in ``overruns`` rather than silently breaking that arithmetic.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from targets.gpu.models import Batch, ModelHandle, create_model

__all__ = [
    "BatchTiming",
    "TorchExecutor",
    "WorkerDied",
    "describe_device",
    "measure_batch",
    "resolve_device",
    "synchronize",
    "torch_threads",
    "torch_version",
]


class WorkerDied(RuntimeError):
    """The worker died with this batch in flight, or is dead (fault injection: ``fail()``)."""


@dataclass(frozen=True)
class BatchTiming:
    """What one batch cost. Seconds of wall time; ``length`` is the padded token length."""

    size: int
    length: int | None
    compute_s: float
    busy_s: float
    padding_fraction: float
    overran: bool  # compute_s > pad_to_s: the fixed batch time could not be honoured


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` -> cuda when available else cpu; ``"cpu"``; ``"cuda"`` or ``"cuda:N"``.

    Raises ``RuntimeError`` when cuda is asked for but unavailable, ``ValueError`` for
    anything else.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device {device!r} requested but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
                "use device='cpu' or 'auto'")
        return torch.device(device)
    raise ValueError(f"unknown device {device!r}; valid: 'auto', 'cpu', 'cuda', 'cuda:N'")


def describe_device(device: torch.device) -> str:
    """``"cpu"``, or ``"cuda:0 (NVIDIA H200)"``: enough to tell cost tables' hardware apart."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return device.type


def torch_threads(threads: int | None = None) -> int:
    """torch's intra-op thread count (process-wide), set to ``threads`` first when given."""
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def torch_version() -> str:
    """The torch this process runs (cost tables and LLM profiles record it)."""
    return torch.__version__


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels on ``device`` (no-op on CPU): CUDA launches are asynchronous,
    so a timer stopped without this measures launch time, not compute."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_batch(handle: ModelHandle, inputs: Sequence[Any],
                  pad_to: int | None = None) -> tuple[list[dict[str, Any]], Batch, float]:
    """Run one batch synchronously on the calling thread.

    Returns ``(outputs, batch, seconds)``: per-request answers, the collated batch, and
    the wall seconds from collate to answers on the host (CUDA synchronised). Raises
    ``ValueError`` for a bad input (see ``ModelHandle.collate``).
    """
    start = time.perf_counter()
    with torch.inference_mode():
        batch = handle.collate(inputs, pad_to)
        logits = handle.module(*batch.tensors)
        synchronize(handle.device)
        outputs = handle.split(logits)
    return outputs, batch, time.perf_counter() - start


class TorchExecutor:
    """One GPU worker running a real torch model, one batch at a time, off the event loop.

    ``device``: ``"auto"`` (cuda when available), ``"cpu"`` or ``"cuda"``. ``threads``: if
    given, ``torch.set_num_threads(threads)`` is applied in the worker thread only (with
    torch's OpenMP build the setting is per thread; measured: the caller keeps its own, and
    new threads start from the process default). ``pad_to_s``:
    pad each batch's wall time up to this many seconds. ``seed``: the weights' seed.

    ``fail()`` kills the worker: the in-flight and every later ``run_batch`` raise
    ``WorkerDied`` until ``recover()``. The thread itself cannot be interrupted mid-kernel,
    so an abandoned batch still occupies it (like a GPU that must be reset) and still
    counts as busy time; its results are discarded.
    """

    def __init__(self, model_name: str, device: str = "auto", threads: int | None = None,
                 pad_to_s: float | None = None, seed: int = 0) -> None:
        if pad_to_s is not None and not (math.isfinite(pad_to_s) and pad_to_s >= 0):
            raise ValueError(f"pad_to_s must be a finite number >= 0 or None, got {pad_to_s}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 or None, got {threads}")
        self.device = resolve_device(device)
        self.model = create_model(model_name, seed=seed, device=self.device)
        self.model_name = model_name
        self.pad_to_s = pad_to_s
        self.threads = threads
        self._seed = seed
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"torch-{model_name}",
                                        initializer=self._init_thread)
        # Counters are written by the worker thread and read on the loop thread.
        self._lock = threading.Lock()
        self._last: BatchTiming | None = None
        self._busy_s = 0.0
        self._batches = 0
        self._overruns = 0
        self._failed = False
        self._generation = 0  # bumped by fail(): results of older generations are void
        self._dead = threading.Event()  # set by fail(): cuts the pad sleep short
        self._waiters: set[asyncio.Future[None]] = set()  # one per in-flight run_batch
        self._closed = False

    def _init_thread(self) -> None:
        if self.threads is not None:
            torch.set_num_threads(self.threads)

    # -- observability -------------------------------------------------------------------

    @property
    def last_timing(self) -> BatchTiming | None:
        """The last batch the worker finished (discarded ones included); None before any."""
        with self._lock:
            return self._last

    @property
    def last_compute_s(self) -> float | None:
        """Measured compute seconds of the last batch (see the module docstring)."""
        timing = self.last_timing
        return None if timing is None else timing.compute_s

    @property
    def busy_s(self) -> float:
        """Total seconds the worker has been occupied by batches (compute + pad sleep)."""
        with self._lock:
            return self._busy_s

    @property
    def batches_run(self) -> int:
        with self._lock:
            return self._batches

    @property
    def overruns(self) -> int:
        """Batches whose compute alone exceeded ``pad_to_s``."""
        with self._lock:
            return self._overruns

    @property
    def failed(self) -> bool:
        return self._failed

    # -- running -------------------------------------------------------------------------

    async def run_batch(self, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        """Run one batch; return one JSON-friendly answer per input, in order.

        Raises ``WorkerDied`` if the worker is or becomes failed before the answers are
        delivered, ``ValueError("input <i>: ...")`` for a bad input, ``RuntimeError``
        after ``close()``. Calls made while a batch runs queue behind it.
        """
        return await self._submit(list(inputs), record=True)

    async def warm_up(self, batch_size: int = 1, length: int | None = None) -> None:
        """Run one synthetic batch, not counted in the timings, so the first real request
        does not pay for lazy initialisation (allocator, kernel selection, CUDA context).
        ``length``: tokens per input (variable-length models only; default 16). Never padded
        to ``pad_to_s``: warming is about the real compute path, not the emulated batch time."""
        rng = random.Random(self._seed)
        length = (length or 16) if self.model.variable_length else None
        await self._submit([self.model.synthetic_input(rng, length) for _ in range(batch_size)],
                           record=False)

    async def _submit(self, inputs: list[Any], record: bool) -> list[dict[str, Any]]:
        if self._closed:
            raise RuntimeError(f"TorchExecutor({self.model_name!r}) is closed")
        if self._failed:
            raise WorkerDied(f"worker for {self.model_name!r} is dead; call recover()")
        loop = asyncio.get_running_loop()
        generation = self._generation
        work = loop.run_in_executor(self._pool, self._work, inputs, self._dead, record)
        # If the caller stops waiting (death or cancellation) the thread still finishes;
        # retrieve its outcome so asyncio does not log "exception was never retrieved".
        work.add_done_callback(_consume)
        death: asyncio.Future[None] = loop.create_future()
        self._waiters.add(death)
        try:
            await asyncio.wait((work, death), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiters.discard(death)
        # The generation check also catches a fail() landing after the batch finished but
        # before this coroutine resumed: its answers were never delivered.
        if death.done() or generation != self._generation:
            raise WorkerDied(f"worker for {self.model_name!r} died with this batch in flight")
        return work.result()

    def _work(self, inputs: list[Any], dead: threading.Event,
              record: bool) -> list[dict[str, Any]]:
        """Worker thread: compute, then sleep out the pad. Holds no lock while computing."""
        start = time.perf_counter()
        batch: Batch | None = None
        compute_s = 0.0
        try:
            outputs, batch, compute_s = measure_batch(self.model, inputs)
            if record and self.pad_to_s is not None:  # warm-up batches are not padded
                remaining = self.pad_to_s - (time.perf_counter() - start)
                if remaining > 0:
                    dead.wait(remaining)  # returns early if fail() kills the worker
            return outputs
        finally:
            if record:
                busy_s = time.perf_counter() - start
                overran = self.pad_to_s is not None and compute_s > self.pad_to_s
                timing = BatchTiming(
                    size=len(inputs), length=batch.length if batch else None,
                    compute_s=compute_s if batch else busy_s, busy_s=busy_s,
                    padding_fraction=batch.padding_fraction if batch else 0.0,
                    overran=overran)
                with self._lock:
                    self._last = timing
                    self._busy_s += busy_s
                    self._batches += 1
                    self._overruns += int(overran)

    # -- fault injection -----------------------------------------------------------------

    def fail(self) -> None:
        """Kill the worker: in-flight and later ``run_batch`` calls raise ``WorkerDied``.

        Safe to call from the loop thread or any other thread. Idempotent.
        """
        self._failed = True
        self._generation += 1
        self._dead.set()
        for death in list(self._waiters):
            death_loop = death.get_loop()
            try:
                on_loop = asyncio.get_running_loop() is death_loop
            except RuntimeError:
                on_loop = False
            if on_loop:
                _resolve(death)
            else:
                death_loop.call_soon_threadsafe(_resolve, death)

    def recover(self) -> None:
        """Bring the worker back; batches abandoned by ``fail()`` stay failed. Idempotent."""
        if self._failed:
            self._dead = threading.Event()  # a fresh event: abandoned batches keep the old one
            self._failed = False

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new batches; ones already submitted finish in the background. Idempotent."""
        self._closed = True
        self._pool.shutdown(wait=False)

    def __enter__(self) -> TorchExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"TorchExecutor(model={self.model_name!r}, device={str(self.device)!r}, "
                f"pad_to_s={self.pad_to_s}, batches={self.batches_run}, failed={self._failed})")


def _resolve(death: asyncio.Future[None]) -> None:
    if not death.done():
        death.set_result(None)


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
