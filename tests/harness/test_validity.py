"""harness.live.validity: when a live run's figures are the driver's, not the target's.

Table-driven over the figures a run records; no server, no clock.
"""

from __future__ import annotations

import pytest

from harness.live.validity import Fault, Limits, first_error, invalid_reasons, judge, machine_busy

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
     ["driver fell behind: 272 of 1,000 requests sent over 10 ms late (27.2% > 1%); send lag p99 19.6 ms"]),
    # written 1 s after schedule while sent on time => the target held the connections: its
    # overload (a finding, judge() below), not the driver's: valid
    (live(write_lag_s={"p99": 1.0}, waited_for_connection=11405), 12494, 1460, 11271, []),
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
    # all at once: each reason on its own line (the held connections are the target's: judge() below)
    (live(send_lag_s={"p99": 0.05}, write_lag_s={"p99": 0.9}, driver_cpu_share=0.99), 10, 0, 10,
     ["nothing succeeded", "driver fell behind", "driver CPU saturated"]),
]


@pytest.mark.parametrize("block, attempts, succeeded, unique, expected", CASES)
def test_invalid_reasons(block, attempts, succeeded, unique, expected) -> None:
    reasons = invalid_reasons(block, attempts, succeeded, unique)
    assert len(reasons) == len(expected), reasons
    for got, want in zip(reasons, expected):
        assert got.startswith(want), (got, want)


# The share rule and the tail rule: (send lag figures, sends over 10 ms late, sends) -> the reason's
# start (None: the driver kept up). The issue's step: p99 5.6 ms, 18 of 7,529 late, 100% in the SLO.
ISSUE = {"p50": 0.0004, "p99": 0.0056, "p999": 0.021, "max": 0.034}
LATE = [
    # 18 of 7,529 sends over 10 ms late (0.24% <= 1%), p99.9 21 ms <= 50 ms => a hiccup: valid
    (ISSUE, 18, 7529, None),
    # 76 of 7,529 (1.01% > 1%) => the rate was not offered on time
    ({**ISSUE, "p99": 0.0102}, 76, 7529, "driver fell behind: 76 of 7,529 requests sent over 10 ms late (1.0% > 1%)"),
    # 75 of 7,529 (0.996%): just within the share
    ({**ISSUE, "p99": 0.0099}, 75, 7529, None),
    # 30 late sends (0.4%), but one in a thousand 80 ms late => a stall that sent a burst
    ({**ISSUE, "p999": 0.080, "max": 0.090}, 30, 7529, "driver fell behind: send lag p99.9 80.0 ms > 50.0 ms (a stall)"),
    # nothing late at all => valid
    ({"p50": 0.0002, "p99": 0.001, "p999": 0.002, "max": 0.003}, 0, 7529, None),
    # a saved block with no late count: its p99 against 10 ms, as before the share was counted
    ({"p99": 0.012}, None, None, "driver fell behind: send lag p99 12.0 ms > 10.0 ms"),
    ({"p99": 0.009}, None, None, None),
]


@pytest.mark.parametrize("lag, late, sends, expected", LATE)
def test_a_few_late_sends_do_not_void_a_run_but_a_share_or_a_stall_does(lag, late, sends, expected) -> None:
    block = live(send_lag_s=lag, **({} if late is None else {"late_over_10ms": late, "sends_measured": sends}))
    reasons = [r for r in invalid_reasons(block, sends or 7529, 7529, 7529) if r.startswith("driver fell")]
    if expected is None:
        assert reasons == []
    else:
        assert len(reasons) == 1 and reasons[0].startswith(expected), reasons


def test_the_share_counts_sends_or_else_attempts() -> None:
    # no sends_measured (a merged block of old): the attempts are the denominator
    block = live(send_lag_s=ISSUE, late_over_10ms=18)
    assert invalid_reasons(block, 7529, 7529, 7529) == []
    assert invalid_reasons(block, 1000, 1000, 1000)[0].startswith("driver fell behind: 18 of 1,000")


def test_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="late_share"):
        Limits(late_share=1.5)
    with pytest.raises(ValueError, match="send_lag_p999_s"):
        Limits(send_lag_p999_s=0)


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


# Who is at fault. (live block, attempts, succeeded, unique) -> fault, findings, reasons, remedies
# (each the start of the line, in order). A framework's spike on 2 cores gives all four shapes.
OVERLOADED = dict(write_lag_s={"p99": 0.997}, waited_for_connection=82446, max_open_connections=4000,
                  connection_cap=4000)
FAULTS = [
    # driver on time, target answered fast => nobody's fault, nothing to say
    (live(), Fault.NONE, [], [], []),
    # driver on time (send lag 2 ms), target held all 4,000 connections the driver may open and
    # requests waited 1 s for one => the target's overload: valid, said as a finding
    (live(**OVERLOADED), Fault.TARGET,
     ["target overloaded: it held up to 4,000 connections open at once: every connection the driver may open "
      "(4,000) with requests it had not answered; 82,446 attempts found no free connection"], [], []),
    # connections held below the cap (a slow target, the driver never at its limit) => still the target's
    (live(write_lag_s={"p99": 0.5}, waited_for_connection=900, max_open_connections=850, connection_cap=4000),
     Fault.TARGET, ["target overloaded: it held up to 850 connections open at once with requests"], [], []),
    # driver 49 ms late with the machine 71% busy, the target quick => the driver's: invalid
    (live(send_lag_s={"p99": 0.049}, write_lag_s={"p99": 0.05}, machine_cpu_busy=0.71, machine_cpus=2),
     Fault.DRIVER, [], ["driver fell behind: send lag p99 49.0 ms"], ["drive from a second machine"]),
    # both (the issue's LitServe spike): driver 49 ms late on a 100%-busy machine and the target holding
    # every connection => invalid for the driver, and the target's overload said too; pin or move the driver
    (live(send_lag_s={"p99": 0.049}, machine_cpu_busy=1.0, machine_cpus=2, **OVERLOADED), Fault.BOTH,
     ["target overloaded: it held up to 4,000"], ["driver fell behind: send lag p99 49.0 ms"],
     ["keep the target's processes off the driver's core", "drive from a second machine"]),
    # the driver's own CPU saturated => split it over processes first
    (live(driver_cpu_share=0.97), Fault.DRIVER, [], ["driver CPU saturated: 97% of a core"],
     ["split the driver over processes: --driver-procs 2", "drive from a second machine"]),
]


@pytest.mark.parametrize("block, fault, findings, reasons, remedies", FAULTS)
def test_judge_names_who_is_at_fault(block, fault, findings, reasons, remedies) -> None:
    j = judge(block, 100_000, 20_000, 90_000)
    assert j.fault is fault
    assert j.valid is (fault in (Fault.NONE, Fault.TARGET))
    for got, want in ((j.target_findings, findings), (j.invalid_reasons, reasons), (j.remedies, remedies)):
        assert len(got) == len(want), got
        for line, start in zip(got, want):
            assert line.startswith(start), (line, start)


def test_judge_keeps_the_driver_lag_apart_from_the_connection_wait() -> None:
    # 30 ms of send lag and 35 ms written: 5 ms of connection wait is within the 10 ms allowed,
    # so the target held nothing; the lag is the driver's alone
    j = judge(live(send_lag_s={"p99": 0.030}, write_lag_s={"p99": 0.035}), 1000, 990, 1000)
    assert j.fault is Fault.DRIVER and j.target_findings == []


def test_judgement_block_is_plain_json() -> None:
    block = judge(live(**OVERLOADED), 1000, 990, 1000).to_json()
    assert block["fault"] == "target" and block["remedies"] == [] and len(block["target_findings"]) == 1
