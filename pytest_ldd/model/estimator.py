"""Estimators predict a metric's next value, so that calibration has pairs to judge.

An estimator turns a context (past observations, a prior and its antitheses, ...)
into a :class:`Prediction`.  A prediction without a value logs no calibration pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Final, Protocol, final, runtime_checkable

__all__ = [
    "BayesianSynthesisEstimator",
    "Estimator",
    "MeanHistoryEstimator",
    "Prediction",
]


def _real(value: object) -> float | None:
    """``value`` as a float when it is a real number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    return float(value)


@final
@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted value (``None``: no prediction) with a confidence in [0, 1].

    A missing value carries no confidence, so ``value=None`` requires
    ``confidence == 0.0``.  The value may be infinite (a positive metric's latency
    can be, and its normalized value is then 1.0); it is never NaN.
    """

    value: float | None
    confidence: float

    def __post_init__(self) -> None:
        if self.value is not None:
            value = _real(self.value)
            if value is None or math.isnan(value):
                msg = f"Prediction 'value' must be None or a number, not NaN (got {self.value!r})"
                raise ValueError(msg)
            object.__setattr__(self, "value", value)
        confidence = _real(self.confidence)
        if confidence is None or not 0.0 <= confidence <= 1.0:
            msg = f"Prediction 'confidence' must be a number in [0, 1] (got {self.confidence!r})"
            raise ValueError(msg)
        if self.value is None and confidence != 0.0:
            msg = f"Prediction 'confidence' must be 0.0 when 'value' is None (got {confidence!r})"
            raise ValueError(msg)
        object.__setattr__(self, "confidence", confidence)


@runtime_checkable
class Estimator(Protocol):
    """Anything with ``predict(context) -> Prediction``."""

    def predict(self, context: Any) -> Prediction:
        """Predict the next value from ``context``."""
        ...


_LN_11: Final = math.log(11.0)


#: What a history holds, as :meth:`MeanHistoryEstimator.reading` names it.
EMPTY: Final = "empty"
MEAN: Final = "mean"
PLUS_INFINITY: Final = "+inf"
MINUS_INFINITY: Final = "-inf"
UNDEFINED: Final = "+inf and -inf"


@final
@dataclass(frozen=True, slots=True)
class MeanHistoryEstimator:
    """Predicts the mean of the last ``window`` observed values.

    ``confidence = min(1, ln(1 + n) / ln(11))`` where ``n`` is the number of values
    averaged: 10 values give full confidence.  No history gives
    ``Prediction(None, 0.0)``.

    Values may be infinite (a positive metric accepts ``inf``); what the window
    holds is read as one of five :meth:`reading` names, and the prediction follows:

    - ``"empty"``: no value, no prediction;
    - ``"mean"``: only finite values, predicted as their mean, summed as
      ``fsum(v / n)`` (halves of those terms where, rounded, they sum past the
      largest float: three values of ``sys.float_info.max``) and kept between the
      least and the greatest value, so it is finite (three values of ``1e308``
      predict ``1e308``);
    - ``"+inf"`` / ``"-inf"``: an infinite value (of one sign) dominates the mean,
      which is that infinity;
    - ``"+inf and -inf"``: the mean is undefined, so there is no prediction (and no
      calibration pair), as with no history.
    """

    window: int = 10

    def __post_init__(self) -> None:
        window: object = self.window
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            msg = f"MeanHistoryEstimator 'window' must be an int >= 1 (got {window!r})"
            raise ValueError(msg)

    def reading(self, context: Any) -> str:
        """What the last ``window`` values of ``context`` hold (see the class docstring)."""
        return _reading(_history(context)[-self.window :])

    def predict(self, context: Any) -> Prediction:
        """``context`` is a sequence of past observed values, or ``{"history": [...]}``."""
        recent = _history(context)[-self.window :]
        reading = _reading(recent)
        if reading in (EMPTY, UNDEFINED):
            return Prediction(None, 0.0)
        n = len(recent)
        if reading == MEAN:
            mean = _finite_mean(recent)
        else:
            mean = math.inf if reading == PLUS_INFINITY else -math.inf
        return Prediction(mean, min(1.0, math.log1p(n) / _LN_11))


def _finite_mean(values: Sequence[float]) -> float:
    """The mean of finite ``values``, finite and between their least and greatest.

    Each term ``value / n`` is at most max-float / n, yet terms rounded up can sum
    past max-float (three times max-float makes fsum overflow): then the halves are
    summed and doubled, and rounding is kept within the values either way.
    """
    n = len(values)
    try:
        mean = math.fsum(value / n for value in values)
    except OverflowError:
        mean = 2.0 * math.fsum(value / (2 * n) for value in values)
    return min(max(mean, min(values)), max(values))


def _reading(values: Sequence[float]) -> str:
    if not values:
        return EMPTY
    plus = math.inf in values
    minus = -math.inf in values
    if plus and minus:
        return UNDEFINED
    if plus:
        return PLUS_INFINITY
    if minus:
        return MINUS_INFINITY
    return MEAN


def _history(context: object) -> list[float]:
    field = "context"
    if isinstance(context, Mapping):
        if "history" not in context:
            msg = (
                f"MeanHistoryEstimator context must have the key 'history' (got {sorted(context)})"
            )
            raise ValueError(msg)
        context = context["history"]
        field = "history"
    if isinstance(context, (str, bytes)) or not isinstance(context, Sequence):
        msg = f"MeanHistoryEstimator {field!r} must be a sequence of numbers (got {context!r})"
        raise ValueError(msg)
    values: list[float] = []
    for index, item in enumerate(context):
        value = _real(item)
        if value is None or math.isnan(value):
            msg = (
                f"MeanHistoryEstimator {field!r}[{index}] must be a number, not NaN (got {item!r})"
            )
            raise ValueError(msg)
        values.append(value)
    return values


def _probability(field: str, value: object) -> float:
    number = _real(value)
    if number is None or not 0.0 <= number <= 1.0:
        msg = (
            f"BayesianSynthesisEstimator {field!r} must be a probability in [0, 1] (got {value!r})"
        )
        raise ValueError(msg)
    return number


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


@final
@dataclass(frozen=True, slots=True)
class BayesianSynthesisEstimator:
    """Weighs a thesis prior against antitheses that would shift it.

    ``predict({"thesis_prior": p, "antitheses": [(prob, impact), ...]})`` returns
    ``clip(max(0, 1 - sum(prob)) * p + sum(prob * clip(p + impact, 0, 1)), 0, 1)``.
    When the antitheses' probabilities sum past 1 the thesis keeps no weight.

    The confidence is how much the scenarios (the thesis, weighted
    ``max(0, 1 - sum(prob))``, and each antithesis, weighted ``prob``) agree:
    ``1 - 2 * D`` with ``D`` the weighted mean absolute deviation of their outcomes
    from the weighted mean outcome; 1.0 when all agree, 0.0 for an even split
    between 0 and 1.
    """

    def predict(self, context: Any) -> Prediction:
        """Synthesize a prediction from a thesis prior and its antitheses."""
        prior, antitheses = _synthesis_context(context)
        thesis_weight = max(0.0, 1.0 - math.fsum(prob for prob, _ in antitheses))
        scenarios = [(thesis_weight, prior)]
        scenarios += [(prob, _clip(prior + impact)) for prob, impact in antitheses]
        predicted = _clip(math.fsum(w * outcome for w, outcome in scenarios))
        total = math.fsum(w for w, _ in scenarios)  # >= 1: thesis and antitheses share 1
        mean = math.fsum(w * outcome for w, outcome in scenarios) / total
        spread = math.fsum(w * abs(outcome - mean) for w, outcome in scenarios) / total
        return Prediction(predicted, _clip(1.0 - 2.0 * spread))


def _synthesis_context(context: object) -> tuple[float, list[tuple[float, float]]]:
    if not isinstance(context, Mapping):
        msg = (
            "BayesianSynthesisEstimator context must be a mapping with 'thesis_prior' "
            f"and 'antitheses' (got {context!r})"
        )
        raise ValueError(msg)
    unknown = sorted(str(key) for key in context if key not in {"thesis_prior", "antitheses"})
    if unknown:
        msg = (
            "BayesianSynthesisEstimator context keys must be 'thesis_prior' and "
            f"'antitheses' (got unknown {unknown})"
        )
        raise ValueError(msg)
    if "thesis_prior" not in context:
        msg = f"BayesianSynthesisEstimator context needs 'thesis_prior' (got {sorted(context)})"
        raise ValueError(msg)
    prior = _probability("thesis_prior", context["thesis_prior"])
    raw = context.get("antitheses", ())
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        msg = (
            "BayesianSynthesisEstimator 'antitheses' must be a sequence of "
            f"(prob, impact) pairs (got {raw!r})"
        )
        raise ValueError(msg)
    antitheses: list[tuple[float, float]] = []
    for index, item in enumerate(raw):
        field = f"antitheses[{index}]"
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            msg = (
                f"BayesianSynthesisEstimator {field!r} must be a (prob, impact) pair "
                f"(got {item!r})"
            )
            raise ValueError(msg)
        prob = _probability(f"{field}.prob", item[0])
        impact = _real(item[1])
        if impact is None or not math.isfinite(impact):
            msg = (
                f"BayesianSynthesisEstimator '{field}.impact' must be a finite number "
                f"(got {item[1]!r})"
            )
            raise ValueError(msg)
        antitheses.append((prob, impact))
    return prior, antitheses
