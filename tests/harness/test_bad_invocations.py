"""Every input checked: bad invocations end before any work, in one line, with exit 2.

Each row is a command line a user might type and the text its error must
contain (the option, file or key at fault). All run in-process through typer's
CliRunner; none reaches a server, a sim or torch, so the table runs in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

runner = CliRunner()
CI = "harness/gate/ci.toml"

# (command line; {tmp} is a fresh folder holding both.toml, same-pair.toml, broken.json and dir/) -> text naming the fault
BAD: list[tuple[str, str]] = [
    # run: numbers
    ("run naive --rate -5", "--rate must be > 0"),
    ("run naive --rate 0", "--rate must be > 0"),
    ("run naive --rate nan", "--rate must be a finite number"),
    ("run naive --duration -3", "--duration must be > 0"),
    ("run naive --duration 0", "--duration must be > 0"),
    ("run naive --seed -1", "--seed must be >= 0"),
    ("run naive --mode live --driver-procs 0", "--driver-procs must be >= 1"),
    ("run naive --driver-procs 2", "--driver-procs applies to --mode live only"),
    ("run naive --mode live --driver locust --driver-procs 2", "--driver-procs applies to --driver builtin"),
    ("compare naive hardened -w steady --driver-procs 2", "--driver-procs applies to --mode live only"),
    ("sweep hardened --driver-procs 2", "--driver-procs applies to --mode live only"),
    # run: names, knobs and design files
    ("run naive --mode xyz", "--mode 'xyz': valid are sim, live"),
    # serve a live LLM fleet
    ("serve llm-fleet:router=sglang:nope,replicas=2", "sglang policy 'nope' is not one of round_robin"),
    ("serve llm-fleet:router=prefix,replicas=20", "at most 8"),
    ("serve llm-fleet:router=nope", "unknown router 'nope'"),
    ("serve llm-fleet:router=prefix --host 0.0.0.0", "binds 127.0.0.1 only"),
    ("serve llm-fleet:router=prefix --balancer haproxy", "--balancer: not used by an LLM fleet"),
    ("run naive --set cost_table=/nope.json", "key 'cost_table': Value error, no such file '/nope.json'"),
    ("run naive --set cost_model=table --set cost_table=/nope.json", "key 'cost_table'"),
    ("run naive --set cost_model=table", "needs cost_table"),
    ("run naive --set nonsense=1", "key 'nonsense': not a target knob"),
    ("run naive --set gpus=0", "key 'gpus'"),
    ("run naive --set gpus", "--set: 'gpus' is not KEY=VALUE"),
    ("run naive -w nope", "unknown workload 'nope'"),
    ("run hardend", "unknown target 'hardend'"),
    ("run {tmp}/both.toml", "keys 'add' and 'fix' both name 'blind-retries'"),
    ("run naive-blind-retries+blind-retries", "both puts back and fixes 'blind-retries'"),
    ("run naive --out {tmp}/dir", "--out {tmp}/dir: is a directory"),
    # run: live-only options and URL targets
    ("run http://127.0.0.1:1/predict", "is a URL: a URL target is driven over HTTP, so add --mode live"),
    ("run naive --scale 0.5", "--scale applies to --mode live only"),
    ("run naive --mode live --scale 0", "--scale must be > 0"),
    ("run naive --mode live --scale -1", "--scale must be > 0"),
    ("run naive --mode live --scale 1.5", "--scale must be <= 1"),
    ("run naive --mode live --model resnet", "--model 'resnet': valid are mlp, cnn, transformer"),
    ("run naive --mode live --device tpu", "--device 'tpu'"),
    ("run http://127.0.0.1:1/predict --mode live --template /nope.json", "--template /nope.json: no such file"),
    ("run http://127.0.0.1:1/predict --mode live --template {tmp}/broken.json",
     "--template {tmp}/broken.json: request template does not give valid JSON"),
    # canary, live
    ("canary careful --mode xyz", "--mode 'xyz'"),
    ("canary careful --rate 100", "--rate applies to --mode live only"),
    ("canary careful --mode live --rate 0", "--rate must be > 0"),
    ("canary careful --mode live --day good-during-spike", "unknown live canary day(s) good-during-spike"),
    ("canary --suite canary --mode live", "--suite runs in sim only"),
    # compare
    ("compare naive hardened -j 0", "--jobs must be >= 1"),
    ("compare naive hardened --jobs -2", "--jobs must be >= 1"),
    ("compare naive hardened --mode xyz", "--mode 'xyz'"),
    ("compare naive hardened --duration -1", "--duration must be > 0"),
    ("compare naive hardened --rate 0", "--rate must be > 0"),
    ("compare naive hardened --suite nope", "unknown suite 'nope'"),
    ("compare http://127.0.0.1:1/p naive", "A 'http://127.0.0.1:1/p' is a URL"),
    ("compare naive hardened --mode live --scale 2", "--scale must be <= 1"),
    # serve
    ("serve naive --port 99999", "--port must be <= 65535"),
    ("serve naive --port -1", "--port must be >= 0"),
    ("serve naive --scale 0", "--scale must be > 0"),
    ("serve naive --pad-to-s -0.1", "--pad-to-s must be >= 0"),
    ("serve naive --host 0.0.0.0", "pass --expose"),
    # rank and review
    ("rank --scale 0", "--scale must be > 0"),
    ("rank -j 0", "--jobs must be >= 1"),
    ("rank --budget -5", "--budget must be >= -1"),
    ("review --rank /nope.json", "--rank /nope.json: no such file"),
    ("review hardend", "unknown target 'hardend'"),
    # gate
    ("gate /nope.toml", "GATE_FILE /nope.toml: no such file"),
    (f"gate {CI} --baseline /nope.json", "--baseline /nope.json: no such file"),
    (f"gate {CI} --results /nope.json", "--results /nope.json: no such file"),
    (f"gate {CI} --target http://127.0.0.1:1/predict", "--target 'http://127.0.0.1:1/predict' is a URL"),
    (f"gate {CI} --target hardend", "--target: unknown target 'hardend'"),
    (f"gate {CI} -j 0", "--jobs must be >= 1"),
    ("gate {tmp}/same-pair.toml", "key 'paired[0].b': A and B are both 'naive'"),
    # capacity and pool
    ("capacity --qps 0", "--qps must be > 0"),
    ("capacity --batch-size 0", "--batch-size must be >= 1"),
    ("capacity --headroom 0.5", "--headroom must be >= 1"),
    ("capacity --cost-model cubic", "--cost-model 'cubic'"),
    ("capacity --cost-table /nope.json", "--cost-table /nope.json: no such file"),
    ("capacity --cost-model table", "--cost-model table needs --cost-table"),
    ("pool --gpus 0", "--gpus must be >= 1"),
    ("pool --target-utilization 1.5", "--target-utilization must be <= 1"),
    ("pool --policy nope", "--policy 'nope'"),
    ("pool --duration 0", "--duration must be > 0"),
    # profile
    ("profile resnet", "MODEL 'resnet'"),
    ("profile mlp --batch-sizes a,b", "--batch-sizes 'a,b': expected comma-separated integers"),
    ("profile mlp --batch-sizes 0,2", "--batch-sizes '0,2': each must be an integer >= 1"),
    ("profile mlp --repeats 0", "--repeats must be >= 1"),
    ("profile mlp --device tpu", "--device 'tpu'"),
    # report
    ("report /nope.json", "RESULT /nope.json: no such file"),
    ("report pyproject.toml", "pyproject.toml: not a result file"),
]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    (d / "both.toml").write_text('base = "naive"\nadd = ["blind-retries"]\nfix = ["blind-retries"]\n')
    (d / "same-pair.toml").write_text('[[paired]]\nscenario = "night"\na = "naive"\nb = "naive"\n'
                                      'checks = ["goodput_ratio >= 1"]\n')
    (d / "broken.json").write_text('{"x": {{input}}')
    (d / "dir").mkdir()
    return d


def test_the_table_is_large_enough() -> None:
    assert len(BAD) >= 30 and len({line for line, _ in BAD}) == len(BAD)


@pytest.mark.parametrize("line, message", BAD, ids=[line for line, _ in BAD])
def test_bad_invocation_exits_2_naming_the_fault(tmp: Path, line: str, message: str) -> None:
    args = [a.replace("{tmp}", str(tmp)) for a in line.split()]
    res = runner.invoke(app, args)
    text = " ".join(res.output.split())  # rich wraps long lines
    assert res.exit_code == 2, text
    assert message.replace("{tmp}", str(tmp)) in text, text
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert len([ln for ln in res.output.splitlines() if ln.startswith("error:")]) <= 1
