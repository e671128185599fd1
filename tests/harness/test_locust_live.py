"""Locust for real: a few seconds against `harness serve --model cnn`, each request the CNN's input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.live.locust_file import locustfile_text
from workloads.loader import load_workload

runner = CliRunner()
HARNESS = str(Path(sys.executable).parent / "harness")


def test_the_locustfile_posts_each_models_input_or_the_url_template_to_its_path():
    wl = load_workload("steady").at_rate(10.0, 2.0)
    cnn = locustfile_text(wl, 1.0, "cnn")
    assert "INPUT = ('floats', 3072)" in cnn and "TEMPLATE = None" in cnn and "PATH = '/predict'" in cnn
    own = locustfile_text(wl, 1.0, "transformer", '{"q": {{input}}, "who": "{{tenant}}"}', "/v2/infer")
    assert "INPUT = ('tokens', 64)" in own and "PATH = '/v2/infer'" in own and "{{input}}" in own
    with pytest.raises(ValueError, match="unknown model 'vit'"):
        locustfile_text(wl, 1.0, "vit")


def test_locust_refuses_a_remote_url_without_allow_remote():
    res = runner.invoke(app, ["run", "http://10.0.0.1:8000/predict", "--mode", "live", "--driver", "locust"])
    assert res.exit_code == 2 and "--allow-remote" in res.output


@pytest.mark.live
@pytest.mark.slow
def test_locust_against_a_served_cnn_answers_200s(tmp_path):
    serve = subprocess.Popen([HARNESS, "serve", "hardened", "--model", "cnn", "--port", "0", "--device", "cpu"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url, deadline = None, time.monotonic() + 90
        while url is None and time.monotonic() < deadline:
            line = serve.stdout.readline()  # type: ignore[union-attr]
            if not line and serve.poll() is not None:
                pytest.fail("harness serve exited before serving")
            found = re.search(r"at (http://127\.0\.0\.1:\d+/predict)", line)
            url = found.group(1) if found else None
        assert url, "harness serve did not say where it serves"
        out = tmp_path / "locust.json"
        res = runner.invoke(app, ["run", url, "--mode", "live", "--driver", "locust", "--model", "cnn",
                                  "--workers", "1", "--duration", "4", "--rate", "20", "--json", "--out", str(out)])
        assert res.exit_code == 0, res.output
        live = json.loads(res.stdout)["live"]
        assert live["driver"] == "locust" and live["model"] == "cnn"
        assert live["http_status"].get("200", 0) > 0.9 * sum(live["http_status"].values())
    finally:
        serve.terminate()
        try:
            serve.wait(20)
        except subprocess.TimeoutExpired:
            serve.kill()
