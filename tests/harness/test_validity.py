"""harness.live.validity: when a live run's figures are the driver's, not the target's.

Table-driven over the figures a run records; no server, no clock.
"""

from __future__ import annotations

import pytest

from harness.live.validity import Limits, first_error, invalid_reasons, machine_busy

KEPT_UP = {"send_lag_s": {"p99": 0.002}, "write_lag_s": {"p99": 0.003}, "waited_for_connection": 40,
           "driver_cpu_share": 0.35, "connection_errors": {"count": 0, "first": None},
           "http_status": {"200": 990, "503": 10}, "http_errors": {"503": "overloaded: queue full"}}


def live(**changes):
    return {**KEPT_UP, **changes}


# (live block, attempts, succeeded, unique) -> the start of each reason, in order
CASES = [
    # a driver that kept its schedule, reached the target, and had CPU to spare => valid
    (live(), 1000, 990, 1000, []),
    # p99 send lag 19.6 ms > 10 ms => the schedule the target saw was not the workload's
    (live(send_lag_s={"p99": 0.0196}, write_lag_s={"p99": 0.02}, late_over_10ms=272), 1000, 990, 1000,
     ["driver fell behind: send lag p99 19.6 ms > 10.0 ms (272 requests sent over 10 ms late)"]),
    # written 1 s after schedule while sent on time => waited for connections: less load than offered
    (live(write_lag_s={"p99": 1.0}, waited_for_connection=11405), 12494, 1460, 11271,
     ["requests waited for a connection: p99 written 1,000 ms"]),
    # 9.5 ms of connection wait beyond a 2 ms send lag is within the 10 ms allowed => valid
    (live(write_lag_s={"p99": 0.0115}), 1000, 990, 1000, []),
    # the driver process busy 95% of a core during the drive => no headroom to keep time
    (live(driver_cpu_share=0.95), 1000, 990, 1000, ["driver CPU saturated: 95% of a core"]),
    # 5 connects refused for 1000 attempts (0.5%) => within the 1% allowed
    (live(connect_failures=5, first_connect_failure="cannot connect"), 1000, 990, 1000, []),
    # 50 for 1000 (5%) => the target was unreachable for part of the run
    (live(connect_failures=50, first_connect_failure="cannot connect to 127.0.0.1:9: Connection refused"),
     1000, 950, 1000, ["could not reach the target: 50 connection attempts failed, for 1,000 requests sent "
                       "(first: cannot connect to 127.0.0.1:9: Connection refused)"]),
    # 329 connections reset by the target mid-request => its own behaviour, in its figures: valid
    (live(connection_errors={"count": 329, "first": "connection closed by the server: Connection reset by peer"}),
     9035, 4665, 7842, []),
    # every request refused with a 422 => nothing succeeded, and why
    (live(http_status={"422": 303}, http_errors={"422": "invalid input: field 'input' is missing"}), 303, 0, 303,
     ["nothing succeeded: HTTP 422 (303 responses): invalid input: field 'input' is missing"]),
    # all at once: each reason on its own line
    (live(send_lag_s={"p99": 0.05}, write_lag_s={"p99": 0.9}, driver_cpu_share=0.99), 10, 0, 10,
     ["nothing succeeded", "driver fell behind", "requests waited for a connection", "driver CPU saturated"]),
]


@pytest.mark.parametrize("block, attempts, succeeded, unique, expected", CASES)
def test_invalid_reasons(block, attempts, succeeded, unique, expected) -> None:
    reasons = invalid_reasons(block, attempts, succeeded, unique)
    assert len(reasons) == len(expected), reasons
    for got, want in zip(reasons, expected):
        assert got.startswith(want), (got, want)


def test_limits_are_the_users_to_set() -> None:
    strict = Limits(send_lag_p99_s=0.001)
    assert invalid_reasons(live(), 1000, 990, 1000, strict)[0].startswith("driver fell behind: send lag p99 2.0 ms")


def test_the_machine_is_named_when_the_driver_fell_behind() -> None:
    block = live(send_lag_s={"p99": 0.03}, write_lag_s={"p99": 0.03}, machine_cpu_busy=0.98, machine_cpus=2)
    assert "the machine's 2 core(s) were 98% busy" in invalid_reasons(block, 10, 10, 10)[0]


def test_first_error_prefers_the_connection_then_the_commonest_status() -> None:
    assert first_error(live()) == "HTTP 503 (10 responses): overloaded: queue full"
    assert first_error(live(connection_errors={"count": 2, "first": "reset"})) == "reset"
    assert first_error(live(http_status={"200": 5})) is None


def test_machine_busy_reads_tick_deltas() -> None:
    assert machine_busy((100, 400), (250, 600)) == pytest.approx(0.75)
    assert machine_busy(None, (1, 2)) is None and machine_busy((5, 10), (5, 10)) is None
