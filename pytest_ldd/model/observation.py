"""The value a test yields (or hands to the ``ldd`` fixture) for one metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, final

__all__ = ["Observation"]


@final
@dataclass(frozen=True, slots=True)
class Observation:
    """One raw observed value of a metric, with an optional raw prediction.

    Values are validated against the metric when they are recorded, not here:
    the metric's kind decides what is valid.
    """

    name: str
    observed: Any
    predicted: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            msg = f"Observation 'name' must be a non-empty str (got {self.name!r})"
            raise TypeError(msg)
