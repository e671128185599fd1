"""Scenario files declare the figures that answer their question; bad ones name file, key, problem."""

from __future__ import annotations

import pytest

from workloads.answers import figure_spec, select_tenants
from workloads.loader import ConfigError, load_suite, load_workload, scenario_names

PHASES = 'phases = [{kind = "constant", duration_s = 10, rate_rps = 5}]\n'
TENANTS = '[[tenants]]\nname = "big"\nshare = 0.6\n[[tenants]]\nname = "small0"\nshare = 0.4\n'


def scenario(answers: str) -> str:
    return PHASES + answers + "\n" + TENANTS


def test_every_builtin_scenario_declares_its_answers():
    for name in scenario_names():
        wl = load_workload(name)
        assert wl.answers, f"{name} declares no [[answers]]"
        for answer in wl.answers:
            assert answer.title and answer.direction in ("higher", "lower")


def test_the_suites_scenarios_ask_what_the_issue_asks():
    figures = {name: [a.figure for a in load_workload(name).answers] for name in load_suite("bad-day")}
    assert figures["dominant-tenant"] == ["tenants.!big.goodput_ratio", "tenants.!big.p99_ok_s"]
    for name in ("spike", "slowdown"):
        assert {"recovery.recovered_after_s", "amplification"} <= set(figures[name])
    assert "requests.lost" in figures["gpu-outage"]
    for name in ("cacheable", "unique"):
        assert {"cache.hit_rate", "cache.gpu_s_saved"} <= set(figures[name])
    for name in ("low-traffic", "night"):
        assert figures[name][0] == "latency_ok_s.p50"


def test_tenant_selectors():
    names = ["big", "small0", "small1"]
    assert select_tenants("!big", names) == ["small0", "small1"]
    assert select_tenants("small*", names) == ["small0", "small1"]
    assert select_tenants("*", names) == names
    assert select_tenants("big", names) == ["big"]
    assert figure_spec("tenants.small*.goodput_ratio").better == "higher"


@pytest.mark.parametrize("answers, key, problem", [
    ('[[answers]]\nfigure = "goodput"', "answers[0].figure", "unknown figure 'goodput'"),
    ('[[answers]]\nfigure = "latency_s.p42"', "answers[0].figure", "valid are goodput_ratio"),
    ('[[answers]]\nfigure = "tenants.!big.p77_s"', "answers[0].figure", "unknown tenant figure 'p77_s'"),
    ('[[answers]]\nfigure = "amplification"\nbetter = "more"', "answers[0].better", "'higher' or 'lower'"),
    ('[[answers]]\nfigure = "amplification"\ntie = -1', "answers[0].tie", "greater than or equal to 0"),
    ('[[answers]]\nfigure = "amplification"\ncolour = "red"', "answers[0].colour", "Extra inputs"),
    ('[[answers]]\nfigure = "amplification"\n[[answers]]\nfigure = "tenants.!bog.goodput_ratio"',
     "answers", "answers[1].figure 'tenants.!bog.goodput_ratio': 'bog' is not a tenant (tenants: big, small0)"),
    ('[[answers]]\nfigure = "tenants.tiny*.p99_ok_s"', "answers", "'tiny*' matches no tenant"),
    ('answers = "goodput_ratio"', "answers", "valid"),
])
def test_bad_answers_name_file_key_and_problem(tmp_path, answers, key, problem):
    path = tmp_path / "bad.toml"
    path.write_text(scenario(answers))
    with pytest.raises(ConfigError) as exc:
        load_workload(str(path))
    msg = str(exc.value)
    assert str(path) in msg and f"key '{key}'" in msg and problem in msg, msg


def test_a_good_answer_loads(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(scenario('[[answers]]\nfigure = "tenants.!big.goodput_ratio"\nlabel = "small ones"'))
    (answer,) = load_workload(str(path)).answers
    assert (answer.title, answer.direction, answer.spec.unit.value) == ("small ones", "higher", "ratio")
