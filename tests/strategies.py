"""Hypothesis strategies for the metric algebra: raw values, metrics, weights, vectors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pytest_ldd.model.loss import VectorLoss
from pytest_ldd.model.metric import Metric, bounded_rate, positive_count, signed_delta

unit_floats = st.floats(min_value=0.0, max_value=1.0)
"""Values already on the normalized scale."""

scales = st.floats(min_value=1e-3, max_value=1e6)
"""``normalize_scale`` values."""

metric_names = st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)
"""Valid metric names."""

descriptions = st.sampled_from(
    [
        "fraction of failing tests in the suite",
        "p99 latency of the checkout endpoint",
        "change in loss between two iterations",
        "the api wants a token; count of rejected requests",
        "Anteil der fehlschlagenden Tests",
        "taux de tests en échec",
        "proporción de pruebas fallidas",
    ]
)
"""Descriptions that pass the gaming-guard."""

failing_total = st.integers(min_value=1, max_value=10_000).flatmap(
    lambda total: st.tuples(st.integers(min_value=0, max_value=total), st.just(total))
)
"""Valid ``(failing, total)`` pairs."""

bounded_raw = st.one_of(unit_floats, failing_total)
positive_raw = st.one_of(
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=True),
    st.integers(min_value=0, max_value=10**9),
)
signed_raw = st.one_of(
    st.floats(allow_nan=False, allow_infinity=True),
    st.integers(min_value=-(10**9), max_value=10**9),
)
RAW_BY_KIND: dict[str, st.SearchStrategy[Any]] = {
    "bounded": bounded_raw,
    "positive": positive_raw,
    "signed": signed_raw,
}

kinds = st.sampled_from(["bounded", "positive", "signed"])


def make_leaf(kind: str, name: str, scale: float = 1.0) -> Metric:
    """A metric of ``kind`` reading ``theta[name]``."""

    def accessor(theta: Any) -> Any:
        return theta[name]

    description = f"value of {name} in the state"
    if kind == "bounded":
        return bounded_rate(name, accessor, description=description)
    if kind == "positive":
        return positive_count(name, accessor, description=description, normalize_scale=scale)
    return signed_delta(name, accessor, description=description, normalize_scale=scale)


@dataclass(frozen=True)
class Leaves:
    """Distinct component metrics of mixed kinds and a state ``theta`` they read."""

    metrics: tuple[Metric, ...]
    theta: dict[str, Any]

    def values(self) -> list[float]:
        """Each component's observed value at ``theta``."""
        return [metric.observed(self.theta) for metric in self.metrics]


@st.composite
def leaves(draw: st.DrawFn, min_size: int = 1, max_size: int = 6) -> Leaves:
    """Between ``min_size`` and ``max_size`` distinct metrics of mixed kinds with a theta."""
    count = draw(st.integers(min_value=min_size, max_value=max_size))
    metrics: list[Metric] = []
    theta: dict[str, Any] = {"unread": draw(st.integers())}
    for index in range(count):
        kind = draw(kinds)
        name = f"m{index}"
        metrics.append(make_leaf(kind, name, draw(scales)))
        theta[name] = draw(RAW_BY_KIND[kind])
    return Leaves(tuple(metrics), theta)


weights = st.one_of(
    st.floats(min_value=0.0, max_value=1e6),
    st.integers(min_value=0, max_value=1000),
)
"""Valid single weights (zero allowed)."""


def weight_lists(size: int) -> st.SearchStrategy[list[float]]:
    """``size`` valid weights, at least one of them > 0."""
    return st.lists(weights, min_size=size, max_size=size).filter(lambda ws: any(ws))


lambdas = st.floats(min_value=1e-3, max_value=1e3)
"""Positive scaling factors for the homogeneity law."""

dimension_names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)


@st.composite
def vector_pairs(draw: st.DrawFn) -> tuple[VectorLoss, VectorLoss]:
    """Two vector losses over the same dimensions."""
    names = draw(st.lists(dimension_names, min_size=1, max_size=5, unique=True))
    grid = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
    first = {name: draw(grid) for name in names}
    second = {name: draw(grid) for name in names}
    return VectorLoss(first), VectorLoss(second)


vector_losses = st.dictionaries(dimension_names, unit_floats, min_size=1, max_size=6).map(
    VectorLoss
)
