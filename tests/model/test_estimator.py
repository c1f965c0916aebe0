"""Prediction, the Estimator protocol, and both estimators on hand-computed cases."""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_ldd.model.estimator import (
    BayesianSynthesisEstimator,
    Estimator,
    MeanHistoryEstimator,
    Prediction,
)

# --------------------------------------------------------------------------- Prediction


def test_prediction_is_a_frozen_value() -> None:
    p = Prediction(0.4, 0.5)
    assert (p.value, p.confidence) == (0.4, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.value = 0.1  # type: ignore[misc]
    assert Prediction(1, 1) == Prediction(1.0, 1.0)
    assert isinstance(Prediction(1, 1).value, float)
    assert Prediction(None, 0.0).value is None


@pytest.mark.parametrize(
    ("value", "confidence", "message"),
    [
        (math.nan, 0.5, r"Prediction 'value' must be None or a number, not NaN \(got nan\)"),
        (True, 0.5, r"'value' .* \(got True\)"),
        ("0.3", 0.5, r"'value' .* \(got '0.3'\)"),
        (0.3, 1.5, r"Prediction 'confidence' must be a number in \[0, 1\] \(got 1.5\)"),
        (0.3, -0.1, r"'confidence' .* \(got -0.1\)"),
        (0.3, math.nan, r"'confidence' .* \(got nan\)"),
        (0.3, None, r"'confidence' .* \(got None\)"),
        (None, 0.5, r"'confidence' must be 0.0 when 'value' is None \(got 0.5\)"),
    ],
)
def test_prediction_validation(value: Any, confidence: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Prediction(value, confidence)


def test_both_estimators_satisfy_the_protocol() -> None:
    assert isinstance(MeanHistoryEstimator(), Estimator)
    assert isinstance(BayesianSynthesisEstimator(), Estimator)
    assert not isinstance(object(), Estimator)


# --------------------------------------------------------------------------- MeanHistoryEstimator


def confidence(n: int) -> float:
    return min(1.0, math.log(1 + n) / math.log(11))


@pytest.mark.parametrize("history", [[], (), {"history": []}])
def test_no_history_gives_no_prediction(history: Any) -> None:
    assert MeanHistoryEstimator().predict(history) == Prediction(None, 0.0)


def test_mean_and_confidence_on_short_history() -> None:
    p = MeanHistoryEstimator().predict([0.2, 0.4])
    assert p.value == pytest.approx(0.3)
    assert p.confidence == pytest.approx(math.log(3) / math.log(11))


def test_one_value() -> None:
    p = MeanHistoryEstimator().predict({"history": [0.7]})
    assert p == Prediction(0.7, math.log(2) / math.log(11))


def test_window_keeps_only_the_last_values() -> None:
    history = [1.0] * 5 + [0.0, 0.5]
    p = MeanHistoryEstimator(window=2).predict(history)
    assert p.value == 0.25
    assert p.confidence == pytest.approx(confidence(2))


def test_ten_values_give_full_confidence() -> None:
    history = [i / 20 for i in range(20)]
    p = MeanHistoryEstimator().predict(history)
    assert p.value == pytest.approx(sum(history[-10:]) / 10)
    assert p.confidence == 1.0
    wide = MeanHistoryEstimator(window=50).predict(history)
    assert wide.value == pytest.approx(sum(history) / 20)
    assert wide.confidence == 1.0


@pytest.mark.parametrize("n", range(1, 12))
def test_confidence_formula(n: int) -> None:
    p = MeanHistoryEstimator(window=100).predict([0.5] * n)
    assert p.confidence == pytest.approx(confidence(n))
    assert p.value == 0.5


@pytest.mark.parametrize("window", [0, -1, True, 2.0, "10"])
def test_window_validation(window: Any) -> None:
    with pytest.raises(
        ValueError, match=rf"MeanHistoryEstimator 'window' must be an int >= 1 \(got {window!r}\)"
    ):
        MeanHistoryEstimator(window=window)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"values": [0.1]}, r"context must have the key 'history' \(got \['values'\]\)"),
        ("0.5", r"'context' must be a sequence of numbers \(got '0.5'\)"),
        (0.5, r"'context' must be a sequence of numbers \(got 0.5\)"),
        ({"history": 3}, r"'history' must be a sequence of numbers \(got 3\)"),
        ([0.1, None], r"'context'\[1\] must be a number, not NaN \(got None\)"),
        ({"history": [math.nan]}, r"'history'\[0\] must be a number, not NaN \(got nan\)"),
        ([True], r"'context'\[0\] must be a number, not NaN \(got True\)"),
    ],
)
def test_mean_history_rejects_bad_context(context: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MeanHistoryEstimator().predict(context)


@pytest.mark.parametrize(
    ("history", "reading", "value"),
    [
        ([], "empty", None),
        ([1e308, 1e308, 1e308], "mean", 1e308),
        ([1.7e308, -1.7e308, 1.7e308], "mean", 1.7e308 / 3),
        ([math.inf, 5.0], "+inf", math.inf),
        ([-math.inf, 5.0, -math.inf], "-inf", -math.inf),
        ([math.inf, -math.inf], "+inf and -inf", None),
        ([math.inf, -math.inf, 1.0], "+inf and -inf", None),
    ],
)
def test_mean_history_names_what_the_history_holds(
    history: list[float], reading: str, value: float | None
) -> None:
    # A sum of huge values once overflowed (fsum's OverflowError), and an infinite
    # value was refused: either crashed the test that predicted from its history.
    estimator = MeanHistoryEstimator()
    assert estimator.reading(history) == reading
    prediction = estimator.predict(history)
    assert prediction.value == (None if value is None else pytest.approx(value, rel=1e-15))
    assert (prediction.confidence == 0.0) == (value is None)


def test_an_infinity_outside_the_window_is_forgotten() -> None:
    estimator = MeanHistoryEstimator(window=2)
    assert estimator.reading([math.inf, 1.0, 3.0]) == "mean"
    assert estimator.predict([math.inf, 1.0, 3.0]).value == 2.0
    assert estimator.predict([-math.inf, math.inf, 3.0]).value == math.inf


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12))
@example([sys.float_info.max] * 3)  # its terms, rounded up, summed past max-float
@example([-sys.float_info.max] * 5)
@example([sys.float_info.max, -sys.float_info.max, sys.float_info.max])
def test_the_mean_of_finite_values_is_finite_and_within_them(values: list[float]) -> None:
    value = MeanHistoryEstimator(window=12).predict(values).value
    assert value is not None
    assert math.isfinite(value)
    low, high = min(values), max(values)
    assert low - abs(low) * 1e-12 - 1e-300 <= value <= high + abs(high) * 1e-12 + 1e-300


# --------------------------------------------------------------------------- Bayesian synthesis


def synth(prior: float, antitheses: list[tuple[float, float]]) -> Prediction:
    return BayesianSynthesisEstimator().predict({"thesis_prior": prior, "antitheses": antitheses})


def test_no_antitheses_keeps_the_prior() -> None:
    assert synth(0.6, []) == Prediction(0.6, 1.0)
    assert BayesianSynthesisEstimator().predict({"thesis_prior": 0.3}) == Prediction(0.3, 1.0)


def test_hand_computed_two_antitheses() -> None:
    # thesis weight 1 - 0.5 = 0.5; outcomes 0.6, clip(0.2) = 0.2, clip(1.1) = 1.0
    p = synth(0.6, [(0.3, -0.4), (0.2, 0.5)])
    assert p.value == pytest.approx(0.5 * 0.6 + 0.3 * 0.2 + 0.2 * 1.0)  # 0.56
    # mean 0.56; deviations 0.04, 0.36, 0.44 -> D = 0.02 + 0.108 + 0.088 = 0.216
    assert p.confidence == pytest.approx(1 - 2 * 0.216)


def test_hand_computed_even_split_has_no_confidence() -> None:
    p = synth(0.5, [(0.5, -0.5), (0.5, 0.5)])
    assert p.value == pytest.approx(0.5)
    assert p.confidence == pytest.approx(0.0)


def test_impact_is_clipped_per_antithesis() -> None:
    p = synth(0.2, [(1.0, -0.9)])
    assert p.value == 0.0  # thesis weight 0, clip(0.2 - 0.9) = 0
    assert p.confidence == 1.0


def test_probabilities_summing_past_one_leave_the_thesis_no_weight() -> None:
    # max(0, 1 - 1.5) = 0 -> 0.8 * clip(1.4) + 0.7 * clip(1.4) = 1.5 -> clip to 1.0
    p = synth(0.9, [(0.8, 0.5), (0.7, 0.5)])
    assert p.value == 1.0
    assert p.confidence == 1.0
    q = synth(0.5, [(0.6, -0.5), (0.6, -0.1)])
    assert q.value == pytest.approx(0.6 * 0.0 + 0.6 * 0.4)


def test_antitheses_may_be_lists() -> None:
    context = {"thesis_prior": 0.5, "antitheses": [[0.5, 0.2]]}
    assert BayesianSynthesisEstimator().predict(context).value == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ([0.5], r"context must be a mapping with 'thesis_prior' and 'antitheses' \(got \[0.5\]\)"),
        ({"antitheses": []}, r"context needs 'thesis_prior' \(got \['antitheses'\]\)"),
        ({"thesis_prior": 0.5, "antithesis": []}, r"got unknown \['antithesis'\]"),
        ({"thesis_prior": 1.5}, r"'thesis_prior' must be a probability in \[0, 1\] \(got 1.5\)"),
        ({"thesis_prior": -0.1}, r"'thesis_prior' .* \(got -0.1\)"),
        ({"thesis_prior": math.nan}, r"'thesis_prior' .* \(got nan\)"),
        ({"thesis_prior": True}, r"'thesis_prior' .* \(got True\)"),
        ({"thesis_prior": "0.5"}, r"'thesis_prior' .* \(got '0.5'\)"),
        (
            {"thesis_prior": 0.5, "antitheses": "x"},
            r"'antitheses' must be a sequence of \(prob, impact\) pairs \(got 'x'\)",
        ),
        (
            {"thesis_prior": 0.5, "antitheses": [(0.1,)]},
            r"'antitheses\[0\]' must be a \(prob, impact\) pair \(got \(0.1,\)\)",
        ),
        (
            {"thesis_prior": 0.5, "antitheses": [(0.1, 0.2), (1.2, 0.1)]},
            r"'antitheses\[1\].prob' must be a probability in \[0, 1\] \(got 1.2\)",
        ),
        (
            {"thesis_prior": 0.5, "antitheses": [(0.1, math.inf)]},
            r"'antitheses\[0\].impact' must be a finite number \(got inf\)",
        ),
        (
            {"thesis_prior": 0.5, "antitheses": [(0.1, None)]},
            r"'antitheses\[0\].impact' must be a finite number \(got None\)",
        ),
    ],
)
def test_bayesian_rejects_bad_context(context: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BayesianSynthesisEstimator().predict(context)
