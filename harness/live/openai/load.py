"""How a run's requests are let go: the load mode, a frozen and validated config (no clock here).

- `OPEN` (today's default): conversations start at seeded Poisson arrivals at `rate_rps`;
- `REPLAY`: at the start times the data set file gives (a trace), `rate_rps` unset;
- `CONCURRENCY`: a closed loop of `concurrency` users, each sending its conversation's next turn
  as soon as the last is answered (plus the conversation's think time), the next conversation as
  one ends: at most `concurrency` requests in flight;
- `CAPPED`: the open loop at `rate_rps` (or a replay) with at most `max_concurrency` requests in
  flight; a request waits for a slot, and that wait is the client's, reported apart from the
  server's latency (TTFT and E2E are measured from when the request was sent).

`Load.of(...)` takes the options as given and raises `LoadError` (a ValueError whose text names
the option) for what is wrong: `--concurrency 0`, `--rate` with `--concurrency` (ambiguous: a
closed loop has no rate; `--max-concurrency` is the cap of an open loop), `--max-concurrency`
with `--concurrency`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["SLOT_WAIT_BOUND_SHARE", "SLOT_WAIT_MIN_S", "Load", "LoadError", "LoadMode", "check_procs", "slots_bound",
           "split_load"]

SLOT_WAIT_MIN_S = 0.001        # a request that waited longer than this for a slot waited for one...
SLOT_WAIT_BOUND_SHARE = 0.10   # ...and a run where this share of its requests did was bound by its slots


class LoadError(ValueError):
    """A load option that cannot be honoured; the text names it."""


class LoadMode(StrEnum):
    OPEN = "open"
    REPLAY = "replay"
    CONCURRENCY = "concurrency"
    CAPPED = "capped"


@dataclass(frozen=True)
class Load:
    mode: LoadMode
    rate_rps: float | None = None          # OPEN, CAPPED (None in CAPPED: a capped replay)
    concurrency: int | None = None         # CONCURRENCY: users in the closed loop
    max_concurrency: int | None = None     # CAPPED: slots

    def __post_init__(self) -> None:
        if self.mode is LoadMode.CONCURRENCY and not (self.concurrency and self.concurrency >= 1):
            raise LoadError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.mode is LoadMode.CAPPED and not (self.max_concurrency and self.max_concurrency >= 1):
            raise LoadError(f"--max-concurrency must be >= 1, got {self.max_concurrency}")
        if self.mode is LoadMode.OPEN and not (self.rate_rps and self.rate_rps > 0):
            raise LoadError(f"--rate must be > 0, got {self.rate_rps}")

    @classmethod
    def of(cls, rate_rps: float | None, concurrency: int | None, max_concurrency: int | None, timed: bool = False,
           default_rate_rps: float = 2.0) -> "Load":
        """The load the options name. `timed`: the data set has its own start times (replayed when no
        rate is given); `default_rate_rps`: the open loop's rate when nothing is given."""
        if concurrency is not None:
            if concurrency < 1:
                raise LoadError(f"--concurrency must be >= 1, got {concurrency}")
            if rate_rps is not None:
                raise LoadError("--rate with --concurrency is ambiguous: a closed loop of --concurrency users has no "
                                "rate; to cap an open loop give --rate R --max-concurrency N")
            if max_concurrency is not None:
                raise LoadError("--max-concurrency with --concurrency: --concurrency already caps the requests "
                                "in flight")
            return cls(LoadMode.CONCURRENCY, concurrency=concurrency)
        if max_concurrency is not None:
            if max_concurrency < 1:
                raise LoadError(f"--max-concurrency must be >= 1, got {max_concurrency}")
            rate = rate_rps if rate_rps is not None or timed else default_rate_rps
            return cls(LoadMode.CAPPED, rate_rps=rate, max_concurrency=max_concurrency)
        if rate_rps is None and timed:
            return cls(LoadMode.REPLAY)
        return cls(LoadMode.OPEN, rate_rps=rate_rps if rate_rps is not None else default_rate_rps)

    @property
    def slots(self) -> int | None:
        """Requests in flight at most (None: unbounded)."""
        return self.concurrency if self.mode is LoadMode.CONCURRENCY else self.max_concurrency

    @property
    def label(self) -> str:
        if self.mode is LoadMode.CONCURRENCY:
            return f"concurrency {self.concurrency}"
        rate = "the file's times" if self.rate_rps is None else f"{self.rate_rps:g} req/s"
        return f"{rate}, at most {self.max_concurrency} in flight" if self.mode is LoadMode.CAPPED else rate


def slots_bound(slot_waits_s: list[float]) -> bool:
    """A capped run was bound by its slots: at least SLOT_WAIT_BOUND_SHARE of its requests waited
    over SLOT_WAIT_MIN_S for one."""
    if not slot_waits_s:
        return False
    waited = sum(1 for w in slot_waits_s if w > SLOT_WAIT_MIN_S)
    return waited / len(slot_waits_s) >= SLOT_WAIT_BOUND_SHARE


def _part(total: int, index: int, procs: int) -> int:
    return total // procs + (1 if index < total % procs else 0)


def check_procs(load: Load, procs: int) -> None:
    """LoadError when `load` cannot be split over `procs` driver processes: fewer users or slots than
    processes (each process needs one), or under one process."""
    if procs < 1:
        raise LoadError(f"--driver-procs must be >= 1, got {procs}")
    slots = load.slots
    if slots is not None and procs > slots:
        name = "--concurrency" if load.mode is LoadMode.CONCURRENCY else "--max-concurrency"
        raise LoadError(f"--driver-procs {procs} is more than {name} {slots}: each driver process needs one of them")


def split_load(load: Load, index: int, procs: int) -> Load:
    """Process `index` of `procs`' part of `load`: its share of the closed loop's users or of the cap's
    slots (as even as whole numbers go, the first processes one more), the open loop's rate as is (its
    conversations are split instead). A cap split is per process: one process's free slot is not
    another's, so a capped run over processes can wait for a slot where one process would not."""
    check_procs(load, procs)
    if procs == 1 or load.slots is None:
        return load
    if load.mode is LoadMode.CONCURRENCY:
        return Load(LoadMode.CONCURRENCY, concurrency=_part(load.slots, index, procs))
    return Load(LoadMode.CAPPED, rate_rps=load.rate_rps, max_concurrency=_part(load.slots, index, procs))
