"""The run cache: a finished sim run kept under a key of everything that decides it.

A sim run is a pure function of its inputs: the resolved target config, the resolved
workload (already shortened, at its rate and duration), the seed, and the code that
simulates it. `RunCache` stores each finished run's result under a hash of exactly
those (`sim_key`), so `review` after `compare`, `rank` after `review` and a second
`compare` reuse what is already known; a change to any knob, any workload field, the
seed, or any source file of `harness`, `targets` or `workloads` (`code_version`) is
another key, hence a miss. A job takes part by having `sim_inputs() -> (TargetConfig,
WorkloadConfig, seed)` (SimJob, VariantJob), or by having `cache_inputs()`, a JSON
value of everything else that decides its `run()` (capacity's Point, a canary rollout:
`value_key`, the job's class name and the code's version with it); any other job always
runs. A result that is not a job's (the pool experiment, an LLM section) is kept by
`memo(kind, inputs, build)` under the same discipline.

Where: `$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness/runs`, else
`~/.cache/harness/runs` (`default_dir`); one file per run, written atomically (a
temporary file renamed into place), so a crash or two processes at once never leave half
an entry. An entry that cannot be read, or that holds another key, is a miss with a
`RunCacheWarning` and is written again. Nothing is ever evicted: delete the directory to
empty it. A partial run (interrupted) is never stored.

The cache counts what it served: `hits` (labels of the runs it gave back, in the order
served) and `misses`; the CLI reports them and writes `cached_runs` into the result. One
cache may serve several threads at once (the review builds its parts on a thread).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import pickle
import tempfile
import threading
import warnings
import zlib
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

from pydantic import BaseModel

from harness.results.run import RunResult
from targets.config import TargetConfig
from workloads.model import WorkloadConfig

__all__ = ["CacheInputs", "RunCache", "RunCacheWarning", "SimInputs", "code_version", "default_dir", "job_label",
           "sim_key", "value_key"]

R = TypeVar("R")
FORMAT = 1  # bump when the entry layout changes: older entries become misses
PACKAGES = ("harness", "targets", "workloads")  # the code that decides a sim run's figures
_SOURCE_SUFFIXES = (".py", ".toml", ".csv")


class RunCacheWarning(UserWarning):
    """A cache entry could not be read (or held another run): it counts as a miss."""


@runtime_checkable
class SimInputs(Protocol):
    """A job whose result is `run_sim(*job.sim_inputs())`: the cache may answer it."""

    def sim_inputs(self) -> tuple[TargetConfig, WorkloadConfig, int]: ...


@runtime_checkable
class CacheInputs(Protocol):
    """A job whose `run()` is decided by `cache_inputs()` (a JSON value: plain data, pydantic
    models, dataclasses) and the code alone: the cache may answer it."""

    def cache_inputs(self) -> Any: ...


def default_dir() -> Path:
    """`$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness/runs`, else `~/.cache/harness/runs`."""
    if os.environ.get("HARNESS_CACHE_DIR"):
        return Path(os.environ["HARNESS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness" / "runs"


@functools.cache
def code_version(root: Path | None = None) -> str:
    """A hash of every source and data file (.py, .toml, .csv) of PACKAGES under `root`
    (default: where this checkout's packages are), path and content: any edit changes it."""
    base = root or Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for pkg in PACKAGES:
        for path in sorted((base / pkg).rglob("*")):
            if path.suffix in _SOURCE_SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def sim_key(target: TargetConfig, workload: WorkloadConfig, seed: int, code: str | None = None) -> str:
    """The cache key of `run_sim(target, workload, seed)` under `code` (default: `code_version()`)."""
    doc = [FORMAT, code or code_version(), target.model_dump(mode="json"), workload.model_dump(mode="json"), seed]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, allow_nan=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    """A JSON value of what json cannot write itself: a pydantic model, a dataclass, an enum."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"the run cache cannot key a {type(value).__name__}")


def value_key(kind: str, inputs: Any, code: str | None = None) -> str:
    """The cache key of the result of `kind` (a name of what computes it) from `inputs` (a JSON
    value of everything else that decides it) under `code` (default: `code_version()`)."""
    doc = [FORMAT, code or code_version(), kind, inputs]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, allow_nan=True, default=_plain).encode()).hexdigest()


def job_label(job: Any) -> str:
    """How a run is named where the cache reports it: the job's `cache_label()` where it has
    one, else 'target on workload, seed N'."""
    label = getattr(job, "cache_label", None)
    if callable(label):
        return str(label())
    return f"{getattr(job, 'target', '?')} on {getattr(job, 'workload', '?')}, seed {getattr(job, 'seed', '?')}"


class RunCache:
    """Finished sim runs on disk under `root` (see the module doc); counts `hits` and `misses`."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_dir()
        self.hits: list[str] = []
        self.misses = 0
        self._lock = threading.Lock()  # the counters, when threads share the cache

    def _hit(self, label: str) -> None:
        with self._lock:
            self.hits.append(label)

    def _missed(self) -> None:
        with self._lock:
            self.misses += 1

    def count(self, hits: list[str], misses: int) -> None:
        """Count another process's hits and misses (a cache it was given a copy of) as this one's."""
        with self._lock:
            self.hits.extend(hits)
            self.misses += misses

    def key(self, job: object) -> str | None:
        """The job's key, or None when the cache cannot answer it (neither SimInputs nor CacheInputs)."""
        if isinstance(job, SimInputs):
            return sim_key(*job.sim_inputs())
        if isinstance(job, CacheInputs):
            return value_key(f"{type(job).__module__}.{type(job).__qualname__}", job.cache_inputs())
        return None

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.run"

    def get(self, key: str) -> Any | None:
        """The stored result of `key`; None when absent or unreadable (a RunCacheWarning)."""
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            warnings.warn(f"run cache: cannot read {path} ({exc}): running it again", RunCacheWarning, stacklevel=2)
            return None
        try:
            fmt, stored_key, result = pickle.loads(zlib.decompress(blob))
            if fmt != FORMAT or stored_key != key or result is None:
                raise ValueError("not this run's entry")
        except Exception as exc:  # any damage at all is a miss, never a crash
            warnings.warn(f"run cache: corrupt entry {path} ({type(exc).__name__}: {exc}): running it again",
                          RunCacheWarning, stacklevel=2)
            return None
        return result

    def put(self, key: str, result: Any) -> None:
        """Store `result` under `key` atomically (a partial run is not stored)."""
        if result is None or (isinstance(result, RunResult) and result.summary.partial):
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = zlib.compress(pickle.dumps((FORMAT, key, result), protocol=pickle.HIGHEST_PROTOCOL), 1)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".run")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _lookup(self, work: Sequence[Any]) -> tuple[list[str | None], list[Any], list[int]]:
        """(each job's key, the stored results in place and None elsewhere, the indices to run)."""
        keys = [self.key(job) for job in work]
        results: list[Any] = [None] * len(work)
        rest: list[int] = []
        for i, (job, key) in enumerate(zip(work, keys)):
            found = self.get(key) if key is not None else None
            if found is None:
                rest.append(i)
                if key is not None:
                    self._missed()
                continue
            results[i] = found
            self._hit(job_label(job))
        return keys, results, rest

    def _store(self, key: str | None, result: Any) -> None:
        if key is None or result is None:
            return
        try:
            self.put(key, result)
        except OSError as exc:  # a full or read-only disk costs the reuse, not the run
            warnings.warn(f"run cache: cannot store a run in {self.root} ({exc})", RunCacheWarning, stacklevel=3)

    def run(self, work: Sequence[Any], on_done: Callable[[int, Any, Any], None] | None,
            run_rest: Callable[[Sequence[Any], Callable[[int, Any, Any], None]], list[Any]]) -> list[Any]:
        """Each job's result in job order: stored ones from disk (`on_done` called for them
        first), the rest by `run_rest(jobs, on_done)` (an executor), each stored as it finishes.

        An interruption of `run_rest` (`harness.engine.jobs.JobsInterrupted`) is raised again,
        its `results` now the whole batch's: the stored ones and those that finished."""
        keys, results, rest = self._lookup(work)
        for i in range(len(work)):
            if results[i] is not None and on_done:
                on_done(i, work[i], results[i])

        def done(j: int, job: Any, result: Any) -> None:
            i = rest[j]
            results[i] = result
            self._store(keys[i], result)
            if on_done:
                on_done(i, job, result)

        if rest:
            try:
                ran = run_rest([work[i] for i in rest], done)
            except KeyboardInterrupt as exc:
                finished = getattr(exc, "results", None)  # JobsInterrupted's (jobs imports this module)
                if finished is not None:
                    for j, res in enumerate(finished):
                        results[rest[j]] = res
                    setattr(exc, "results", results)
                raise
            for j, res in enumerate(ran):
                results[rest[j]] = res
        return results

    def start(self, work: Sequence[Any],
              start_rest: Callable[[Sequence[Any]], Callable[[], list[Any]]]) -> Callable[[], list[Any]]:
        """`Jobs.start` through the cache: the stored results now, the rest started by
        `start_rest(jobs)`; the returned call waits for them, stores each, and gives every
        job's result in job order."""
        keys, results, rest = self._lookup(work)
        waiting = start_rest([work[i] for i in rest]) if rest else list

        def collect() -> list[Any]:
            for j, res in enumerate(waiting()):
                results[rest[j]] = res
                self._store(keys[rest[j]], res)
            return results
        return collect

    def one(self, job: Any, run: Callable[[], RunResult]) -> RunResult:
        """`job`'s stored run, else `run()` (e.g. the job with a progress display), then stored."""
        key = self.key(job)
        found = self.get(key) if key is not None else None
        if found is not None:
            self._hit(job_label(job))
            return found
        result = run()
        if key is not None:
            self._missed()
            self.put(key, result)
        return result

    def memo(self, kind: str, inputs: Any, build: Callable[[], R], label: str) -> R:
        """The stored result of `kind` from `inputs` (`value_key`), else `build()`, then stored;
        `label` names it among the hits (for a result that is not a job's: the pool experiment,
        an LLM section)."""
        found = self.recall(kind, inputs, label)
        if found is not None:
            return found
        result = build()
        self.remember(kind, inputs, result)
        return result

    def recall(self, kind: str, inputs: Any, label: str) -> Any | None:
        """`memo`'s first half, for a result built later (started now, collected after): the stored
        result of `kind` from `inputs` (a hit named `label`), else None."""
        found = self.get(value_key(kind, inputs))
        if found is not None:
            self._hit(label)
        return found

    def remember(self, kind: str, inputs: Any, result: Any) -> None:
        """`memo`'s second half: `result`, built after `recall` found none (a miss), stored."""
        self._missed()
        self._store(value_key(kind, inputs), result)

    def note(self) -> str:
        """One line on what the cache served, for the CLI."""
        total = len(self.hits) + self.misses
        return f"run cache: {len(self.hits)} of {total} sim runs reused from {self.root} (--no-cache runs them all)"
