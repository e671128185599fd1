"""A virtual-time asyncio event loop: the simulator's clock.

`VirtualTimeLoop.time()` returns a virtual clock that only moves when nothing is
ready to run: the loop then jumps straight to the next timer, so
`await asyncio.sleep(0.1)` costs no wall time and advances `loop.time()` by
exactly 0.1. The same asyncio code therefore runs unchanged in sim mode (this
loop) and in live mode (the ordinary loop, wall clock).

Contract:
- Deterministic: with no threads, sockets or wall-clock reads, the order of
  callbacks depends only on the program, so one seed gives one result.
- Loud: if tasks are still waiting but no timer is left (the simulation can
  never progress), `run_until_complete` raises `SimulationStalled`. Threads,
  executors, sockets and subprocesses raise `SimulationError` at once, since
  they would tie virtual time to the wall clock.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")


class SimulationError(RuntimeError):
    """Code tried something a virtual-time simulation cannot do."""


class SimulationStalled(SimulationError):
    """Tasks are waiting, yet no timer is left that could ever wake them."""


class _VirtualSelector:
    """Stands in for the OS selector: 'waiting' for `timeout` jumps the clock."""

    def __init__(self, loop: "VirtualTimeLoop") -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list:
        loop = self._loop
        if timeout is None:
            # Nothing ready and no timer: only an external event could wake
            # anything, and a simulation has none.
            if loop._stopping:
                return []
            raise SimulationStalled(
                f"simulation stalled at t={loop._now:.6f}s: "
                f"{len(asyncio.all_tasks(loop))} task(s) waiting and no timer left "
                "(a future that is never resolved, or a queue nobody feeds)"
            )
        if timeout > 0:
            # Jump exactly onto the next timer so it is due on this iteration.
            scheduled = loop._scheduled
            if scheduled:
                loop._now = max(loop._now, scheduled[0]._when)
            else:
                loop._now += timeout
        return []

    def close(self) -> None:
        pass


class VirtualTimeLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose `time()` is virtual seconds starting at `start_s`."""

    def __init__(self, start_s: float = 0.0) -> None:
        super().__init__()
        self._now = float(start_s)
        self._selector = _VirtualSelector(self)
        # Timers due within this much of now run together; keep it tiny so
        # that distinct virtual instants stay distinct.
        self._clock_resolution = 1e-9

    # -- the clock ---------------------------------------------------------
    def time(self) -> float:
        return self._now

    # -- hooks BaseEventLoop needs ------------------------------------------
    def _process_events(self, event_list: list) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # -- things that would tie virtual time to the wall clock ----------------
    def _forbidden(self, what: str) -> SimulationError:
        return SimulationError(
            f"{what} is not allowed in sim mode: it would tie virtual time to the "
            "wall clock (use live mode for real threads, sockets and processes)"
        )

    def run_in_executor(self, executor: Any, func: Callable, *args: Any) -> Any:
        raise self._forbidden("run_in_executor (threads)")

    def set_default_executor(self, executor: Any) -> None:
        raise self._forbidden("set_default_executor (threads)")

    def call_soon_threadsafe(self, callback: Callable, *args: Any, context: Any = None) -> Any:
        raise self._forbidden("call_soon_threadsafe (threads)")

    async def getaddrinfo(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("getaddrinfo (sockets)")

    async def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_connection (sockets)")

    async def create_server(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_server (sockets)")

    async def create_datagram_endpoint(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("create_datagram_endpoint (sockets)")

    async def subprocess_exec(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("subprocess_exec (processes)")

    async def subprocess_shell(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("subprocess_shell (processes)")

    def add_reader(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("add_reader (file descriptors)")

    def add_writer(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("add_writer (file descriptors)")

    def add_signal_handler(self, *args: Any, **kwargs: Any) -> Any:
        raise self._forbidden("add_signal_handler (signals)")

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        return None


def run_virtual(main: Coroutine[Any, Any, T], start_s: float = 0.0) -> T:
    """Run `main` to completion on a fresh virtual-time loop and close it.

    Tasks still pending when `main` returns are cancelled, so a simulation that
    stops at its horizon leaves nothing behind.
    """
    loop = VirtualTimeLoop(start_s)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        _cancel_pending(loop)
        asyncio.set_event_loop(None)
        loop.close()


def _cancel_pending(loop: VirtualTimeLoop) -> None:
    """Cancel what is left (a run stops at its horizon, or failed) and let the
    cancellations run, so nothing touches the loop after it is closed."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        try:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        except SimulationError:
            pass


__all__ = [
    "SimulationError",
    "SimulationStalled",
    "VirtualTimeLoop",
    "run_virtual",
]
