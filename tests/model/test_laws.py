"""Algebraic laws of normalization and composition, and the pure part of bias invariance."""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import (
    RAW_BY_KIND,
    Leaves,
    bounded_raw,
    descriptions,
    lambdas,
    leaves,
    make_leaf,
    positive_raw,
    scales,
    signed_raw,
    unit_floats,
    vector_losses,
    vector_pairs,
    weight_lists,
)

from pytest_ldd.model.compose import CompositeMetric, maximum, minimum, weighted_sum
from pytest_ldd.model.loss import Loss, Signal, VectorLoss
from pytest_ldd.model.metric import (
    Metric,
    bounded_rate,
    positive_count,
    signed_delta,
)

LAW = settings(max_examples=200, deadline=None)


def _weighted(leaf: Leaves, ws: list[float], name: str = "ws") -> CompositeMetric:
    return weighted_sum(
        name, list(zip(leaf.metrics, ws, strict=True)), description="weighted mean"
    )


def _constant(value: float) -> Callable[[Any], float]:
    return lambda _theta: value


def _combos(leaf: Leaves, ws: list[float]) -> list[CompositeMetric]:
    return [
        _weighted(leaf, ws),
        maximum("mx", leaf.metrics, description="largest component"),
        minimum("mn", leaf.metrics, description="smallest component"),
    ]


# --------------------------------------------------------------------------- normalization


@LAW
@given(a=bounded_raw, b=bounded_raw)
def test_bounded_normalization_is_monotone_and_in_unit_interval(a: Any, b: Any) -> None:
    metric = bounded_rate("rate", description="fraction of failing tests")
    na, nb = metric.normalize(a), metric.normalize(b)
    assert 0.0 <= na <= 1.0
    assert 0.0 <= nb <= 1.0
    ra, rb = metric.raw(a), metric.raw(b)
    if ra <= rb:
        assert na <= nb


@LAW
@given(a=positive_raw, b=positive_raw, scale=scales)
def test_positive_normalization_is_monotone_and_in_unit_interval(
    a: Any, b: Any, scale: float
) -> None:
    metric = positive_count("lat", description="latency", normalize_scale=scale)
    na, nb = metric.normalize(a), metric.normalize(b)
    assert 0.0 <= na <= 1.0
    assert 0.0 <= nb <= 1.0
    if a <= b:
        assert na <= nb
    assert na == (1.0 if math.isinf(a) else min(1.0, float(a) / scale))


@LAW
@given(a=signed_raw, b=signed_raw, scale=scales)
def test_signed_normalization_is_monotone_and_in_unit_interval(
    a: Any, b: Any, scale: float
) -> None:
    metric = signed_delta("delta", description="loss change", normalize_scale=scale)
    na, nb = metric.normalize(a), metric.normalize(b)
    assert 0.0 <= na <= 1.0
    assert 0.0 <= nb <= 1.0
    if a <= b:
        assert na <= nb


@LAW
@given(scale=scales)
def test_signed_zero_maps_to_one_half(scale: float) -> None:
    metric = signed_delta("delta", description="loss change", normalize_scale=scale)
    assert metric.normalize(0) == 0.5
    assert metric.normalize(0.0) == 0.5
    assert metric.normalize(-0.0) == 0.5


@LAW
@given(x=signed_raw, scale=scales)
def test_signed_normalization_is_symmetric(x: Any, scale: float) -> None:
    metric = signed_delta("delta", description="loss change", normalize_scale=scale)
    assert metric.normalize(x) + metric.normalize(-x) == pytest.approx(1.0, abs=1e-12)


# --------------------------------------------------------------------------- composition


@LAW
@given(data=st.data(), leaf=leaves())
def test_composites_stay_in_unit_interval(data: st.DataObject, leaf: Leaves) -> None:
    ws = data.draw(weight_lists(len(leaf.metrics)))
    for composite in _combos(leaf, ws):
        assert 0.0 <= composite.observed(leaf.theta) <= 1.0


@LAW
@given(data=st.data(), leaf=leaves(min_size=2))
def test_composition_is_commutative(data: st.DataObject, leaf: Leaves) -> None:
    ws = data.draw(weight_lists(len(leaf.metrics)))
    pairs = list(zip(leaf.metrics, ws, strict=True))
    shuffled = data.draw(st.permutations(pairs))
    shuffled_metrics = [metric for metric, _ in shuffled]
    theta = leaf.theta
    d = "composite"
    assert weighted_sum("a", pairs, description=d).observed(theta) == weighted_sum(
        "b", shuffled, description=d
    ).observed(theta)
    assert maximum("a", leaf.metrics, description=d).observed(theta) == maximum(
        "b", shuffled_metrics, description=d
    ).observed(theta)
    assert minimum("a", leaf.metrics, description=d).observed(theta) == minimum(
        "b", shuffled_metrics, description=d
    ).observed(theta)


@LAW
@given(data=st.data(), leaf=leaves(), factor=lambdas)
def test_weighted_sum_is_homogeneous_in_weights(
    data: st.DataObject, leaf: Leaves, factor: float
) -> None:
    ws = data.draw(weight_lists(len(leaf.metrics)))
    scaled = [w * factor for w in ws]
    # Below the normal range a product w * factor loses precision (5e-324 * 0.5 == 0):
    # the scaling itself is then not a scaling, whatever the composite does.
    assume(all(w == 0 or w >= sys.float_info.min for w in [*ws, *scaled]))
    original = _weighted(leaf, ws).observed(leaf.theta)
    assert _weighted(leaf, scaled).observed(leaf.theta) == pytest.approx(original, abs=1e-12)


@LAW
@given(leaf=leaves(), weight=st.floats(min_value=1e-6, max_value=1e6))
def test_equal_weights_give_the_arithmetic_mean(leaf: Leaves, weight: float) -> None:
    composite = _weighted(leaf, [weight] * len(leaf.metrics))
    values = leaf.values()
    expected = math.fsum(values) / len(values)
    assert composite.observed(leaf.theta) == pytest.approx(expected, abs=1e-12)


@LAW
@given(leaf=leaves(max_size=1))
def test_max_and_min_of_one_component_are_that_component(leaf: Leaves) -> None:
    (only,) = leaf.metrics
    value = only.observed(leaf.theta)
    assert maximum("mx", [only], description="d").observed(leaf.theta) == value
    assert minimum("mn", [only], description="d").observed(leaf.theta) == value


@LAW
@given(value=unit_floats, copies=st.integers(min_value=2, max_value=5))
def test_max_and_min_are_idempotent(value: float, copies: int) -> None:
    same = [bounded_rate(f"c{i}", _constant(value), description="constant") for i in range(copies)]
    assert maximum("mx", same, description="d").observed(None) == value
    assert minimum("mn", same, description="d").observed(None) == value


@LAW
@given(data=st.data(), value=unit_floats, copies=st.integers(min_value=1, max_value=7))
def test_weighted_sum_of_equal_values_is_that_value(
    data: st.DataObject, value: float, copies: int
) -> None:
    # Rounding in sum(w * v) / sum(w) alone would miss ``value`` by an ulp here.
    ws = data.draw(weight_lists(copies))
    same = [bounded_rate(f"c{i}", _constant(value), description="constant") for i in range(copies)]
    pairs = list(zip(same, ws, strict=True))
    assert weighted_sum("ws", pairs, description="d").observed(None) == value


@LAW
@given(leaf=leaves(min_size=2))
def test_nested_max_and_min_are_idempotent(leaf: Leaves) -> None:
    theta, first, rest = leaf.theta, leaf.metrics[0], leaf.metrics[1:]
    inner_max = maximum("inner_max", leaf.metrics, description="d")
    inner_min = minimum("inner_min", leaf.metrics, description="d")
    outer_max = maximum("outer_max", [inner_max, first], description="d")
    outer_min = minimum("outer_min", [inner_min, first], description="d")
    assert outer_max.observed(theta) == inner_max.observed(theta)
    assert outer_min.observed(theta) == inner_min.observed(theta)
    assert rest  # the nested composites really had more than one component


@LAW
@given(data=st.data(), leaf=leaves())
def test_weighted_sum_lies_between_min_and_max(data: st.DataObject, leaf: Leaves) -> None:
    ws = data.draw(weight_lists(len(leaf.metrics)))
    weighted, largest, smallest = (c.observed(leaf.theta) for c in _combos(leaf, ws))
    assert smallest <= weighted <= largest


@LAW
@given(data=st.data(), leaf=leaves(), noise=st.integers())
def test_composite_depends_only_on_component_values(
    data: st.DataObject, leaf: Leaves, noise: int
) -> None:
    ws = data.draw(weight_lists(len(leaf.metrics)))
    values = leaf.values()
    # Constant metrics with the same observed values, of another kind and accessor.
    constants = tuple(
        bounded_rate(metric.name, _constant(v), description="constant")
        for metric, v in zip(leaf.metrics, values, strict=True)
    )
    twin = Leaves(constants, {})
    # Changing what the components do not read changes nothing either.
    moved = {**leaf.theta, "unread": noise}
    for composite, twin_composite in zip(_combos(leaf, ws), _combos(twin, ws), strict=True):
        assert composite.observed(leaf.theta) == twin_composite.observed(None)
        assert composite.observed(moved) == composite.observed(leaf.theta)
        assert composite.raw(leaf.theta) == composite.observed(leaf.theta)


# --------------------------------------------------------------------------- bias invariance


@LAW
@given(leaf=leaves())
def test_observed_is_deterministic_and_does_not_mutate_theta(leaf: Leaves) -> None:
    snapshot = copy.deepcopy(leaf.theta)
    composite = maximum("mx", leaf.metrics, description="largest component")
    metrics: list[Metric] = [*leaf.metrics, composite]
    first = [metric.observed(leaf.theta) for metric in metrics]
    second = [metric.observed(leaf.theta) for metric in metrics]
    assert first == second
    assert leaf.theta == snapshot


@LAW
@given(data=st.data(), leaf=leaves(), description=descriptions)
def test_creating_other_metrics_never_changes_observed(
    data: st.DataObject, leaf: Leaves, description: str
) -> None:
    base = _weighted(leaf, [1.0] * len(leaf.metrics), name="base")
    before = [metric.observed(leaf.theta) for metric in leaf.metrics]
    base_before = base.observed(leaf.theta)
    # Build more metrics and composites over the same components.
    others = [make_leaf(kind, f"other{i}") for i, kind in enumerate(["bounded", "signed"])]
    ws = data.draw(weight_lists(len(leaf.metrics)))
    _weighted(leaf, ws, name="w2")
    maximum("mx2", [*leaf.metrics, base], description=description)
    minimum("mn2", [*others, *leaf.metrics], description=description)
    assert [metric.observed(leaf.theta) for metric in leaf.metrics] == before
    assert base.observed(leaf.theta) == base_before


@LAW
@given(data=st.data(), leaf=leaves(min_size=1, max_size=1))
def test_loss_is_observed_and_signal_is_its_difference(data: st.DataObject, leaf: Leaves) -> None:
    (metric,) = leaf.metrics
    after = {**leaf.theta, metric.name: data.draw(RAW_BY_KIND[metric.spec.kind])}
    loss = Loss(metric)
    signal = Signal(loss)
    assert loss.evaluate(leaf.theta) == metric.observed(leaf.theta)
    assert signal.compute(leaf.theta, leaf.theta) == 0.0
    delta = signal.compute(leaf.theta, after)
    assert delta == metric.observed(after) - metric.observed(leaf.theta)
    assert -1.0 <= delta <= 1.0


# --------------------------------------------------------------------------- vector losses


@LAW
@given(pair=vector_pairs())
def test_dominance_is_antisymmetric(pair: tuple[VectorLoss, VectorLoss]) -> None:
    a, b = pair
    forward, backward = a.dominates(b), b.dominates(a)
    if forward is None:
        assert backward is None
    else:
        assert backward is (not forward)
    assert a.dominates(a) is None


@LAW
@given(vector=vector_losses)
def test_vector_loss_text_round_trip(vector: VectorLoss) -> None:
    parsed = VectorLoss.loads(vector.dumps())
    assert list(parsed.values) == list(vector.values)
    for name, value in vector.values.items():
        assert parsed.values[name] == pytest.approx(value, abs=5e-4)
    assert VectorLoss.loads(parsed.dumps()) == parsed
