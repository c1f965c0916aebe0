"""Loss, Signal and VectorLoss: evaluation, dominance and the text form."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from pytest_ldd.model.loss import Loss, Signal, VectorLoss
from pytest_ldd.model.metric import bounded_rate, positive_count


def test_loss_evaluates_the_normalized_metric() -> None:
    metric = positive_count("lat", lambda t: t["ms"], description="latency", normalize_scale=200)
    loss = Loss(metric)
    assert loss.evaluate({"ms": 50}) == 0.25
    assert loss.metric is metric


def test_signal_is_the_change_of_the_loss() -> None:
    loss = Loss(bounded_rate("r", lambda t: (t["f"], t["n"]), description="failing share"))
    signal = Signal(loss)
    assert signal.compute({"f": 3, "n": 4}, {"f": 1, "n": 4}) == -0.5
    assert signal.compute({"f": 1, "n": 4}, {"f": 3, "n": 4}) == 0.5
    assert signal.compute({"f": 1, "n": 4}, {"f": 1, "n": 4}) == 0.0


def test_loss_and_signal_check_their_arguments() -> None:
    with pytest.raises(TypeError, match=r"Loss 'metric' must be a Metric \(got 3\)"):
        Loss(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Signal 'loss' must be a Loss \(got 'x'\)"):
        Signal("x")  # type: ignore[arg-type]


def test_vector_loss_keeps_order_and_is_read_only() -> None:
    vector = VectorLoss({"latency": 0.8, "memory": 0.4, "correctness": 0})
    assert list(vector.values) == ["latency", "memory", "correctness"]
    assert vector.values["correctness"] == 0.0
    with pytest.raises(TypeError):
        vector.values["latency"] = 0.1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        vector.values = {}  # type: ignore[misc]
    assert repr(vector) == "VectorLoss({'latency': 0.8, 'memory': 0.4, 'correctness': 0.0})"


def test_vector_loss_copies_its_input() -> None:
    source = {"a": 0.5}
    vector = VectorLoss(source)
    source["a"] = 0.9
    assert vector.values["a"] == 0.5


def test_vector_loss_equality_and_hash_ignore_order() -> None:
    a = VectorLoss({"x": 0.1, "y": 0.2})
    b = VectorLoss({"y": 0.2, "x": 0.1})
    assert a == b
    assert hash(a) == hash(b)
    assert a != VectorLoss({"x": 0.1, "y": 0.3})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"a": 1.5}, r"VectorLoss value of 'a' must be a finite number in \[0, 1\] \(got 1.5\)"),
        ({"a": -0.1}, r"value of 'a' .* \(got -0.1\)"),
        ({"a": math.nan}, r"value of 'a' .* \(got nan\)"),
        ({"a": math.inf}, r"value of 'a' .* \(got inf\)"),
        ({"a": True}, r"value of 'a' .* \(got True\)"),
        ({"a": "0.5"}, r"value of 'a' .* \(got '0.5'\)"),
        ({}, r"at least one dimension"),
        ({"": 0.5}, r"dimension must be a non-empty str .* \(got ''\)"),
        ({"a:b": 0.5}, r"dimension .* \(got 'a:b'\)"),
        ({"a,b": 0.5}, r"dimension .* \(got 'a,b'\)"),
        ({" a": 0.5}, r"dimension .* \(got ' a'\)"),
        ({3: 0.5}, r"dimension .* \(got 3\)"),
    ],
)
def test_vector_loss_validation(values: dict[Any, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VectorLoss(values)


def test_vector_loss_needs_a_mapping() -> None:
    with pytest.raises(TypeError, match="must be a mapping"):
        VectorLoss([("a", 0.5)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"x": 0.1, "y": 0.2}, {"x": 0.2, "y": 0.2}, True),
        ({"x": 0.1, "y": 0.1}, {"x": 0.2, "y": 0.3}, True),
        ({"x": 0.3, "y": 0.2}, {"x": 0.2, "y": 0.2}, False),
        ({"x": 0.1, "y": 0.3}, {"x": 0.2, "y": 0.2}, None),
        ({"x": 0.2, "y": 0.2}, {"x": 0.2, "y": 0.2}, None),
        ({"x": 0.2, "y": 0.1}, {"y": 0.2, "x": 0.2}, True),
    ],
)
def test_dominance(a: dict[str, float], b: dict[str, float], expected: bool | None) -> None:
    assert VectorLoss(a).dominates(VectorLoss(b)) is expected


def test_dominance_needs_equal_dimensions() -> None:
    with pytest.raises(
        ValueError, match=r"needs equal dimensions: expected \['x', 'y'\] \(got \['x', 'z'\]\)"
    ):
        VectorLoss({"x": 0.1, "y": 0.2}).dominates(VectorLoss({"x": 0.1, "z": 0.2}))
    with pytest.raises(ValueError, match="equal dimensions"):
        VectorLoss({"x": 0.1}).dominates(VectorLoss({"x": 0.1, "y": 0.2}))
    with pytest.raises(TypeError, match=r"'other' must be a VectorLoss"):
        VectorLoss({"x": 0.1}).dominates({"x": 0.1})  # type: ignore[arg-type]


def test_dumps_uses_three_decimals_in_insertion_order() -> None:
    assert VectorLoss({"latency": 0.8, "memory": 0.4}).dumps() == "latency:0.800,memory:0.400"
    assert VectorLoss({"b": 1, "a": 0.12345}).dumps() == "b:1.000,a:0.123"


def test_loads_parses_the_text_form() -> None:
    vector = VectorLoss.loads("latency:0.800,memory:0.4,correctness:0.2")
    assert vector == VectorLoss({"latency": 0.8, "memory": 0.4, "correctness": 0.2})
    assert list(vector.values) == ["latency", "memory", "correctness"]
    assert VectorLoss.loads(" a : 1 , b:.5 ,c:1e-1") == VectorLoss({"a": 1.0, "b": 0.5, "c": 0.1})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"VectorLoss token 1 is empty \(got ''\)"),
        ("a:0.1,,b:0.2", r"token 2 is empty \(got 'a:0.1,,b:0.2'\)"),
        ("a:0.1,", r"token 2 is empty"),
        ("a:0.1, ", r"token 2 is empty"),
        ("latency0.8", r"token 'latency0.8' must be 'name:value' \(missing ':'\)"),
        ("a:x", r"token 'a:x' must have a decimal number \(got 'x'\)"),
        ("a:", r"token 'a:' must have a decimal number \(got ''\)"),
        ("a:0.1:0.2", r"token 'a:0.1:0.2' must have a decimal number \(got '0.1:0.2'\)"),
        ("a:nan", r"token 'a:nan' must have a decimal number"),
        ("a:inf", r"token 'a:inf' must have a decimal number"),
        ("a:1_0", r"token 'a:1_0' must have a decimal number"),
        (":0.3", r"token ':0.3' has no valid dimension name \(got ''\)"),
        ("a:0.1,a:0.2", r"token 'a:0.2' repeats the dimension 'a'"),
        ("a:1.5", r"token 'a:1.5' must have a value in \[0, 1\] \(got 1.5\)"),
        ("a:-0.5", r"token 'a:-0.5' must have a value in \[0, 1\] \(got -0.5\)"),
    ],
)
def test_loads_rejects_malformed_tokens(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VectorLoss.loads(text)


def test_loads_needs_a_str() -> None:
    with pytest.raises(TypeError, match=r"expects a str \(got b'a:0.1'\)"):
        VectorLoss.loads(b"a:0.1")  # type: ignore[arg-type]
