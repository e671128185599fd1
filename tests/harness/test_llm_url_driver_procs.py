"""`--driver-procs N` for LLM URL targets: the load split, the parts merged exactly, and N = 2 sending
what one process sends on the same schedule."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.analysis.llm import LlmSweep
from harness.analysis.llm.traffic import traffic_url_run
from harness.cli import app
from harness.engine.hdr import new_histogram
from harness.live.openai import UrlTarget
from harness.live.openai.load import Load, LoadError, LoadMode, check_procs, split_load
from harness.live.openai.procs import Part, merge_parts
from harness.live.openai.sessions import TurnRecord
from harness.live.openai.traffic import Share, Traffic
from harness.results.llm import LlmRun
from targets.llm import Sequence
from tests.harness.fake_openai import FakeOpenAI, serve

runner = CliRunner()


@pytest.mark.parametrize("load, procs, parts", [
    (Load(LoadMode.CONCURRENCY, concurrency=5), 2, [3, 2]),     # 5 users over 2: the first one more
    (Load(LoadMode.CONCURRENCY, concurrency=4), 4, [1, 1, 1, 1]),
    (Load(LoadMode.CAPPED, rate_rps=4.0, max_concurrency=7), 3, [3, 2, 2]),
    (Load(LoadMode.OPEN, rate_rps=4.0), 3, [None, None, None]),  # an open loop splits conversations, not its rate
])
def test_a_load_splits_into_whole_shares(load: Load, procs: int, parts: list[int | None]) -> None:
    shares = [split_load(load, i, procs) for i in range(procs)]
    assert [s.slots for s in shares] == parts
    assert all(s.mode is load.mode and s.rate_rps == load.rate_rps for s in shares)


def test_more_processes_than_users_or_slots_is_refused_naming_the_options() -> None:
    with pytest.raises(LoadError, match="--driver-procs 3 is more than --concurrency 2"):
        check_procs(Load(LoadMode.CONCURRENCY, concurrency=2), 3)
    with pytest.raises(LoadError, match="--driver-procs 2 is more than --max-concurrency 1"):
        check_procs(Load(LoadMode.CAPPED, rate_rps=1.0, max_concurrency=1), 2)
    assert Share(1, 3).ids(8) == range(1, 8, 3)


def _part(index: int, arrivals: list[float], gaps_us: list[int]) -> Part:
    hist = new_histogram()
    for g in gaps_us:
        hist.record_value(g)
    seqs = [Sequence(k, a, 10, 4) for k, a in enumerate(arrivals)]
    turns = [TurnRecord(index + 2 * k, 1, a, 0.0, 10) for k, a in enumerate(arrivals)]
    return Part(index, seqs, [None] * len(seqs), [4] * len(seqs), [a + 1 for a in arrivals], list(arrivals), turns, hist.encode(),
                {1: [g / 1e6 for g in gaps_us]}, max(arrivals) + 1, errors=[f"e{index}"], error_count=1,
                timed_out=index, http_status={"200": len(seqs)}, conversations=len(seqs), max_in_flight=2)


def test_parts_merge_in_start_order_with_their_histograms_added_exactly() -> None:
    a, b = _part(0, [0.0, 1.0, 2.0], [1000, 2000]), _part(1, [0.5, 1.5], [3000])
    sd = merge_parts([a, b], 3.0, 100.0)
    seqs = sd.driven.trace.seqs
    assert [s.arrival_s for s in seqs] == [0.0, 0.5, 1.0, 1.5, 2.0] and [s.id for s in seqs] == list(range(5))
    assert [t.conversation for t in sd.turns] == [0, 1, 2, 3, 4]
    itl = sd.driven.trace.itl
    assert itl.get_total_count() == 3 and itl.get_max_value() == pytest.approx(3000, rel=0.01)
    assert sorted(sd.itl_by_turn[1]) == [0.001, 0.002, 0.003]
    assert (sd.conversations, sd.max_in_flight, sd.driven.timed_out, sd.driven.error_count) == (5, 4, 1, 2)
    assert sd.driven.http_status["200"] == 5 and sd.driven.errors == ["e0", "e1"]
    assert sd.driven.trace.origin_s == 100.0 and sd.driven.trace.end_s == 3.0


def _chats(path: Path, n: int) -> Path:
    path.write_text(json.dumps([{"id": f"c{k}", "conversations": [
        {"from": "human", "value": f"question {k} about the sea"}, {"from": "gpt", "value": "the sea is wide"},
        {"from": "human", "value": "and the ships?"}, {"from": "gpt", "value": "they sail"}]} for k in range(n)]))
    return path


@contextmanager
def _on_fake_server() -> Iterator[tuple[Callable[[Traffic], LlmRun], FakeOpenAI]]:
    """A chat fake server (TTFT 10 ms, ITL 2 ms) and a function that drives one traffic at it: the same
    plan each time (6 req/s for 2 s, seed 2), its run."""
    cfg = FakeOpenAI(ttft_s=0.01, itl_s=0.002)
    with serve(cfg, chat=True) as url:
        target = UrlTarget.parse(url)
        sweep = LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(6.0,), duration_s=2.0, seed=2)
        yield (lambda traffic: traffic_url_run(target, sweep, traffic).runs[0]), cfg


@pytest.mark.live
def test_two_driver_processes_send_the_same_requests_as_one(tmp_path: Path) -> None:
    """The same open-loop schedule (seed 2: 15 starts in 2 s, the last at 1.71 s) of the length mix and
    of two-turn ShareGPT conversations: every start in the window is sent, every turn of each (the
    answers take ms), so one process and two send the same requests."""
    chats = str(_chats(tmp_path / "chats.json", 12))
    counts = {}
    with _on_fake_server() as (run, _):
        for procs in (1, 2):
            mix = run(Traffic.of(None, None, 6.0, None, None, driver_procs=procs))
            convs = run(Traffic.of(chats, None, 6.0, None, None, driver_procs=procs))
            counts[procs] = [(r.requests, r.finished, r.traffic.conversations, r.traffic.driver_procs)
                             for r in (mix, convs) if r.traffic is not None]
    assert counts[1][0][:3] == counts[2][0][:3] == (15, 15, 15)
    assert counts[1][1][:3] == counts[2][1][:3] == (30, 30, 15)
    assert [c[3] for c in counts[1]] == [1, 1] and [c[3] for c in counts[2]] == [2, 2]


@pytest.mark.live
def test_run_url_takes_driver_procs(tmp_path: Path) -> None:
    cfg = FakeOpenAI(ttft_s=0.01, itl_s=0.002)
    with serve(cfg) as url:
        res = runner.invoke(app, ["run", url, "--driver-procs", "2", "--rate", "4", "--duration", "1.5", "--json",
                                  "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "r.json").read_text())["runs"][0]
    assert run["traffic"]["driver_procs"] == 2 and run["finished"] == run["requests"] > 0


def test_driver_procs_over_the_users_is_one_line_exit_2() -> None:
    res = runner.invoke(app, ["run", "http://127.0.0.1:9/v1/completions", "--concurrency", "2", "--driver-procs", "3"])
    assert res.exit_code == 2 and "--driver-procs 3 is more than --concurrency 2" in " ".join(res.output.split())
    assert "Traceback" not in res.output


def _sweep_counts(url: str, tmp_path: Path, procs: int) -> list[tuple[int, int, int]]:
    out = tmp_path / f"sweep-{procs}.json"
    res = runner.invoke(app, ["sweep", url, "--concurrency", "1,2,4", "--step-duration", "1", "--driver-procs",
                              str(procs), "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return [(r["requests"], r["traffic"]["concurrency"], r["traffic"]["driver_procs"])
            for r in json.loads(out.read_text())["runs"]]


@pytest.mark.live
def test_a_concurrency_sweep_over_two_driver_processes_sends_what_one_does(tmp_path: Path) -> None:
    """Each answer takes 0.4 s and a few ms (TTFT 0.4 s, 0.1 ms a token), so in a 1 s step each user
    sends at 0, ~0.4 and ~0.8 s and not again (~1.2 s): 3 requests a user, 0.2 s from either edge.
    Level 1 runs over one process (one per user at most)."""
    cfg = FakeOpenAI(ttft_s=0.4, itl_s=0.0001)
    with serve(cfg) as url:
        one, two = _sweep_counts(url, tmp_path, 1), _sweep_counts(url, tmp_path, 2)
    assert [r[:2] for r in one] == [r[:2] for r in two] == [(3, 1), (6, 2), (12, 4)]
    assert [r[2] for r in one] == [1, 1, 1] and [r[2] for r in two] == [1, 2, 2]


class _TwoRates:
    """A rate search that asks for 3 then 6 req/s, whatever passes."""

    def __init__(self) -> None:
        self.rates = [3.0, 6.0]

    def next_rate(self) -> float | None:
        return self.rates.pop(0) if self.rates else None

    def update(self, rate_rps: float, passed: bool) -> None:
        pass


@pytest.mark.live
def test_a_rate_sweep_over_two_driver_processes_sends_what_one_does() -> None:
    """Each step the same seeded open-loop schedule, every start in the window sent and answered."""
    from harness.analysis.llm.traffic import traffic_url_rate_sweep

    cfg = FakeOpenAI(ttft_s=0.01, itl_s=0.002)
    counts = {}
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        sweep = LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(3.0,), duration_s=1.5, seed=4)
        for procs in (1, 2):
            result = traffic_url_rate_sweep(target, sweep, Traffic.of(None, None, 3.0, None, None, driver_procs=procs),
                                            _TwoRates(), 3.0, 0.05)
            counts[procs] = [(r.rate_rps, r.requests, r.finished, r.traffic.driver_procs)
                             for r in result.runs if r.traffic is not None]
            assert result.search is not None and result.search.steps == 2
    assert [c[:3] for c in counts[1]] == [c[:3] for c in counts[2]]
    assert all(c[1] == c[2] > 0 for c in counts[1])
    assert [c[3] for c in counts[1]] == [1, 1] and [c[3] for c in counts[2]] == [2, 2]


@pytest.mark.live
def test_compare_urls_takes_driver_procs(tmp_path: Path) -> None:
    cfg_a, cfg_b = FakeOpenAI(ttft_s=0.01, itl_s=0.002), FakeOpenAI(ttft_s=0.02, itl_s=0.002)
    counts = {}
    with serve(cfg_a) as a, serve(cfg_b) as b:
        for procs in (1, 2):
            out = tmp_path / f"c{procs}.json"
            res = runner.invoke(app, ["compare", a, b, "--driver-procs", str(procs), "--rate", "4", "--duration", "1.5",
                                      "--json", "--out", str(out)])
            assert res.exit_code == 0, res.output
            counts[procs] = [(r["requests"], r["finished"], (r.get("traffic") or {}).get("driver_procs"))
                             for r in json.loads(out.read_text())["runs"]]
    assert [c[:2] for c in counts[1]] == [c[:2] for c in counts[2]] and len(counts[2]) == 2
    assert all(c[0] == c[1] > 0 for c in counts[2]) and [c[2] for c in counts[2]] == [2, 2]


@pytest.mark.parametrize("line, message", [
    (["sweep", "http://127.0.0.1:9/v1/completions", "--concurrency", "1,2", "--driver-procs", "3"],
     "--driver-procs 3 is more than --concurrency 2"),
    (["compare", "http://127.0.0.1:9/v1/completions", "http://127.0.0.1:8/v1/completions", "--concurrency", "2",
      "--driver-procs", "3"], "--driver-procs 3 is more than --concurrency 2"),
])
def test_driver_procs_over_a_sweep_or_compare_users_is_one_line_exit_2(line: list[str], message: str) -> None:
    res = runner.invoke(app, line)
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output


@pytest.mark.live
@pytest.mark.slow
def test_ray_actors_send_the_same_requests_as_processes(tmp_path: Path, local_ray: Any) -> None:
    """`--executor ray`: the same shares as spawned processes, as Ray actors (a local instance here; a
    cluster at RAY_ADDRESS the same way): the same schedule sends the same requests, merged the same."""
    chats = str(_chats(tmp_path / "chats.json", 12))
    counts = {}
    with _on_fake_server() as (run, cfg):
        for executor in ("process", "ray"):
            r = run(Traffic.of(chats, None, 6.0, None, None, driver_procs=2, driver_executor=executor))
            assert r.traffic is not None
            counts[executor] = (r.requests, r.finished, r.traffic.conversations, r.traffic.driver_procs,
                                r.traffic.driver_executor)
    assert counts["process"][:4] == counts["ray"][:4] == (30, 30, 15, 2)
    assert (counts["process"][4], counts["ray"][4]) == ("process", "ray")
    # both runs' requests reached the server, none twice
    assert sum(1 for b in cfg.seen if b.get("user") != "probe") == 60


def test_executor_ray_without_driver_procs_is_one_line_exit_2() -> None:
    res = runner.invoke(app, ["run", "http://127.0.0.1:9/v1/completions", "--executor", "ray"])
    assert res.exit_code == 2 and "give --driver-procs N" in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_compare_executor_ray_without_driver_procs_is_one_line_exit_2() -> None:
    res = runner.invoke(app, ["compare", "http://127.0.0.1:9/v1/completions", "http://127.0.0.1:10/v1/completions",
                              "--executor", "ray"])
    assert res.exit_code == 2 and "give --driver-procs N" in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_sweep_executor_ray_without_driver_procs_is_one_line_exit_2() -> None:
    res = runner.invoke(app, ["sweep", "http://127.0.0.1:9/v1/completions", "--concurrency", "1,2", "--executor", "ray"])
    assert res.exit_code == 2 and "give --driver-procs N" in " ".join(res.output.split())
    assert "Traceback" not in res.output
