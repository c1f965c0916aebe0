"""Gate bounds (``le``, ``lt``, ``ge``, ``gt``) on raw observed values, and their breaches.

A bound is a fact about one value; whether a breach *fails* anything is decided
elsewhere, by the metric's state at session start (the :class:`Breach` records the
decision, ``enforced``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

from pytest_ldd.errors import InvalidSpecError

__all__ = ["BOUND_KEYS", "Bound", "Breach", "check_bounds", "format_value", "parse_bounds"]

#: The gate keywords, in the order they are reported.
BOUND_KEYS: tuple[str, ...] = ("le", "lt", "ge", "gt")

_SYMBOL = {"le": "<=", "lt": "<", "ge": ">=", "gt": ">"}


@final
@dataclass(frozen=True, slots=True)
class Bound:
    """One limit on a raw value: ``value <op> limit`` must hold."""

    op: str
    limit: float

    def __post_init__(self) -> None:
        if self.op not in _SYMBOL:
            msg = f"gate operator must be one of {', '.join(BOUND_KEYS)} (got {self.op!r})"
            raise InvalidSpecError(msg)
        if (
            isinstance(self.limit, bool)
            or not isinstance(self.limit, (int, float))
            or math.isnan(self.limit)
        ):
            msg = f"gate {self.op!r} must be a number (got {self.limit!r})"
            raise InvalidSpecError(msg)

    def holds(self, value: float) -> bool:
        """True when ``value`` satisfies this bound."""
        if self.op == "le":
            return value <= self.limit
        if self.op == "lt":
            return value < self.limit
        if self.op == "ge":
            return value >= self.limit
        return value > self.limit

    def __str__(self) -> str:
        return f"{self.op} {format_value(self.limit)}"


def parse_bounds(options: Mapping[str, Any], *, where: str) -> tuple[Bound, ...]:
    """The bounds among ``options`` (other keys are ignored), validated.

    ``where`` names the source in error messages, e.g. ``"test_x: metric 'latency'"``.
    """
    bounds = []
    for key in BOUND_KEYS:
        if key in options and options[key] is not None:
            limit = options[key]
            if isinstance(limit, bool) or not isinstance(limit, (int, float)):
                msg = f"{where}: gate {key!r} must be a number (got {limit!r})"
                raise InvalidSpecError(msg)
            bounds.append(Bound(key, float(limit)))
    check_bounds({b.op: b.limit for b in bounds}, where=where)
    return tuple(bounds)


def check_bounds(limits: Mapping[str, float], *, where: str) -> None:
    """Refuse limits that no value can meet (``le = 0.1`` with ``ge = 0.9``).

    The one check behind the marker, ``[tool.ldd]`` and the ``ldd`` command.
    """
    lows = [(limits[k], k) for k in ("ge", "gt") if k in limits]
    highs = [(limits[k], k) for k in ("le", "lt") if k in limits]
    for low, low_key in lows:
        for high, high_key in highs:
            strict = low_key == "gt" or high_key == "lt"
            if low > high or (low == high and strict):
                msg = (
                    f"{where}: gates {low_key} = {format_value(low)} and {high_key} = "
                    f"{format_value(high)} contradict each other: no value meets both"
                )
                raise InvalidSpecError(msg)


def format_value(value: float) -> str:
    """A compact, exact-enough rendering of a number: ``512``, ``0.15``, ``inf``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


@final
@dataclass(frozen=True, slots=True)
class Breach:
    """One observed value outside one of its gate bounds (or a failed ``ldd.gate()``)."""

    metric: str
    #: The raw value (None for an ``ldd.gate()`` block, or a value JSON cannot hold).
    value: float | None
    #: ``"le 500"`` for a bound, ``"assertion"`` for an ``ldd.gate()`` block.
    limit: str
    #: Whether it fails its test: the metric was load-bearing at session start.
    enforced: bool
    message: str
    nodeid: str
    #: The failed assertion of an ``ldd.gate()`` block (None for a bound).
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form carried in payloads and reports (an infinite value is null)."""
        value = self.value
        return {
            "metric": self.metric,
            "value": value if value is None or math.isfinite(value) else None,
            "limit": self.limit,
            "enforced": self.enforced,
            "message": self.message,
            "nodeid": self.nodeid,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: object) -> Breach:
        """Read :meth:`to_json`'s object back; ``ValueError`` for any other shape."""
        if not isinstance(data, Mapping):
            msg = f"a breach must be an object (got {data!r:.80})"
            raise ValueError(msg)
        value, detail = data.get("value"), data.get("detail")
        texts = [data.get(key) for key in ("metric", "limit", "message", "nodeid")]
        if (
            not all(isinstance(text, str) for text in texts)
            or type(data.get("enforced")) is not bool
            or not (value is None or (isinstance(value, (int, float)) and type(value) is not bool))
            or not (detail is None or isinstance(detail, str))
        ):
            msg = f"a breach must hold the keys of Breach.to_json (got {data!r:.80})"
            raise ValueError(msg)
        metric, limit, message, nodeid = texts
        return cls(metric, value, limit, data["enforced"], message, nodeid, detail)  # type: ignore[arg-type]
