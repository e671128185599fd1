"""The table of which option applies where (harness.cli.applies): it refuses exactly what the
per-command chains of checks refused before it, names what it refuses, and its rows name
real options of real commands.

OLD is the chains transcribed from the code the table replaced (harness/cli/run.py's
`run` and `compare`, sweep.py, llm.py, llm_url.py's `refuse`, alerts.py, canary.py,
analysis.py's `review` and `gate`, and the library checks `harness.analysis.sweep.run`
and `harness.live.plan` made on a URL): each (command, Where) and the options it refused
there. Every option of each command is tried at every Where the command reaches.
"""

from __future__ import annotations

import pytest
import typer.main
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import COMMANDS, app
from harness.cli.applies import (COMMAND_WHERE, OPTIONS, Driver, Kind, Mode, Where, accepted, given_options,
                                 refusal)

D, F, U, LU, LP = Kind.DESIGN, Kind.FRAMEWORK, Kind.URL, Kind.LLM_URL, Kind.LLM_POLICY
SIM, LIVE = Mode.SIM, Mode.LIVE
B, L = Driver.BUILTIN, Driver.LOCUST

_RUN_SIM = {"--scale", "--template", "--allow-remote", "--warmup", "--driver-procs", "--balancer", "--driver",
            "--server-metrics", "--server-metrics-url", "--tokenizer"}
_NOT_LLM_URLS = {"--model", "--template", "--allow-remote", "--api-key-env", "--server-metrics", "--server-metrics-url",
                 "--tokenizer"}  # compare: two LLM URLs only
_SWEEP_NOT_LLM = {"--workload", "--template", "--api-key-env", "--server-metrics", "--server-metrics-url",
                  "--tokenizer"}                # sweep: an LLM URL only
_LLM_COMPARE = {"--scale", "--warmup", "--driver-procs"}
_URL_ONLY = {"--server-metrics", "--server-metrics-url", "--tokenizer"}      # added with the table: LLM URLs only
_ALSO = {"--also"}  # compare: more LLM fleets beside A and B (added after the chains; sim and live)

OLD: dict[tuple[str, Where], set[str]] = {
    ("run", Where(D, SIM, B)): _RUN_SIM,
    ("run", Where(D, SIM, L)): _RUN_SIM,
    **{("run", Where(k, LIVE, B)): {"--seeds"} | _URL_ONLY for k in (D, F)},
    ("run", Where(U, LIVE, B)): {"--seeds", "--balancer"} | _URL_ONLY,  # harness.live.plan: not to a URL
    **{("run", Where(k, LIVE, L)): {"--seeds", "--balancer", "--driver-procs"} | _URL_ONLY for k in (D, F, U)},
    ("run", Where(LU, LIVE, B)): {"--seeds", "--jobs", "--scale", "--device", "--warmup", "--driver",
                                  "--workers"},   # --driver-procs: its conversations over processes, and
                                                  # --executor ray: over Ray actors (issue 37)
    ("compare", Where(D, SIM)): _NOT_LLM_URLS | {"--warmup", "--driver-procs", "--balancer"} | _ALSO,
    **{("compare", Where(k, LIVE)): _NOT_LLM_URLS | {"--seeds"} | _ALSO for k in (D, F)},
    ("compare", Where(LU, LIVE)): {"--seeds", "--jobs", "--scale", "--warmup"} | _ALSO,  # --driver-procs
    # too before issue 37: each side's conversations over processes now, as `run URL`'s
    ("compare", Where(LP, SIM)): _NOT_LLM_URLS | _LLM_COMPARE,
    ("compare", Where(LP, LIVE)): _NOT_LLM_URLS | _LLM_COMPARE | {"--seeds", "--jobs", "--executor"},
    ("sweep", Where(D, SIM)): _SWEEP_NOT_LLM | {"--warmup", "--driver-procs", "--balancer", "--repeats",
                                                "--confirm-failures"},  # added with it (issue 36): live only
    **{("sweep", Where(k, LIVE)): _SWEEP_NOT_LLM for k in (D, F)},
    ("sweep", Where(U, LIVE)): _SWEEP_NOT_LLM | {"--balancer"},  # harness.live.plan: not to a URL
    ("sweep", Where(LU, LIVE)): {"--check-capacity", "--send-lag-limit", "--scale", "--device", "--pad-to-s",
                                 "--warmup", "--repeats", "--confirm-failures"},  # --driver-procs too before issue 37
    ("gate", Where(LU, LIVE)): {"--seeds", "--jobs", "--executor"},
    ("alerts", Where(D, SIM)): {"--workload", "--prometheus", "--scale", "--duration", "--balancer", "--warmup"},
    ("alerts", Where(D, LIVE)): set(),
    ("canary", Where(D, SIM)): {"--rate"},
    ("canary", Where(D, LIVE)): {"--suite"},
    ("review", Where(D, SIM)): {"--scale", "--duration", "--warmup", "--flaw"},  # the last three added with them (issue 39)
    ("review", Where(F, LIVE)): set(),
}

_TREE = typer.main.get_command(app)

# sweep's --executor, added after the chains (issue 37): where an LLM URL's --driver-procs run; refused
# on every other kind of target.
for (_c, _w), _refused in OLD.items():
    if _c == "sweep" and _w.kind is not LU:
        _refused.add("--executor")

# Issue 37's LLM URL traffic options (harness.cli.llm_traffic), added after the chains: refused on
# every other kind of target, where a command has them.
_TRAFFIC = {"--dataset", "--dataset-format", "--concurrency", "--max-concurrency", "--think-time", "--prefix-tokens",
            "--prefix-groups"}
_HAS = {c: {next(o for o in p.opts if o.startswith("--")) for p in _TREE.commands[c].params
            if p.param_type_name == "option"} for c in ("run", "compare", "sweep")}
for (_c, _w), _refused in OLD.items():
    if _c in _HAS and _w.kind is not LU:
        _refused |= _TRAFFIC & _HAS[_c]
# ... but a sim compare of LLM fleets takes a data set as its day (workloads.dataset_days), open loop.
OLD[("compare", Where(LP, SIM))] -= _TRAFFIC - {"--concurrency", "--max-concurrency"}


def _options(command: str) -> list[str]:
    return [next(o for o in p.opts if o.startswith("--")) for p in _TREE.commands[command].params
            if p.param_type_name == "option" and "--help" not in p.opts]


def test_the_old_matrix_covers_every_where_a_dispatching_command_reaches() -> None:
    for command, wheres in COMMAND_WHERE.items():
        assert {w for c, w in OLD if c == command} == set(wheres), command


@pytest.mark.parametrize("command, w", sorted(OLD, key=str), ids=[f"{c} {w.kind.value} {w.mode.value} {w.driver.value}"
                                                                  for c, w in sorted(OLD, key=str)])
def test_the_table_refuses_exactly_what_the_old_chains_refused(command: str, w: Where) -> None:
    options = _options(command)
    assert OLD[(command, w)] <= set(options), "OLD names an option the command lacks"
    refused = {o for o in options if refusal(command, w, [o]) is not None}
    assert refused == OLD[(command, w)], (f"newly refused: {sorted(refused - OLD[(command, w)])}; "
                                          f"no longer refused: {sorted(OLD[(command, w)] - refused)}")


def test_every_row_names_a_real_option_and_every_command_key_a_command_that_has_it() -> None:
    having = {name: set(_options(name)) for name in COMMANDS}
    for opt in OPTIONS.values():
        assert any(opt.name in names for names in having.values()), f"{opt.name}: no command has it"
        for key in [*opt.per_command, *opt.tolerated, *opt.panel_in, *opt.say]:
            assert key == "*" or opt.name in having[key], f"{opt.name}: `harness {key}` has no such option"


_ALL_WHERES = sorted({w for _, w in OLD}, key=str)


@given(st.sampled_from(sorted({c for c, _ in OLD})), st.sampled_from(_ALL_WHERES),
       st.sets(st.sampled_from(sorted(OPTIONS))))
def test_a_refusal_names_what_is_refused_and_nothing_else(command: str, w: Where, chosen: set[str]) -> None:
    refused = [name for name in OPTIONS if name in chosen and w not in accepted(OPTIONS[name], command)]
    message = refusal(command, w, chosen)
    assert (message is None) == (not refused)
    if message is not None:
        assert "\n" not in message
        if ": not used by " in message:  # an LLM job lists every option it cannot honour, in the table's order
            assert message.split(": not used by ")[0] == ", ".join(refused)
        else:  # a job the harness drives names the first, and where it does apply
            assert message.startswith(refused[0] + " ")


def test_given_options_are_those_off_their_default() -> None:
    from harness.cli.run import run

    params = {"target": "naive", "seeds": 1, "executor": "process", "scale": 0.5, "allow_remote": True, "set_": [],
              "workers": 3, "driver": "builtin"}
    assert sorted(given_options(run, params)) == ["--allow-remote", "--scale", "--workers"]


runner = CliRunner()


@pytest.mark.parametrize("line, message", [
    ("alerts naive --scale 0.5", "--scale applies to --mode live only (this proof of the rules is sim)"),
    ("alerts naive --workload spike", "--workload applies to --mode live only"),
    ("alerts naive --prometheus", "--prometheus applies to --mode live only"),
    ("sweep naive --workload short", "--workload applies to a sweep of an LLM URL only"),
    ("sweep http://127.0.0.1:9/predict --mode live --balancer haproxy",
     "--balancer applies to a target the harness starts only"),
    ("compare llm-static llm-continuous --model m", "--model: not used by an LLM compare"),
    ("run http://127.0.0.1:9/v1/completions --driver locust --workers 3",
     "--driver, --workers: not used by an LLM URL"),
])
def test_the_commands_refuse_from_the_table(line: str, message: str) -> None:
    res = runner.invoke(app, line.split())
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert "Traceback" not in res.output
