"""targets.gpu.models: seeded determinism, padding invariance, input validation, codecs."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.gpu.models import MODEL_NAMES, NUM_CLASSES, create_model


@pytest.fixture(autouse=True, scope="module")
def _few_threads():
    # Two cores here: more intra-op threads only add contention to the test run.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def transformer():
    return create_model("transformer")


def test_registry_lists_valid_names_on_unknown_model() -> None:
    with pytest.raises(ValueError, match="valid names: mlp, cnn, transformer"):
        create_model("resnet9000")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_same_seed_same_outputs_and_other_seed_differs(name: str) -> None:
    handle = create_model(name, seed=7)
    inputs = [handle.synthetic_input(random.Random(1), 12) for _ in range(3)]
    first = handle.run(inputs)
    again = create_model(name, seed=7).run(inputs)
    other = create_model(name, seed=8).run(inputs)
    assert [o["logits"] for o in first] == [o["logits"] for o in again]
    assert [o["logits"] for o in first] != [o["logits"] for o in other]


def test_seeding_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    create_model("mlp", seed=5)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_outputs_are_json_friendly_one_per_request(name: str) -> None:
    handle = create_model(name)
    rng = np.random.default_rng(0)
    inputs = [handle.synthetic_input(rng) for _ in range(4)]
    for item in inputs:
        handle.validate(item)  # synthetic inputs are valid by contract
    outputs = handle.run(inputs)
    assert len(outputs) == 4
    json.dumps(outputs)
    for out in outputs:
        assert set(out) == {"label", "score", "logits"}
        assert 0 <= out["label"] < NUM_CLASSES and len(out["logits"]) == NUM_CLASSES
        assert out["logits"][out["label"]] == max(out["logits"])
        assert 1 / NUM_CLASSES <= out["score"] <= 1.0


def _max_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def test_padded_batch_matches_each_request_alone(transformer) -> None:
    rng = random.Random(3)
    inputs = [transformer.synthetic_input(rng, n) for n in (3, 17, 64, 1, 128)]
    batched = transformer.run(inputs)
    bucketed = transformer.run(inputs[:2], pad_to=64)  # padded well past the longest
    for i, item in enumerate(inputs):
        alone = transformer.run([item])[0]["logits"]
        assert _max_diff(alone, batched[i]["logits"]) < 1e-4
        if i < 2:
            assert _max_diff(alone, bucketed[i]["logits"]) < 1e-4


@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 40), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_padding_never_changes_an_answer(transformer, lengths: list[int], seed: int) -> None:
    rng = random.Random(seed)
    inputs = [transformer.synthetic_input(rng, n) for n in lengths]
    batched = transformer.run(inputs)
    for item, out in zip(inputs, batched):
        assert _max_diff(transformer.run([item])[0]["logits"], out["logits"]) < 1e-4


def test_collate_pads_to_longest_and_reports_padding(transformer) -> None:
    batch = transformer.collate([[1, 2, 3], [4]])
    tokens, mask = batch.tensors
    assert tokens.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert mask.tolist() == [[False, False, False], [False, True, True]]
    assert (batch.size, batch.length, batch.lengths) == (2, 3, (3, 1))
    assert math.isclose(batch.padding_fraction, 2 / 6)
    assert transformer.collate([[1, 2, 3]], pad_to=8).length == 8
    with pytest.raises(ValueError, match="pad_to=2 must be between the longest input"):
        transformer.collate([[1, 2, 3]], pad_to=2)


def test_cnn_accepts_flat_and_nested_images() -> None:
    cnn = create_model("cnn")
    flat = cnn.synthetic_input(random.Random(0))
    nested = np.asarray(flat).reshape(3, 32, 32).tolist()
    assert cnn.run([flat])[0]["logits"] == cnn.run([nested])[0]["logits"]


BAD_INPUTS = [
    # (model, input, message fragment)
    ("mlp", "0.5, 0.5", "expected 512 numbers as a list, got str"),
    ("mlp", {"x": 1}, "as a list, got dict"),
    ("mlp", 3.0, "as a list, got float"),
    ("mlp", [0.0] * 511, "expected 512 numbers, got 511 numbers"),
    ("mlp", ["a"] * 512, "non-numeric values"),
    ("mlp", [None] * 512, "non-numeric values"),
    ("mlp", [True] * 512, "non-numeric values"),
    ("mlp", [0.0] * 7 + [float("nan")] + [0.0] * 504, "non-finite value .* at flat index 7"),
    ("cnn", [[0.0] * 32] * 3, "expected 3x32x32 = 3072 numbers .*got shape \\(3, 32\\)"),
    ("cnn", [[0.0] * 3, [0.0]], "ragged"),
    ("transformer", [], "token sequence is empty"),
    ("transformer", [1] * 129, "has 129 tokens; max_length is 128"),
    ("transformer", [1.0, 2.0], "token ids must be integers"),
    ("transformer", [5, -1], "token id -1 at index 1 out of range \\[0, 1000\\)"),
    ("transformer", [5, 1000], "token id 1000 at index 1 out of range"),
    ("transformer", [[1, 2]], "flat"),
    ("transformer", "hello", "got str"),
]


@pytest.mark.parametrize(("name", "item", "message"), BAD_INPUTS)
def test_validation_names_the_problem(name: str, item: object, message: str) -> None:
    handle = create_model(name)
    with pytest.raises(ValueError, match=message):
        handle.validate(item)


def test_collate_names_the_bad_input_index_and_rejects_empty(transformer) -> None:
    with pytest.raises(ValueError, match="input 1: token id 5000"):
        transformer.collate([[1], [5000]])
    with pytest.raises(ValueError, match="empty batch"):
        transformer.collate([])


def test_synthetic_inputs_are_seeded_and_respect_length(transformer) -> None:
    assert (transformer.synthetic_input(random.Random(4), 10)
            == transformer.synthetic_input(random.Random(4), 10))
    assert len(transformer.synthetic_input(np.random.default_rng(0), 33)) == 33
    lengths = {len(transformer.synthetic_input(random.Random(s))) for s in range(20)}
    assert len(lengths) > 1 and all(1 <= n <= 128 for n in lengths)
    assert transformer.input_length([1, 2, 3]) == 3
    with pytest.raises(ValueError, match="length must be in 1..128"):
        transformer.synthetic_input(random.Random(0), 0)
    mlp = create_model("mlp")
    assert len(mlp.synthetic_input(random.Random(0))) == 512
    assert mlp.input_length([0.0] * 512) is None
