"""A data set as a sim day (workloads.dataset_days): turn j+1's blocks open with turn j's, a shared
system prompt's blocks are its group's, equal Mooncake hash ids are equal blocks, and the fleet
sim's prefix cache finds what the schedule shares."""

from __future__ import annotations

import pytest

from harness.engine.llm_fleet import simulate_fleet
from targets.llm.fleet import parse_fleet
from workloads.dataset_days import dataset_schedule
from workloads.datasets import Conversation, Dataset, DatasetFormat, Prompt
from workloads.llm_days import own_block_base


def _chats(n: int, turns: int = 3) -> Dataset:
    convs = tuple(Conversation(f"c{k}", tuple(Prompt(text=" ".join(["word"] * 40) + f" {k} {j}", output_tokens=20)
                                              for j in range(turns)), think_time_s=1.0) for k in range(n))
    return Dataset("chats.json", DatasetFormat.SHAREGPT, convs)


def _by_conv(s, c: int) -> list[int]:
    return [i for i in range(len(s)) if s.conversation[i] == c]


def test_each_turn_carries_the_earlier_turns_and_answers_and_its_blocks_open_with_theirs() -> None:
    s = dataset_schedule(_chats(4), duration_s=100.0, seed=1, rate_rps=0.5)
    assert len(s) and set(s.turn.tolist()) == {1, 2, 3}
    for c in set(s.conversation.tolist()):
        mine = _by_conv(s, c)
        for a, b in zip(mine, mine[1:]):
            assert s.prompt_tokens[b] == s.prompt_tokens[a] + s.output_tokens[a] + 55   # 42 words at 1.3 a word, up
            assert s.block_ids[b][:len(s.block_ids[a])] == s.block_ids[a]
            assert s.arrival_s[b] == pytest.approx(s.arrival_s[a] + 1.0)                 # the think time


def test_a_shared_system_prompt_is_its_groups_blocks_and_the_rest_are_own() -> None:
    s = dataset_schedule(_chats(6, turns=1), duration_s=100.0, seed=2, rate_rps=1.0, prefix_tokens=64,
                         prefix_groups=2)
    first = {int(c): s.block_ids[i] for i, c in enumerate(s.conversation) if s.turn[i] == 1}
    assert len(first) >= 3
    assert first[0][:4] == first[2][:4] != first[1][:4]                    # 64 tokens: 4 blocks of 16
    assert all(b < own_block_base() for b in first[0][:4]) and all(b >= own_block_base() for b in first[0][4:])
    assert first[0][4] != first[2][4]


def test_equal_mooncake_hash_ids_are_equal_blocks() -> None:
    rows = (Prompt(hash_ids=(7, 8, 9), input_tokens=1536, output_tokens=4),
            Prompt(hash_ids=(7, 8, 5), input_tokens=1536, output_tokens=4))
    data = Dataset("trace.jsonl", DatasetFormat.MOONCAKE,
                   tuple(Conversation(f"r{k}", (p,), offset_s=float(k)) for k, p in enumerate(rows)))
    s = dataset_schedule(data, duration_s=10.0, seed=0)                       # a replay of the file's times
    assert s.arrival_s.tolist() == [0.0, 1.0] and s.prompt_tokens.tolist() == [1536, 1536]
    a, b = s.block_ids
    assert a[:64] == b[:64] and a[64] != b[64]                               # 1,024 tokens the same, then not


def test_the_fleet_sims_prefix_cache_hits_the_earlier_turns() -> None:
    """About 20 conversations of the 40 (none sent twice), each turn 1 s after the last: a turn whose
    predecessor had finished on the same replica finds its prompt and answer cached, to the block."""
    s = dataset_schedule(_chats(40), duration_s=60.0, seed=3, rate_rps=1.0)
    trace = simulate_fleet(parse_fleet("llm-fleet:router=prefix,replicas=2"), s, drain_s=60)
    seqs, pairs, hits = trace.seqs, 0, 0
    for c in set(s.conversation.tolist()):
        mine = _by_conv(s, c)
        assert seqs[mine[0]].cached_tokens == 0
        for a, b in zip(mine, mine[1:]):
            pairs += 1
            if seqs[a].replica == seqs[b].replica and seqs[a].finish_s <= seqs[b].arrival_s:
                assert seqs[b].cached_tokens == (s.prompt_tokens[a] + s.output_tokens[a]) // 16 * 16
                hits += 1
    assert pairs >= 20 and hits >= 0.8 * pairs


def test_a_data_set_without_times_and_no_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="chats.json: has no start times to replay: give a rate"):
        dataset_schedule(_chats(2), duration_s=10.0, seed=0)
