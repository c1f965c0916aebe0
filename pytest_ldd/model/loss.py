"""Losses over metrics: a scalar :class:`Loss`, its :class:`Signal` and :class:`VectorLoss`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType
from typing import Any, Final, final

from pytest_ldd.model.metric import Metric

__all__ = ["Loss", "Signal", "VectorLoss"]


@final
@dataclass(frozen=True, slots=True)
class Loss:
    """A scalar loss: the metric's normalized value at ``theta``."""

    metric: Metric

    def __post_init__(self) -> None:
        metric: object = self.metric
        if not isinstance(metric, Metric):
            msg = f"Loss 'metric' must be a Metric (got {metric!r})"
            raise TypeError(msg)

    def evaluate(self, theta: Any) -> float:
        """``metric.observed(theta)``, in [0, 1]."""
        return self.metric.observed(theta)


@final
@dataclass(frozen=True, slots=True)
class Signal:
    """The change of a loss between two states: ``L(after) - L(before)``, in [-1, 1]."""

    loss: Loss

    def __post_init__(self) -> None:
        loss: object = self.loss
        if not isinstance(loss, Loss):
            msg = f"Signal 'loss' must be a Loss (got {loss!r})"
            raise TypeError(msg)

    def compute(self, before: Any, after: Any) -> float:
        """``loss.evaluate(after) - loss.evaluate(before)``; negative means better."""
        return self.loss.evaluate(after) - self.loss.evaluate(before)


# A dimension name must survive a dumps()/loads() round trip unchanged.
_DIMENSION_RE: Final = re.compile(r"[^\s,:](?:[^,:]*[^\s,:])?")
_NUMBER_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _check_value(dimension: str, value: object) -> float:
    number = float(value) if not isinstance(value, bool) and isinstance(value, Real) else None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        msg = (
            f"VectorLoss value of {dimension!r} must be a finite number in [0, 1] (got {value!r})"
        )
        raise ValueError(msg)
    return number


@final
@dataclass(frozen=True, slots=True)
class VectorLoss:
    """Per-dimension losses in [0, 1], compared by Pareto dominance (lower is better).

    ``values`` keeps insertion order and is read-only; ``dumps()`` writes
    ``"latency:0.800,memory:0.400"`` and ``VectorLoss.loads`` reads it back.
    """

    values: Mapping[str, float]

    def __post_init__(self) -> None:
        values: object = self.values
        if not isinstance(values, Mapping):
            msg = f"VectorLoss 'values' must be a mapping of dimension to loss (got {values!r})"
            raise TypeError(msg)
        if not values:
            msg = "VectorLoss 'values' must have at least one dimension (got {})"
            raise ValueError(msg)
        checked: dict[str, float] = {}
        for dimension, value in values.items():
            if not isinstance(dimension, str) or not _DIMENSION_RE.fullmatch(dimension):
                msg = (
                    "VectorLoss dimension must be a non-empty str without ',' or ':' "
                    f"or surrounding whitespace (got {dimension!r})"
                )
                raise ValueError(msg)
            checked[dimension] = _check_value(dimension, value)
        object.__setattr__(self, "values", MappingProxyType(checked))

    def __hash__(self) -> int:
        return hash(frozenset(self.values.items()))

    def __repr__(self) -> str:
        return f"VectorLoss({dict(self.values)!r})"

    def dominates(self, other: VectorLoss) -> bool | None:
        """Pareto dominance, lower loss being better.

        ``True`` when ``self`` is no worse on every dimension and better on one;
        ``False`` when ``other`` dominates ``self``; ``None`` when neither does
        (equal, or a trade-off).  Both must have the same dimensions, else
        ``ValueError``.
        """
        other_obj: object = other
        if not isinstance(other_obj, VectorLoss):
            msg = f"dominates() 'other' must be a VectorLoss (got {other_obj!r})"
            raise TypeError(msg)
        if set(self.values) != set(other.values):
            msg = (
                f"dominates() needs equal dimensions: expected {sorted(self.values)} "
                f"(got {sorted(other.values)})"
            )
            raise ValueError(msg)
        better = any(self.values[d] < other.values[d] for d in self.values)
        worse = any(self.values[d] > other.values[d] for d in self.values)
        if better and not worse:
            return True
        if worse and not better:
            return False
        return None

    def dumps(self) -> str:
        """``"name:0.800,other:0.400"``: three decimals, in insertion order."""
        return ",".join(f"{d}:{v:.3f}" for d, v in self.values.items())

    @classmethod
    def loads(cls, text: str) -> VectorLoss:
        """Parse :meth:`dumps` output; any malformed token is a ``ValueError`` naming it.

        Whitespace around tokens, names and numbers is ignored.
        """
        text_obj: object = text
        if not isinstance(text_obj, str):
            msg = f"VectorLoss.loads() expects a str (got {text_obj!r})"
            raise TypeError(msg)
        values: dict[str, float] = {}
        for index, token in enumerate(text.split(",")):
            name, sep, number = (part.strip() for part in token.partition(":"))
            if not token.strip():
                msg = f"VectorLoss token {index + 1} is empty (got {text!r})"
                raise ValueError(msg)
            if not sep:
                msg = f"VectorLoss token {token!r} must be 'name:value' (missing ':')"
                raise ValueError(msg)
            if not _DIMENSION_RE.fullmatch(name):
                msg = f"VectorLoss token {token!r} has no valid dimension name (got {name!r})"
                raise ValueError(msg)
            if not _NUMBER_RE.fullmatch(number):
                msg = f"VectorLoss token {token!r} must have a decimal number (got {number!r})"
                raise ValueError(msg)
            if name in values:
                msg = f"VectorLoss token {token!r} repeats the dimension {name!r}"
                raise ValueError(msg)
            value = float(number)
            if not 0.0 <= value <= 1.0:
                msg = f"VectorLoss token {token!r} must have a value in [0, 1] (got {value!r})"
                raise ValueError(msg)
            values[name] = value
        return cls(values)
