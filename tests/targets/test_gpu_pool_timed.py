"""A GPU pool times a cost model's batches on the loop's timers instead of running each in a
task (GpuPool._start). That is mechanism only: the same callbacks must run at the same
instants in the same order as through the task, kills and revivals included. Checked
against an executor whose `run_batch` is the cost model's own body in a subclass (so the
pool runs it in a task), with probes at the same instants to show any reordering."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.clock import run_virtual
from targets.executors import ModeledExecutor
from targets.gpu_pool import GpuPool
from targets.protocol import Attempt

STEP = 0.05  # every event on one grid, so batch ends meet probes and other events exactly


class TaskExecutor(ModeledExecutor):
    """The cost model's own `run_batch`, overridden: the pool then runs it in a task."""

    async def run_batch(self, batch: list[Attempt]) -> list | None:
        await asyncio.sleep(self.expected_s(batch))
        return None


def _trace(executor_class: type[ModeledExecutor], gpus: int, plan: list[tuple[int, str, int]],
           failure_handling: bool) -> list[tuple[float, str, int]]:
    out: list[tuple[float, str, int]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pool: GpuPool

        def done(batch: list[Attempt], outputs: list | None, seconds: float) -> None:
            out.append((loop.time(), "done", batch[0].uid))
            loop.call_soon(out.append, (loop.time(), "after-done", batch[0].uid))

        def redispatch(batch: list[Attempt]) -> None:
            out.append((loop.time(), "redispatch", batch[0].uid))
            pool.submit(batch)

        pool = GpuPool(gpus, lambda i: executor_class(lambda b, length: STEP * b), on_done=done,
                       failure_handling=failure_handling, redispatch=redispatch,
                       on_lost=lambda a: out.append((loop.time(), "lost", a.uid)))
        def probe(i: int) -> None:
            out.append((loop.time(), "probe", i))
            # Within the loop's resolution of now: run by a further turn at this instant if
            # anything asked for one (the clock then still reads now), else once the clock
            # has moved to it: a turn of the loop more or less shows here.
            loop.call_at(loop.time() + 1e-10, lambda: out.append((loop.time(), "near", i)))

        for i, (tick, what, n) in enumerate(plan):
            if what == "submit":
                batch = [Attempt(uid=i * 100 + k, tenant="t", conn=0, content=0, variant=0, size=64, sent_s=0.0, attempt_no=0)
                         for k in range(n)]
                loop.call_at(tick * STEP, pool.submit, batch)
            elif what == "kill":
                loop.call_at(tick * STEP, lambda n=n: out.append((loop.time(), "killed", len(pool.kill(n)))))
            else:
                loop.call_at(tick * STEP, pool.revive)
            loop.call_at(tick * STEP, probe, i)
        await asyncio.sleep(len(plan) * STEP + 10)

    run_virtual(main())
    return out


PLAN = st.lists(
    st.tuples(st.integers(0, 40), st.sampled_from(["submit", "submit", "submit", "kill", "revive"]), st.integers(1, 3)),
    min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(plan=PLAN, gpus=st.integers(1, 3), failure_handling=st.booleans())
def test_a_cost_models_batches_on_timers_run_as_they_would_in_tasks(plan, gpus, failure_handling):
    assert ModeledExecutor(lambda b, length: 0.1).only_sleeps and not TaskExecutor(lambda b, length: 0.1).only_sleeps
    timed = _trace(ModeledExecutor, gpus, plan, failure_handling)
    tasked = _trace(TaskExecutor, gpus, plan, failure_handling)
    assert timed == tasked
    assert sum(1 for e in timed if e[1] == "done") == sum(1 for e in tasked if e[1] == "done")
