"""targets.cost_table: CostTable interpolation (hand values), validation, JSON format."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from targets.cost_table import CostPoint, CostTable


def _table(points: list[tuple[int, int | None, float]]) -> CostTable:
    return CostTable("m", "cpu", "2.13.0", 1, tuple(CostPoint(*p) for p in points))


# Batch axis only: 10 ms at 1, 12 ms at 2, 16 ms at 4 (2 ms per request past 2).
FLAT = _table([(1, None, 0.010), (2, None, 0.012), (4, None, 0.016)])

# Batch x length: rows are lengths 16 and 64, columns batch sizes 1 and 4.
GRID = _table([(1, 16, 0.010), (4, 16, 0.040), (1, 64, 0.030), (4, 64, 0.120)])


@pytest.mark.parametrize(("batch", "expected"), [
    (1, 0.010),    # a table point
    (2, 0.012),    # a table point
    (3, 0.014),    # halfway between 2 and 4
    (8, 0.024),    # extrapolated along the last segment: 16 ms + 4 * 2 ms
    (100, 0.208),  # 16 ms + 96 * 2 ms
])
def test_batch_axis_interpolates_and_extrapolates_linearly(batch: int, expected: float) -> None:
    assert FLAT.seconds(batch) == pytest.approx(expected)
    assert FLAT.seconds(batch, 50) == pytest.approx(expected)  # no length axis: ignored


@pytest.mark.parametrize(("batch", "length", "expected"), [
    (1, 16, 0.010),
    (4, 64, 0.120),
    (2, 16, 0.020),   # 1/3 of the way from batch 1 to 4 at length 16: 10 + 30/3 ms
    (1, 40, 0.020),   # halfway between lengths 16 and 64 at batch 1
    (2, 40, 0.040),   # bilinear: halfway between 20 ms (len 16) and 60 ms (len 64)
    (4, 112, 0.200),  # extrapolated in length: 120 ms + (112-64)/48 * 80 ms
    (8, 16, 0.080),   # extrapolated in batch: 40 ms + 4 * 10 ms
])
def test_grid_is_bilinear_inside_and_linear_outside(batch: int, length: int,
                                                    expected: float) -> None:
    assert GRID.seconds(batch, length) == pytest.approx(expected)


def test_extrapolation_is_clamped_at_zero_and_single_points_are_constant() -> None:
    steep = _table([(1, 16, 0.001), (1, 32, 0.050)])
    assert steep.seconds(1, 1) == 0.0  # the line would go negative below length 16
    single = _table([(8, None, 0.030)])
    assert single.seconds(1) == single.seconds(64) == 0.030


def test_queries_are_validated() -> None:
    with pytest.raises(ValueError, match="pass length"):
        GRID.seconds(2)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        FLAT.seconds(0)


@pytest.mark.parametrize(("points", "message"), [
    ([], "at least one point"),
    ([(1, None, 0.01), (1, 16, 0.01)], "mix length=None"),
    ([(1, None, 0.01), (1, None, 0.02)], "duplicate"),
    ([(1, 16, 0.01), (2, 16, 0.01), (1, 32, 0.01)], "not a full grid: length 32 lacks batch sizes \\[2\\]"),
    ([(0, None, 0.01)], "batch must be an int >= 1"),
    ([(1, None, -0.01)], "seconds must be finite and >= 0"),
    ([(1, None, float("nan"))], "seconds must be finite"),
])
def test_bad_tables_are_rejected(points: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _table(points)


def test_json_round_trip_and_exact_format(tmp_path) -> None:
    path = tmp_path / "cost.json"
    text = GRID.to_json(path)
    assert path.read_text() == text
    data = json.loads(text)
    assert list(data) == ["model", "device", "torch", "threads", "points"]
    assert data["points"][0] == {"batch": 1, "length": 16, "seconds": 0.010}
    loaded = CostTable.from_json(path)
    assert loaded == GRID and loaded.seconds(2, 40) == pytest.approx(0.040)
    flat_path = tmp_path / "flat.json"
    FLAT.to_json(flat_path)
    assert '"length": null' in flat_path.read_text()
    assert CostTable.from_json(flat_path) == FLAT


@pytest.mark.parametrize(("data", "message"), [
    ([], "must be a JSON object"),
    ({"model": "m", "device": "cpu", "torch": "x", "threads": 1}, "lacks field 'points'"),
    ({"model": "m", "device": "cpu", "torch": "x", "threads": "1", "points": []},
     "'threads' must be int"),
    ({"model": "m", "device": "cpu", "torch": "x", "threads": 1, "points": [{"batch": 1}]},
     "point 0 must be an object"),
])
def test_from_dict_names_bad_fields(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CostTable.from_dict(data)  # type: ignore[arg-type]


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6), st.integers(1, 200))
def test_monotone_tables_interpolate_between_neighbours(increments: list[float],
                                                        batch: int) -> None:
    seconds = [sum(increments[: i + 1]) for i in range(len(increments))]
    batches = [2 ** i for i in range(len(increments))]
    table = _table([(b, None, s) for b, s in zip(batches, seconds)])
    for b, s in zip(batches, seconds):
        assert table.seconds(b) == pytest.approx(s)
    value = table.seconds(batch)
    if batch <= batches[-1]:
        assert seconds[0] - 1e-12 <= value <= seconds[-1] + 1e-12
    else:
        assert value >= seconds[-1] - 1e-12
