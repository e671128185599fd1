"""An API server converts a request's input once: the model's validator returns the array the
model takes, which becomes the payload the dedupe hashes and the batch collates."""

from __future__ import annotations

import json

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.dedupe import input_digest
from targets.gpu.models import create_model
from targets.http.parse import parse_predict

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def test_the_validated_array_becomes_the_requests_input() -> None:
    handle = create_model("mlp", seed=0, device=torch.device("cpu"))
    body = json.dumps({"tenant": "t0", "input": [0.25] * 512}).encode()
    req = parse_predict(body, None, handle.validate)
    assert isinstance(req.input, np.ndarray) and req.input.shape == (512,)
    assert parse_predict(body, None, lambda x: None).input == [0.25] * 512  # a validator that returns nothing
    out = handle.run([req.input, [0.25] * 512])  # the array collates as the list does
    assert out[0]["logits"] == out[1]["logits"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(FLOATS, st.integers(-2**53, 2**53)), min_size=1, max_size=64))
def test_an_array_digests_as_its_list(values) -> None:
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        assert input_digest(arr) == input_digest(values) == input_digest(arr.tolist())


def test_a_nested_array_digests_as_its_nested_list() -> None:
    nested = [[[0.5, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]
    assert input_digest(np.asarray(nested)) == input_digest(nested) != input_digest(np.asarray(nested).ravel())
