"""Step-machine tests of the pool policies: no event loop, no clock, no sleeping."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.gang_schedulers import (
    Decision, GangReservePolicy, GpuSlot, ModelKind, ModelSpec, PoolSpec, PoolState,
    ProportionalPolicy, QueueView, TimeSlicePolicy, batch_due, create_policy, due_at_s,
    policy_names,
)

L, S = ModelKind.LARGE, ModelKind.SMALL
SPEC = PoolSpec(large=ModelSpec(10.0, 8, 0.2), small=ModelSpec(2000.0, 32, 0.05), slo_s=1.0)


def state(slots: list[GpuSlot | None], large: QueueView = QueueView(),
          small: QueueView = QueueView()) -> PoolState:
    return PoolState(tuple(slots), large, small)


FREE8: list[GpuSlot | None] = [None] * 8


# --- spec arithmetic, hand-computed -------------------------------------------------

def test_gpu_time_cost_per_request() -> None:
    # large: 8 GPUs x 0.2 s / 8 requests = 0.2 GPU-s; small: 1 x 0.05 / 32 = 0.0015625
    assert SPEC.gpu_s_per_request(L) == pytest.approx(0.2)
    assert SPEC.gpu_s_per_request(S) == pytest.approx(0.0015625)
    assert SPEC.gpu_s_per_request(L) / SPEC.gpu_s_per_request(S) == pytest.approx(128)


def test_a_pool_spec_survives_pickling() -> None:
    # A pool's config goes to worker processes; compiled, a frozen class pickles by its fields (__reduce__)
    spec = PoolSpec(large=ModelSpec(10.0, 8, 0.2), small=ModelSpec(2000.0, 32, 0.05), slo_s=1.0, gpus=6,
                    wait_fraction=0.25)
    back = pickle.loads(pickle.dumps(spec))
    assert back == spec and back.gpus == 6 and back.wait_fraction == 0.25 and back.small.batch_size == 32


def test_max_wait_is_a_fraction_of_the_slo_slack() -> None:
    assert SPEC.max_wait_s(L) == pytest.approx(0.5 * (1.0 - 0.2))  # 0.4 s
    assert SPEC.max_wait_s(S) == pytest.approx(0.5 * (1.0 - 0.05))  # 0.475 s
    tight = PoolSpec(SPEC.large, SPEC.small, slo_s=0.1)
    assert tight.max_wait_s(L) == 0.0  # SLO below the batch time: no waiting at all


@pytest.mark.parametrize("q, now, due", [
    (QueueView(0), 5.0, False),            # empty queue is never due
    (QueueView(8, 4.9), 4.9, True),        # full batch: due at once
    (QueueView(3, 1.0), 1.39, False),      # 0.39 s waited < 0.4 s timer
    (QueueView(3, 1.0), 1.4, True),        # timer reached
])
def test_batch_due(q: QueueView, now: float, due: bool) -> None:
    assert batch_due(q, 8, 0.4, now) is due


def test_due_at() -> None:
    assert due_at_s(QueueView(0), 8, 0.4) is None
    assert due_at_s(QueueView(3, 1.0), 8, 0.4) == pytest.approx(1.4)
    assert due_at_s(QueueView(9, 1.0), 8, 0.4) == 1.0


@pytest.mark.parametrize("kwargs", [
    dict(rate_rps=-1.0, batch_size=8, batch_time_s=0.2),
    dict(rate_rps=1.0, batch_size=0, batch_time_s=0.2),
    dict(rate_rps=1.0, batch_size=8, batch_time_s=0.0),
    dict(rate_rps=math.inf, batch_size=8, batch_time_s=0.2),
])
def test_model_spec_validates(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        ModelSpec(**kwargs)


def test_registry_lists_valid_names_on_error() -> None:
    assert policy_names()[0] == "proportional"
    assert {"proportional", "gang-reserve", "time-slice", "slack-reserve"} <= set(policy_names())
    with pytest.raises(ValueError, match="valid: proportional, gang-reserve"):
        create_policy("round-robin", SPEC)
    assert all(create_policy(n, SPEC).name == n for n in policy_names())


# --- exact decisions ------------------------------------------------------------------

def test_proportional_tie_goes_to_the_large_model() -> None:
    p = ProportionalPolicy(SPEC)
    d = p.schedule(state(FREE8, QueueView(8, 0.0), QueueView(32, 0.0)), 0.0)
    assert [s.model for s in d.starts] == [L]
    assert d.starts[0].gpus == tuple(range(8)) and d.starts[0].size == 8


def test_proportional_gives_free_gpus_to_small_while_large_waits_for_all_eight() -> None:
    p = ProportionalPolicy(SPEC)
    busy = [GpuSlot(S, 0.03)] * 3 + [None] * 5
    d = p.schedule(state(busy, QueueView(8, 0.0), QueueView(64, 0.0)), 0.01)
    # The large batch is due and first in line, but only 5 GPUs are free: the doc's
    # dispatcher reserves nothing, so due small batches take them.
    assert [s.model for s in d.starts] == [S, S]
    assert d.reservation_s is None
    # Its turn is kept: the moment all 8 are free it goes first.
    d = p.schedule(state(FREE8, QueueView(8, 0.0), QueueView(64, 0.0)), 0.05)
    assert [s.model for s in d.starts] == [L]


def test_gang_reserve_drains_and_backfills_only_before_the_reservation() -> None:
    p = GangReservePolicy(SPEC)
    due_large = QueueView(3, 0.0)  # waited 0.5 s >= 0.4 s threshold at now=0.5
    busy = [GpuSlot(S, 0.53), GpuSlot(S, 0.54)] + [None] * 6
    d = p.schedule(state(busy, due_large, QueueView(64, 0.4)), 0.5)
    # drains at 0.54; a small batch would end at 0.55 > 0.54: no backfill
    assert d.starts == () and d.reservation_s == pytest.approx(0.54)
    long_busy = [GpuSlot(S, 0.6)] + [None] * 7
    d = p.schedule(state(long_busy, due_large, QueueView(64, 0.4)), 0.5)
    # drains at 0.6; small batches ending at 0.55 fit: backfill on the free GPUs
    assert [s.gpus for s in d.starts] == [(1,), (2,)] and d.reservation_s == pytest.approx(0.6)
    d = p.schedule(state(FREE8, due_large, QueueView(64, 0.4)), 0.6)
    assert [(s.model, s.size) for s in d.starts] == [(L, 3)]


def test_gang_reserve_runs_small_freely_until_large_is_due() -> None:
    p = GangReservePolicy(SPEC)
    d = p.schedule(state(FREE8, QueueView(3, 0.0), QueueView(40, 0.0)), 0.1)
    assert [(s.model, s.size) for s in d.starts] == [(S, 32)]  # 8 left, not due by size
    assert d.wake_at_s == pytest.approx(0.4) and d.reservation_s is None


def test_time_slice_cycle_and_guard() -> None:
    p = TimeSlicePolicy(SPEC)
    assert p.cycle_s == pytest.approx(0.4)  # (1.0 - 0.2) / 2
    d = p.schedule(state(FREE8, QueueView(2, 0.5), QueueView(64, 0.3)), 0.8)
    assert [s.model for s in d.starts] == [L]  # slot boundary 0.8
    # 0.37 + 0.05 > 0.4: a small batch would run into the next slot
    d = p.schedule(state(FREE8, QueueView(), QueueView(64, 0.0)), 0.37)
    assert d.starts == () and d.wake_at_s == pytest.approx(0.4)
    with pytest.raises(ValueError, match="cycle_s"):
        TimeSlicePolicy(SPEC, cycle_s=0.2)


# --- invariants over arbitrary states ----------------------------------------------

@st.composite
def pool_states(draw: st.DrawFn) -> tuple[PoolState, float]:
    now = draw(st.floats(0.0, 50.0))
    if draw(st.booleans()) and draw(st.booleans()):  # a large batch holds all 8 GPUs
        end = now + draw(st.floats(0.001, 0.2))
        slots: list[GpuSlot | None] = [GpuSlot(L, end)] * 8
    else:
        slots = [draw(st.one_of(st.none(), st.builds(
            GpuSlot, st.just(S), st.floats(now + 0.001, now + 0.05)))) for _ in range(8)]

    def queue() -> QueueView:
        n = draw(st.integers(0, 100))
        return QueueView(n, now - draw(st.floats(0.0, 2.0))) if n else QueueView()

    return PoolState(tuple(slots), queue(), queue()), now


def check_decision(spec: PoolSpec, s: PoolState, now: float, d: Decision) -> None:
    free = set(s.free_gpus())
    used: set[int] = set()
    taken = {L: 0, S: 0}
    for start in d.starts:
        m = spec.model(start.model)
        assert start.start_s == now and start.end_s == pytest.approx(now + m.batch_time_s)
        assert set(start.gpus) <= free and not used & set(start.gpus), "GPU double-booked"
        used |= set(start.gpus)
        if start.model is L:
            assert len(free) == 8 and start.gpus == tuple(range(8)), "gang needs all 8 free"
        else:
            assert len(start.gpus) == 1
        assert 1 <= start.size <= m.batch_size
        taken[start.model] += start.size
        if d.reservation_s is not None and start.model is S:
            assert start.end_s <= d.reservation_s, "backfill would delay the reservation"
    assert taken[L] <= s.large.length and taken[S] <= s.small.length
    assert d.wake_at_s is None or d.wake_at_s > now
    assert d.reservation_s is None or d.reservation_s >= now


@settings(max_examples=60, deadline=None)
@given(pool_states(), st.sampled_from(policy_names()))
def test_every_decision_respects_the_pool(sn: tuple[PoolState, float], name: str) -> None:
    s, now = sn
    check_decision(SPEC, s, now, create_policy(name, SPEC).schedule(s, now))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(pool_states(), min_size=1, max_size=20))
def test_proportional_stays_valid_across_a_sequence_of_calls(seq: list) -> None:
    p = create_policy("proportional", SPEC)  # carries pass counters between calls
    for s, now in seq:
        check_decision(SPEC, s, now, p.schedule(s, now))
