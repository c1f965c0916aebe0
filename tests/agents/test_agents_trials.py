"""pass@k / pass^k with intervals over a problem set, inconclusive samples left out."""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.agents import (
    PassEstimate,
    estimate_pass_at_k,
    estimate_pass_hat_k,
    pass_at_k,
    pass_hat_k,
)
from pytest_ldd.errors import InvalidObservationError


def test_estimate_equals_the_unbiased_estimator_and_its_normal_interval() -> None:
    trials = {
        "a": [True, True, False, False],
        "b": [True, False, False, False],
        "c": [True, True, True, True],
    }
    estimate = estimate_pass_at_k(trials, 2)
    # per task 1 - C(n-c, 2)/C(4, 2): a 1 - 1/6, b 1 - 3/6, c 1
    per_task = [5 / 6, 1 / 2, 1.0]
    assert estimate.value == pytest.approx(statistics.fmean(per_task))
    assert estimate.value == pytest.approx(pass_at_k(trials, 2))
    error = statistics.stdev(per_task) / math.sqrt(3)
    assert estimate.standard_error == pytest.approx(error)
    assert estimate.low == pytest.approx(estimate.value - 1.959963984540054 * error)
    assert estimate.high == 1.0  # clipped: value + z*se is above 1
    assert (estimate.tasks, estimate.samples, estimate.inconclusive) == (3, 12, 0)
    assert estimate.tasks_left_out == 0
    assert str(estimate).startswith("pass@2 = 0.778 [")
    hat = estimate_pass_hat_k(trials, 2)
    assert hat.value == pytest.approx(pass_hat_k(trials, 2))
    assert hat.kind == "pass^k"
    assert str(hat).startswith("pass^2 = ")


def test_inconclusive_samples_are_left_out_and_counted() -> None:
    trials = {
        "a": [True, None, False, None],  # 2 conclusive: n=2, c=1
        "b": [None, None, True],  # 1 conclusive < k=2: the task is left out
        "c": [False, False, True],
    }
    estimate = estimate_pass_at_k(trials, 2)
    assert estimate.inconclusive == 4
    assert estimate.tasks_left_out == 1
    assert estimate.tasks == 2
    assert estimate.samples == 5
    # Exactly the estimator on the conclusive samples of the tasks kept.
    assert estimate.value == pytest.approx(
        pass_at_k({"a": [True, False], "c": [False, False, True]}, 2)
    )
    # An inconclusive sample is not a failure: counting it as one lowers the figure.
    as_failures = {t: [bool(o) for o in outs] for t, outs in trials.items()}
    assert estimate_pass_at_k(as_failures, 1).value < estimate_pass_at_k(trials, 1).value


def test_one_task_has_no_spread_and_the_interval_says_so() -> None:
    estimate = estimate_pass_hat_k({"only": [True, True, False]}, 1)
    assert estimate.value == pytest.approx(2 / 3)
    assert estimate.standard_error is None
    assert (estimate.low, estimate.high) == (0.0, 1.0)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.text("abcd", min_size=1, max_size=2),
        st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=6),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 4),
)
def test_estimate_is_the_mean_over_k_subsets_of_conclusive_samples(
    trials: dict[str, list[bool | None]], k: int
) -> None:
    kept = {
        task: [o for o in outs if o is not None]
        for task, outs in trials.items()
        if sum(o is not None for o in outs) >= k
    }
    if not kept:
        with pytest.raises(InvalidObservationError, match="no task has k="):
            estimate_pass_at_k(trials, k)
        return
    estimate = estimate_pass_at_k(trials, k)

    def exact(outcomes: list[bool]) -> Fraction:
        subsets = list(itertools.combinations(outcomes, k))
        return Fraction(sum(any(s) for s in subsets), len(subsets))

    expected = sum(exact(o) for o in kept.values()) / len(kept)
    assert estimate.value == pytest.approx(float(expected), abs=1e-12)
    assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0
    assert estimate.tasks == len(kept)
    assert estimate.tasks_left_out == len(trials) - len(kept)
    assert estimate.inconclusive == sum(o is None for outs in trials.values() for o in outs)
    assert estimate_pass_hat_k(trials, k).value <= estimate.value + 1e-12


def test_the_interval_covers_the_truth_at_about_its_level() -> None:
    # 40 tasks with known per-task success rates, 10 samples each: the 95% interval
    # must contain the true pass@1 in roughly 95 of 100 simulated problem sets.
    import random

    rng = random.Random(7)
    rates = [rng.random() for _ in range(400)]
    covered = 0
    for run in range(100):
        chosen = rng.sample(rates, 40)
        truth_population = statistics.fmean(rates)
        trials = {f"t{i}": [rng.random() < p for _ in range(10)] for i, p in enumerate(chosen)}
        estimate = estimate_pass_at_k(trials, 1)
        covered += estimate.low <= truth_population <= estimate.high
        assert isinstance(estimate, PassEstimate), run
    assert 88 <= covered <= 100


@pytest.mark.parametrize("estimator", [estimate_pass_at_k, estimate_pass_hat_k])
def test_estimate_errors_name_the_field(estimator: object) -> None:
    call = estimator  # type: ignore[assignment]
    with pytest.raises(InvalidObservationError, match=r"'k' must be an int >= 1 \(got 0\)"):
        call({"a": [True]}, 0)  # type: ignore[operator]
    with pytest.raises(InvalidObservationError, match="'trials' must map"):
        call({}, 1)  # type: ignore[operator]
    with pytest.raises(InvalidObservationError, match="bools or None"):
        call({"a": [1]}, 1)  # type: ignore[operator]
    with pytest.raises(InvalidObservationError, match=r"'z' must be a finite number > 0"):
        call({"a": [True]}, 1, z=float("nan"))  # type: ignore[operator]
    with pytest.raises(InvalidObservationError, match=r"no task has k=2 conclusive samples"):
        call({"a": [True, None]}, 2)  # type: ignore[operator]
