"""Composite metrics: construction, values and every composition error."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from pytest_ldd.errors import CompositionError, GamingGuardError, InvalidObservationError
from pytest_ldd.model.compose import CompositeMetric, maximum, minimum, weighted_sum
from pytest_ldd.model.metric import Metric, MetricSpec, bounded_rate, positive_count, signed_delta

THETA = {"failing": 1, "total": 4, "ms": 300, "delta": 0.0}


@pytest.fixture
def parts() -> list[Metric]:
    return [
        bounded_rate("tests", lambda t: (t["failing"], t["total"]), description="failing share"),
        positive_count("latency", lambda t: t["ms"], description="p99 ms", normalize_scale=400),
        signed_delta("delta", lambda t: t["delta"], description="loss change"),
    ]


def test_weighted_sum_is_the_weighted_mean(parts: list[Metric]) -> None:
    tests, latency, delta = parts
    combined = weighted_sum(
        "quality", [(tests, 4.0), (latency, 1), (delta, 1.0)], description="4:1:1 blend"
    )
    assert combined.observed(THETA) == pytest.approx((4 * 0.25 + 0.75 + 0.5) / 6)
    assert combined.raw(THETA) == combined.observed(THETA)
    assert combined.components == ((tests, 4.0), (latency, 1.0), (delta, 1.0))


def test_zero_weights_drop_a_component(parts: list[Metric]) -> None:
    tests, latency, _ = parts
    combined = weighted_sum("q", [(tests, 1.0), (latency, 0.0)], description="tests only")
    assert combined.observed(THETA) == 0.25


def test_huge_and_tiny_weights_stay_finite(parts: list[Metric]) -> None:
    tests, latency, _ = parts
    huge = weighted_sum("q", [(tests, 1e308), (latency, 1e308)], description="even blend")
    assert huge.observed(THETA) == pytest.approx(0.5)
    tiny = weighted_sum("q", [(tests, 5e-324), (latency, 5e-324)], description="even blend")
    assert tiny.observed(THETA) == pytest.approx(0.5)


def test_fraction_weights_are_accepted(parts: list[Metric]) -> None:
    tests, latency, _ = parts
    combined = weighted_sum(
        "q",
        [(tests, Fraction(1, 3)), (latency, Fraction(2, 3))],  # type: ignore[list-item]
        description="blend",
    )
    assert combined.spec.components == (("tests", 1 / 3), ("latency", 2 / 3))


def test_weighted_mean_of_equal_values_is_exact() -> None:
    value = 0.9391491627785106
    weights = [0.6864838541790798, 1.0, 0.7637009951314895, 0.5528595762929651, 1.0]
    same = [bounded_rate(f"c{i}", lambda _: value, description="constant") for i in range(5)]
    combined = weighted_sum("q", list(zip(same, weights, strict=True)), description="blend")
    assert combined.observed(None) == value


def test_maximum_and_minimum(parts: list[Metric]) -> None:
    assert maximum("worst", parts, description="worst part").observed(THETA) == 0.75
    assert minimum("best", parts, description="best part").observed(THETA) == 0.25


def test_composite_specs(parts: list[Metric]) -> None:
    tests, latency, delta = parts
    ws = weighted_sum("q", [(tests, 2), (latency, 1)], description="blend", version=3)
    assert ws.spec == MetricSpec(
        "q",
        "bounded",
        "rate",
        "blend",
        version=3,
        composition="weighted_sum",
        components=(("tests", 2.0), ("latency", 1.0)),
    )
    mx = maximum("mx", parts, description="worst part")
    assert mx.spec.composition == "max"
    assert mx.composition == "max"
    assert mx.spec.components == (("tests", 1.0), ("latency", 1.0), ("delta", 1.0))
    assert minimum("mn", [delta], description="d").spec.composition == "min"
    assert mx.spec.kind == "bounded"
    assert mx.spec.unit == "rate"
    assert mx.spec.advisory_only is True


def test_composites_nest(parts: list[Metric]) -> None:
    tests, latency, delta = parts
    inner = maximum("inner", [tests, latency], description="worst of two")
    outer = weighted_sum("outer", [(inner, 1.0), (delta, 1.0)], description="blend")
    assert outer.observed(THETA) == pytest.approx((0.75 + 0.5) / 2)


def test_composite_normalize_validates_like_bounded(parts: list[Metric]) -> None:
    combined = maximum("worst", parts, description="worst part")
    assert combined.normalize(0.4) == 0.4
    assert combined.normalize(0.4, field="predicted") == 0.4
    with pytest.raises(
        InvalidObservationError,
        match=r"^predicted: metric 'worst' \(bounded\) expects a number in \[0, 1\] \(got 1.2\)",
    ):
        combined.normalize(1.2, field="predicted")
    with pytest.raises(InvalidObservationError, match=r"\(got nan\)"):
        combined.normalize(math.nan)


def test_component_errors_propagate(parts: list[Metric]) -> None:
    combined = maximum("worst", parts, description="worst part")
    with pytest.raises(InvalidObservationError, match="rate undefined"):
        combined.observed({**THETA, "total": 0})


@pytest.mark.parametrize(
    ("weight", "shown"),
    [(-1.0, "-1.0"), (-1, "-1"), (math.inf, "inf"), (math.nan, "nan"), (True, "True")],
)
def test_bad_weights(parts: list[Metric], weight: Any, shown: str) -> None:
    tests, latency, _ = parts
    with pytest.raises(
        CompositionError,
        match=rf"weighted_sum 'q': 'weight' of 'latency' must be a finite number >= 0 "
        rf"\(got {shown}\)",
    ):
        weighted_sum("q", [(tests, 1.0), (latency, weight)], description="blend")


def test_string_weight_is_rejected(parts: list[Metric]) -> None:
    with pytest.raises(CompositionError, match=r"'weight' of 'tests' .* \(got '1'\)"):
        weighted_sum("q", [(parts[0], "1")], description="blend")  # type: ignore[list-item]


def test_all_zero_weights(parts: list[Metric]) -> None:
    tests, latency, _ = parts
    with pytest.raises(
        CompositionError, match=r"at least one 'weight' must be > 0 \(got \[0.0, 0.0\]\)"
    ):
        weighted_sum("q", [(tests, 0.0), (latency, 0)], description="blend")


@pytest.mark.parametrize(
    ("build", "function"),
    [
        (lambda: weighted_sum("q", [], description="d"), "weighted_sum"),
        (lambda: maximum("q", [], description="d"), "maximum"),
        (lambda: minimum("q", iter([]), description="d"), "minimum"),
    ],
)
def test_empty_component_lists(build: Any, function: str) -> None:
    with pytest.raises(CompositionError, match=rf"^{function} 'q' needs at least one component"):
        build()


def test_duplicate_component_names(parts: list[Metric]) -> None:
    tests = parts[0]
    twin = bounded_rate("tests", description="another failing share")
    with pytest.raises(CompositionError, match=r"unique \(got 'tests' twice\)"):
        maximum("q", [tests, twin], description="d")
    with pytest.raises(CompositionError, match=r"^weighted_sum 'q': .*'tests' twice"):
        weighted_sum("q", [(tests, 1.0), (tests, 2.0)], description="d")


def test_a_composite_cannot_contain_its_own_name(parts: list[Metric]) -> None:
    with pytest.raises(CompositionError, match=r"cannot contain itself \(got 'tests'\)"):
        minimum("tests", parts, description="d")


def test_components_must_be_metrics_and_pairs(parts: list[Metric]) -> None:
    with pytest.raises(CompositionError, match=r"each component must be a Metric \(got 'tests'\)"):
        maximum("q", ["tests"], description="d")  # type: ignore[list-item]
    with pytest.raises(CompositionError, match=r"must be a \(metric, weight\) pair"):
        weighted_sum("q", [parts[0]], description="d")  # type: ignore[list-item]
    with pytest.raises(CompositionError, match=r"must be a Metric \(got 1.0\)"):
        weighted_sum("q", [(1.0, parts[0])], description="d")  # type: ignore[list-item]


def test_composite_description_is_guarded(parts: list[Metric]) -> None:
    with pytest.raises(GamingGuardError, match="'favor my'"):
        maximum("q", parts, description="scores that favor my approach")


def test_composite_metric_checks_its_spec(parts: list[Metric]) -> None:
    tests, latency, _ = parts
    plain = MetricSpec("q", "bounded", "", "d")
    with pytest.raises(CompositionError, match=r"'spec.composition' must be set \(got None\)"):
        CompositeMetric(plain, [(tests, 1.0)])
    composite = MetricSpec(
        "q", "bounded", "", "d", composition="max", components=(("tests", 1.0),)
    )
    with pytest.raises(CompositionError, match="components must match its spec"):
        CompositeMetric(composite, [(latency, 1.0)])
