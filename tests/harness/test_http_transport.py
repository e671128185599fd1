"""Request bodies of the HTTP transport: valid for the models, content-stable, exact-cache-visible."""

from __future__ import annotations

import json

import pytest

from harness.live.payloads import Payloads
from targets.gpu.models import create_model


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_bodies_are_valid_predict_requests_for_the_model(model: str) -> None:
    validate = create_model(model).validate
    p = Payloads(model)
    for content, size in ((0, 1), (7, 64), (123_456_789, 128), (42, 300)):
        doc = json.loads(p.body("t3", content, size, f"t3-{content}", 950))
        assert doc["tenant"] == "t3" and doc["request_id"] == f"t3-{content}" and doc["deadline_ms"] == 950
        validate(doc["input"])  # raises if the model would refuse it
        if model == "transformer":
            assert len(doc["input"]) == min(128, size)


def test_content_decides_the_input_and_variant_only_the_bytes() -> None:
    p = Payloads("transformer")
    a, b, c = (p.body("t", 5, 64, None, None, v) for v in (0, 0, 3))
    other = p.body("t", 6, 64, None, None)
    assert a == b and a != c and json.loads(a) == json.loads(c)  # same input, other serialisation
    assert json.loads(a)["input"] != json.loads(other)["input"]
    assert "request_id" not in json.loads(a) and "deadline_ms" not in json.loads(a)


def test_templates_fill_every_placeholder_and_must_give_json() -> None:
    p = Payloads("mlp", template='{"who": "{{tenant}}", "x": {{input}}, "n": {{content}}, "d": {{deadline_ms}}}')
    doc = json.loads(p.body("t1", 9, 64, None, None))
    assert doc["who"] == "t1" and doc["n"] == 9 and doc["d"] is None and len(doc["x"]) == 512
    with pytest.raises(ValueError, match="valid JSON"):
        Payloads("mlp", template='{"x": {{input}}')
    with pytest.raises(ValueError, match="unknown model"):
        Payloads("resnet")
