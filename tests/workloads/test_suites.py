"""Suite files: workload scenarios, canary rollouts, and errors that name file, key and problem."""

from pathlib import Path

import pytest

from workloads.loader import ConfigError, load_suite, load_suite_config, suite_durations, suite_names


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


def test_the_canary_suite_lists_the_careful_plan_on_four_days_and_no_workloads() -> None:
    suite = load_suite_config("canary")
    assert suite.rollouts == [("careful", "good"), ("careful", "slow"), ("careful", "erroring"), ("careful", "wrong")]
    assert suite.scenarios == () and "canary" in suite_names()
    with pytest.raises(ConfigError, match="harness canary --suite canary"):
        load_suite("canary")  # what compare, rank and alerts call: no workloads to run


def test_a_mixed_suite_gives_workload_commands_only_its_scenarios(tmp_path) -> None:
    path = write(tmp_path, 'scenarios = ["steady", "night"]\n[durations]\nsteady = 5\n'
                           '[[canary]]\nplan = "fast"\ndays = ["slow"]\n')
    assert load_suite(path) == ["steady", "night"]
    assert suite_durations(path) == {"steady": 5.0}
    assert load_suite_config(path).rollouts == [("fast", "slow")]
    assert load_suite("bad-day")[0] == "steady" and suite_durations("bad-day") == {"steady": 20.0}


@pytest.mark.parametrize("body, key, problem", [
    ('[[canary]]\nplan = "carefull"\ndays = ["slow"]', "canary[0].plan", "unknown canary plan 'carefull'"),
    ('[[canary]]\nplan = "careful"\ndays = ["sluggish"]', "canary[0].days", "unknown canary day(s) sluggish"),
    ('[[canary]]\nplan = "careful"\ndays = []', "canary[0].days", "at least 1"),
    ('[[canary]]\nplan = "careful"', "canary[0].days", "required"),
    ('[[canary]]\nplan = "careful"\nday = "slow"\ndays = ["slow"]', "canary[0].day", "not permitted"),
    ('[[canary]]\nplan = "careful"\ndays = ["slow", "slow"]', "canary[0].days", "listed twice"),
    ('[[canary]]\nplan = "fast"\ndays = ["slow"]\n[[canary]]\nplan = "fast"\ndays = ["good", "slow"]',
     "canary", "listed twice: fast on slow"),
    ('scenarios = ["steady"]\n[durations]\nnight = 5', "durations", "not one of the suite's scenarios"),
    ('scenarios = ["steady"]\n[durations]\nsteady = 0', "durations.steady", "greater than 0"),
    ('scenarios = ["steady", "nowhere"]', "scenarios[1]", "unknown workload 'nowhere'"),
    ('scenarios = "steady"', "scenarios", "valid tuple"),
    ('description = "empty"', "(top level)", "neither"),
    ('senarios = ["steady"]', "senarios", "not permitted"),
])
def test_malformed_suites_name_file_key_and_problem(tmp_path, body: str, key: str, problem: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_suite_config(path)
    assert f"{path}: key '{key}'" in str(exc.value) and problem in str(exc.value), str(exc.value)
