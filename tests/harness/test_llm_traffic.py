"""LLM URL traffic end to end against a recording test server: conversations, load modes, bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis.llm import LlmSweep
from harness.analysis.llm.traffic import concurrency_knee, traffic_url_run, traffic_url_sweep
from harness.cli import app
from harness.live.openai import UrlTarget
from harness.live.openai.traffic import Traffic
from harness.results import load_result
from tests.harness.fake_openai import FakeOpenAI, serve

runner = CliRunner()
pytestmark = pytest.mark.live


def sharegpt(path: Path, n: int, turns: int = 3) -> Path:
    doc = [{"id": f"c{k}", "conversations": [x for j in range(turns) for x in (
        {"from": "human", "value": f"question {j} of chat {k} about the sea and the sun"},
        {"from": "gpt", "value": "a short recorded answer"})]} for k in range(n)]
    path.write_text(json.dumps(doc))
    return path


def plan(label: str, duration_s: float = 2.0) -> LlmSweep:
    return LlmSweep(policies=(label,), mixes=("short",), rates_rps=(1.0,), duration_s=duration_s)


def test_later_turns_carry_the_earlier_turns_and_the_servers_own_answers(tmp_path: Path) -> None:
    cfg = FakeOpenAI(ttft_s=0.02, itl_s=0.002, tag_answers=True)
    data = sharegpt(tmp_path / "chats.json", 4)
    with serve(cfg, chat=True) as url:
        target = UrlTarget.parse(url)
        result = traffic_url_run(target, plan(target.label), Traffic.of(str(data), None, None, 2, None, 0.05))
    answers = {}   # request number -> the answer it got, as the server sent it
    runs = [b for b in cfg.seen if len(b["messages"]) > 1 or "question" in b["messages"][0]["content"]]
    assert runs, "no conversation turn reached the server"
    for body in runs:
        msgs = body["messages"]
        users = [m["content"] for m in msgs if m["role"] == "user"]
        assert [m["role"] for m in msgs] == ["user", "assistant"] * (len(users) - 1) + ["user"]
        for m in msgs:
            if m["role"] == "assistant":      # an answer this server gave, with its tag
                tag = m["content"].split(">")[0] + ">"
                assert tag.startswith("<a") and m["content"].startswith(tag) and m["content"].count("x") >= 1
                answers[tag] = m["content"]
        assert [u.split(" of ")[0] for u in users] == [f"question {j}" for j in range(len(users))]
    assert answers, "no later turn carried an earlier answer"
    run = result.runs[0]
    t = run.traffic
    assert t is not None and t.load == "concurrency" and t.max_in_flight <= 2 and cfg.run_peak() == 2
    assert [r.turn for r in t.per_turn] == [1, 2, 3]
    assert t.per_turn[2].context_tokens_mean > t.per_turn[1].context_tokens_mean > t.per_turn[0].context_tokens_mean
    assert all(r.ttft_s.p50 == pytest.approx(0.02, abs=0.03) for r in t.per_turn)


def test_a_closed_loop_keeps_n_in_flight_at_the_closed_form_rate() -> None:
    cfg = FakeOpenAI(ttft_s=0.05, itl_s=0.005)
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        result = traffic_url_run(target, plan(target.label, 3.0), Traffic.of(None, None, None, 4, None))
    run, t = result.runs[0], result.runs[0].traffic
    assert t is not None and t.max_in_flight == 4 and cfg.run_peak() == 4   # the server's own count
    assert run.finished >= run.requests - 4
    assert t.finished_per_s == pytest.approx(4 / run.e2e_s.mean, rel=0.25)        # N / T


def test_a_capped_open_loop_reports_the_slot_wait_apart_and_says_the_slots_were_the_bound() -> None:
    cfg = FakeOpenAI(ttft_s=0.2, itl_s=0.002)
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        result = traffic_url_run(target, plan(target.label, 1.0), Traffic.of(None, None, 30.0, None, 2))
    run, t = result.runs[0], result.runs[0].traffic
    assert t is not None and t.load == "capped" and t.max_in_flight <= 2 and t.slots_bound
    assert t.slot_wait_s is not None and (t.slot_wait_s.p90 or 0) > 0.1
    assert run.ttft_s.p50 == pytest.approx(0.2, abs=0.08)    # the server's latency, without the wait


def test_a_concurrency_sweep_finds_the_servers_cap_as_its_knee_on_the_closed_form(tmp_path: Path) -> None:
    """A server of known time per request T (TTFT 0.1 s, 2 tokens 1 ms apart) that serves C = 4 at once:
    a closed loop of N answers N / T up to C, then C / T; the knee is C."""
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"tell me about the sea {k}", "output_tokens": 2}) + "\n"
                            for k in range(50)))
    cfg = FakeOpenAI(ttft_s=0.1, itl_s=0.001, max_concurrent=4)
    levels = [1, 2, 4, 8, 16]
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        result = traffic_url_sweep(target, plan(target.label, 2.0), Traffic.of(str(data), None, None, 1, None),
                                   levels)
    c = result.concurrency
    assert c is not None and c.knee_concurrency == 4
    t_s = 0.1 + 0.001
    for p in c.points:
        closed = min(p.concurrency, 4) / t_s
        print(f"N={p.concurrency}: {p.requests_per_s:.2f} req/s, closed form {closed:.2f} "
              f"({p.requests_per_s / closed - 1:+.1%})")
        assert p.requests_per_s == pytest.approx(closed, rel=0.2)
    assert cfg.run_peak() == 16


def test_run_url_with_a_dataset_and_concurrency_prints_per_turn_figures(tmp_path: Path) -> None:
    data = sharegpt(tmp_path / "chats.json", 20)
    with serve(FakeOpenAI(ttft_s=0.02, itl_s=0.002), chat=True) as url:
        res = runner.invoke(app, ["run", url, "--dataset", str(data), "--concurrency", "3", "--duration", "2",
                                  "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    words = " ".join(res.output.split())
    assert "load: concurrency 3" in words and "per turn" in words and "TTFT" in words and "TPOT" in words
    again = load_result(tmp_path / "r.json")
    assert again.runs[0].traffic is not None and again.runs[0].traffic.dataset_format == "sharegpt"


def test_compare_and_gate_take_a_dataset_and_a_load(tmp_path: Path) -> None:
    data = sharegpt(tmp_path / "chats.json", 10, turns=2)
    with serve(FakeOpenAI(ttft_s=0.02, itl_s=0.002), chat=True) as a, \
            serve(FakeOpenAI(ttft_s=0.06, itl_s=0.002), chat=True) as b:
        res = runner.invoke(app, ["compare", a, b, "--dataset", str(data), "--concurrency", "2", "--duration", "1.5",
                                  "--out", str(tmp_path / "c.json")])
        assert res.exit_code == 0, res.output
        runs = load_result(tmp_path / "c.json").runs
        assert [r.traffic.load_label for r in runs if r.traffic] == ["concurrency 2"] * 2
        assert runs[0].ttft_s.p50 < runs[1].ttft_s.p50           # A is the faster server
        gate = tmp_path / "g.toml"
        gate.write_text(f'[[llm]]\nurl = "{a}"\ndataset = "{data}"\nconcurrency = 2\nduration_s = 1.5\n'
                        'checks = ["ttft_s.p90 <= 1", "error_ratio <= 0"]\n')
        res = runner.invoke(app, ["gate", str(gate), "--out", str(tmp_path / "gate.json")])
    assert res.exit_code == 0, res.output
    assert "chats.json concurrency 2" in " ".join(res.output.split())


def test_mooncake_hash_ids_and_shared_system_prompts_are_real_prefixes_on_the_wire(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    rows = [([1, 2, 3], 0), ([1, 2, 4], 100), ([7, 8, 9], 200)]
    trace.write_text("".join(json.dumps({"timestamp": ms, "input_length": 1536, "output_length": 2,
                                         "hash_ids": ids}) + "\n" for ids, ms in rows))
    cfg = FakeOpenAI(ttft_s=0.01, itl_s=0.001)
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        traffic_url_run(target, plan(target.label, 1.0), Traffic.of(str(trace), None, None, None, None))
    sent = [b["prompt"] for b in cfg.seen if b.get("user") != "probe"]
    assert len(sent) == 3                                        # replayed at the file's times
    shared = next(k for k, (x, y) in enumerate(zip(sent[0], sent[1])) if x != y)
    assert shared > 0.6 * len(sent[0]) and sent[2][:20] != sent[0][:20]   # ids 1, 2 shared: 2 of 3 blocks
    chat = FakeOpenAI(ttft_s=0.01, itl_s=0.001)
    with serve(chat, chat=True) as url:
        target = UrlTarget.parse(url)
        traffic_url_run(target, plan(target.label, 1.0),
                        Traffic.of(str(sharegpt(tmp_path / "c.json", 12, turns=2)), None, None, 3, None,
                                   prefix_tokens=60, prefix_groups=3))
    systems = [b["messages"][0] for b in chat.seen if b.get("user") != "probe"]
    assert all(m["role"] == "system" for m in systems) and len({m["content"] for m in systems}) == 3
