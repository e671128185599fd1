"""An interrupted compare (Ctrl-C, SIGTERM), sim or live, writes a valid partial result: the
scenarios both sides finished, judged, and those that did not, listed and not judged; the
command exits 130 without a traceback, and `harness report` renders the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.analysis.compare.run import compare as run_compare
from harness.analysis.compare.run import compare_live
from harness.cli import app
from harness.cli.common import interruptible
from harness.engine import jobs as engine_jobs
from harness.engine.jobs import Jobs, JobsInterrupted, SimJob
from harness.engine.sim import run_sim
from harness.results import CompareResult, load_result
from reports.compare import partial_lines, render, sections
from reports.page import page_html
from tests.harness.procs import children

runner = CliRunner()
SUITE = ["steady", "night", "spike", "low-traffic"]   # the third is the one interrupted
SHORT = ["--duration", "2", "--rate", "800"]


def cut_short_after(t_s: float) -> Any:
    """A sim progress callback that interrupts the run once its clock passes `t_s`, as
    Ctrl-C reaching the sim would (SimRun summarises the part that ran)."""
    def progress(sample: dict[str, Any]) -> None:
        if sample["t_s"] >= t_s:
            raise KeyboardInterrupt
    return progress


def interrupt_third_scenario(monkeypatch: pytest.MonkeyPatch, side: str) -> None:
    """SimJob.run of spike: on `side` 'A' Ctrl-C arrives before naive's run (it raises), on
    'B' it arrives during hardened's run (a partial run comes back); the rest run as usual."""
    real = SimJob.run

    def run(self: SimJob, progress: Any = None) -> Any:
        if self.workload == "spike" and side == "A" and self.target == "naive":
            raise KeyboardInterrupt
        if self.workload == "spike" and side == "B" and self.target == "hardened":
            return real(self, cut_short_after(1.0))
        return real(self, progress)

    monkeypatch.setattr(SimJob, "run", run)


def assert_partial(result: CompareResult, finished: list[str], unfinished: list[str]) -> None:
    """Marked partial, judged where both sides finished, and nothing else judged."""
    assert result.partial is not None
    assert (result.partial.finished, result.partial.unfinished) == (finished, unfinished)
    assert list(result.scenarios) == list(result.runs) == list(result.verdicts) == finished
    assert all(result.verdicts[w].answers for w in finished)
    assert set(result.winners()) == set(finished)


@pytest.mark.parametrize("side", ["A", "B"])
def test_an_interrupted_sim_compare_writes_the_finished_scenarios_and_renders(tmp_path, monkeypatch, side):
    interrupt_third_scenario(monkeypatch, side)
    out = tmp_path / "c.json"
    args = ["compare", "naive", "hardened", *[x for w in SUITE for x in ("-w", w)], *SHORT, "--jobs", "1"]
    res = runner.invoke(app, [*args, "--out", str(out), "--quiet"])
    assert res.exit_code == 130, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "interrupted: the result covers the 2 of 4 scenarios that finished" in " ".join(res.stderr.split())
    result = load_result(out)
    assert isinstance(result, CompareResult)
    assert_partial(result, ["steady", "night"], ["spike", "low-traffic"])
    kept = result.partial.runs
    assert list(kept) == (["spike"] if side == "B" else [])   # low-traffic never started
    if side == "B":
        assert not kept["spike"]["naive"].summary.partial and kept["spike"]["hardened"].summary.partial
    assert "PARTIAL" in res.stdout and "A won 0, B won 2 of 2 scenarios" in " ".join(res.stdout.split())
    page = tmp_path / "c.html"
    shown = runner.invoke(app, ["report", str(out), "--html", str(page)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "PARTIAL: interrupted; 2 of 4 scenarios finished on both sides" in text
    assert ("spike: not judged (A naive ran to the end; B hardened cut short" in text) is (side == "B")
    assert "Not started: " + ("low-traffic" if side == "B" else "spike, low-traffic") in text
    html = page.read_text()
    assert "Partial: interrupted" in html and "spike: verdict" not in html and "night: verdict" in html


def test_over_seeds_a_scenario_counts_only_when_every_seed_finished_on_both_sides(monkeypatch):
    real = SimJob.run

    def run(self: SimJob, progress: Any = None) -> Any:
        if (self.workload, self.target, self.seed) == ("night", "hardened", 2):
            raise KeyboardInterrupt
        return real(self, progress)

    monkeypatch.setattr(SimJob, "run", run)
    result = run_compare("naive", "hardened", SUITE[:3], duration_s=2.0, rate_rps=800.0, jobs=Jobs(workers=1),
                         seeds=[1, 2])
    assert_partial(result, ["steady"], ["night", "spike"])
    assert list(result.over_seeds) == ["steady"] and result.verdicts["steady"].headline
    assert set(result.partial.runs["night"]) == {"naive", "hardened"}   # seed 1 ran on both sides
    assert "night: not judged (seed 1: " in " ".join(partial_lines(result))


def test_the_json_summary_of_an_interrupted_compare_says_what_it_covers(tmp_path, monkeypatch):
    interrupt_third_scenario(monkeypatch, "A")
    res = runner.invoke(app, ["compare", "naive", "hardened", *[x for w in SUITE for x in ("-w", w)], *SHORT,
                              "--jobs", "1", "--json", "--out", str(tmp_path / "c.json")])
    assert res.exit_code == 130
    doc = json.loads(res.stdout)
    assert doc["partial"] == {"finished": ["steady", "night"], "unfinished": ["spike", "low-traffic"]}
    assert set(doc["scenarios"]) == set(doc["verdicts"]) == {"steady", "night"}


def sim_run_one(cut: str | None = None, between: str | None = None) -> Any:
    """A live compare's `run_one` that runs each plan in sim (fast, no servers): the run of
    `cut` ('workload/target') comes back partial, as a live run cut short by Ctrl-C does, and
    before the run of `between` Ctrl-C arrives outside any run."""
    def run_one(plan: Any) -> Any:
        key = f"{plan.workload.name}/{plan.target}"
        if key == between:
            raise KeyboardInterrupt
        return run_sim(plan.config, plan.workload, plan.seed, cut_short_after(1.0) if key == cut else None)
    return run_one


@pytest.mark.parametrize("how", ["B cut short", "A cut short", "between runs"])
def test_an_interrupted_live_compare_judges_only_the_scenarios_both_sides_finished(how):
    # Before: KeyError in add_verdicts for the scenario with one side.
    run_one = {"B cut short": sim_run_one(cut="spike/hardened"), "A cut short": sim_run_one(cut="spike/naive"),
               "between runs": sim_run_one(between="spike/hardened")}[how]
    result = compare_live("naive", "hardened", SUITE, 1, {}, 2.0, None, 0.05, run_one=run_one)
    assert result.mode == "live"
    assert_partial(result, ["steady", "night"], ["spike", "low-traffic"])
    ran = result.partial.runs["spike"]
    assert set(ran) == ({"naive"} if how != "B cut short" else {"naive", "hardened"})
    assert ran["naive"].summary.partial is (how == "A cut short")
    back = CompareResult.from_json(result.to_json())
    assert back.partial == result.partial
    console = Console(width=100, record=True)
    render(back, console)
    titles = [s.title for s in sections(back)]  # the overview leads; the partial notice follows it
    assert "not judged" in console.export_text() and "Partial: interrupted" in titles[:3]


def test_an_interrupt_before_any_scenario_finished_still_gives_a_result_that_renders():
    result = compare_live("naive", "hardened", SUITE, 1, {}, 2.0, None, 0.05,
                          run_one=sim_run_one(between="steady/hardened"))
    assert_partial(result, [], SUITE)
    assert list(result.partial.runs) == ["steady"] and list(result.partial.runs["steady"]) == ["naive"]
    console = Console(width=100, record=True)
    render(result, console)
    text = " ".join(console.export_text().split())
    assert "PARTIAL: interrupted; none of the 4 scenarios finished on both sides: nothing is judged." in text
    assert "steady: not judged (A naive ran to the end; B hardened not run)." in text
    assert "Not started: night, spike, low-traffic." in text
    assert "Partial: interrupted" in page_html([result], plotly_js="")


def test_a_whole_compare_is_not_partial():
    result = compare_live("naive", "hardened", ["steady"], 1, {}, 2.0, None, 0.05, run_one=sim_run_one())
    assert result.partial is None and "partial" not in result.to_json() and list(result.verdicts) == ["steady"]


# -- the job runner --------------------------------------------------------------------------------

class Sleep:
    """A job that sleeps, then returns its value; KeyboardInterrupt instead when `interrupt`."""

    def __init__(self, value: int, seconds: float, interrupt: bool = False) -> None:
        self.value, self.seconds, self.interrupt = value, seconds, interrupt

    def run(self) -> int:
        time.sleep(self.seconds)
        if self.interrupt:
            raise KeyboardInterrupt
        return self.value


@pytest.mark.parametrize("workers", [1, 2])
def test_an_interrupt_stops_every_job_and_keeps_the_results_of_those_that_finished(workers, monkeypatch):
    monkeypatch.setattr(engine_jobs, "_longest_first", lambda jobs: list(range(len(jobs))))
    jobs = [Sleep(1, 0.0), Sleep(2, 0.5, interrupt=True), Sleep(3, 60.0), Sleep(4, 60.0)]
    started = time.perf_counter()
    with pytest.raises(JobsInterrupted) as caught:
        Jobs(workers=workers).run(jobs)
    assert caught.value.results == [1, None, None, None]
    assert time.perf_counter() - started < 20   # the 60-s jobs were stopped, not waited for
    assert isinstance(caught.value, KeyboardInterrupt)


def test_an_interrupt_python_had_to_drop_is_raised_again():
    class Dropper:
        def __del__(self) -> None:
            raise KeyboardInterrupt   # Python can only report it ("Exception ignored in ...")

    before = signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGTERM), sys.unraisablehook
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with interruptible():
            Dropper()
            while time.perf_counter() - started < 5:
                pass
    assert time.perf_counter() - started < 2
    assert (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGTERM), sys.unraisablehook) == before


# -- real signals ------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_real_signal_mid_compare_leaves_a_partial_result_and_no_traceback(tmp_path, sig):
    out = tmp_path / "c.json"
    # SIGINT back to its default (a shell may start background jobs with it ignored); its own
    # process group, so SIGINT goes to it and its workers as a terminal's Ctrl-C does.
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli import app; app()", "compare", "naive",
                             "hardened", "--jobs", "2", "--quiet", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not children(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)   # the workers exist once the compare runs
        time.sleep(1.0)
        if sig == "SIGINT":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        try:   # whatever did not stop (the command or its workers): leave nothing running
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]
    assert "interrupted: " in stderr and "PARTIAL" in stdout
    result = load_result(out)
    assert isinstance(result, CompareResult) and result.partial is not None
    planned = result.partial.finished + result.partial.unfinished
    assert len(planned) == 11 and list(result.verdicts) == result.partial.finished
    shown = runner.invoke(app, ["report", str(out)])
    assert shown.exit_code == 0 and "PARTIAL" in shown.output
