"""Composite metrics: weighted mean, maximum and minimum of normalized components.

Every component is normalized first, so kinds may mix; a composite is itself a
bounded metric whose value at ``theta`` depends only on its components' values at
the same ``theta``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real

from pytest_ldd.errors import CompositionError

# CompositeMetric lives in metric.py (a metric kind the registry rebuilds from a stored
# spec); it is re-exported here, where the composition functions build it.
from pytest_ldd.model.metric import CompositeMetric, Composition, Metric, MetricSpec

__all__ = ["CompositeMetric", "maximum", "minimum", "weighted_sum"]


def _require_metric(function: str, name: str, item: object) -> Metric:
    if not isinstance(item, Metric):
        msg = f"{function} {name!r}: each component must be a Metric (got {item!r})"
        raise CompositionError(msg)
    return item


def _check_weight(function: str, name: str, metric: Metric, weight: object) -> float:
    if (
        isinstance(weight, bool)
        or not isinstance(weight, Real)
        or not math.isfinite(weight)
        or weight < 0
    ):
        msg = (
            f"{function} {name!r}: 'weight' of {metric.name!r} must be a finite "
            f"number >= 0 (got {weight!r})"
        )
        raise CompositionError(msg)
    return float(weight)


def _build(
    function: str,
    name: str,
    composition: Composition,
    components: list[tuple[Metric, float]],
    description: str,
    version: int,
) -> CompositeMetric:
    if not components:
        msg = f"{function} {name!r} needs at least one component (got [])"
        raise CompositionError(msg)
    seen: set[str] = set()
    for metric, _ in components:
        if metric.name in seen:
            msg = (
                f"{function} {name!r}: component names must be unique (got {metric.name!r} twice)"
            )
            raise CompositionError(msg)
        if metric.name == name:
            msg = f"{function} {name!r}: a composite cannot contain itself (got {metric.name!r})"
            raise CompositionError(msg)
        seen.add(metric.name)
    if composition == "weighted_sum" and not any(weight > 0 for _, weight in components):
        weights = [weight for _, weight in components]
        msg = f"{function} {name!r}: at least one 'weight' must be > 0 (got {weights})"
        raise CompositionError(msg)
    spec = MetricSpec(
        name,
        "bounded",
        "rate",
        description,
        version=version,
        composition=composition,
        components=tuple((metric.name, weight) for metric, weight in components),
    )
    return CompositeMetric(spec, components)


def weighted_sum(
    name: str,
    components: Iterable[tuple[Metric, float]],
    *,
    description: str,
    version: int = 1,
) -> CompositeMetric:
    """The weighted mean ``sum(w * observed) / sum(w)`` of the components.

    Weights are finite numbers >= 0, not all zero; scaling them all by the same
    factor changes nothing.
    """
    checked: list[tuple[Metric, float]] = []
    for item in components:
        pair: object = item
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            msg = (
                f"weighted_sum {name!r}: each component must be a (metric, weight) pair "
                f"(got {pair!r})"
            )
            raise CompositionError(msg)
        metric = _require_metric("weighted_sum", name, pair[0])
        checked.append((metric, _check_weight("weighted_sum", name, metric, pair[1])))
    return _build("weighted_sum", name, "weighted_sum", checked, description, version)


def maximum(
    name: str, components: Iterable[Metric], *, description: str, version: int = 1
) -> CompositeMetric:
    """The largest of the components' observed values."""
    checked = [(_require_metric("maximum", name, item), 1.0) for item in components]
    return _build("maximum", name, "max", checked, description, version)


def minimum(
    name: str, components: Iterable[Metric], *, description: str, version: int = 1
) -> CompositeMetric:
    """The smallest of the components' observed values."""
    checked = [(_require_metric("minimum", name, item), 1.0) for item in components]
    return _build("minimum", name, "min", checked, description, version)
