"""Score, TaskSuccessMetric, CostPerSuccessMetric, pass@k / pass^k, Wilson and evaluate."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.agents import (
    CheckResult,
    Cost,
    CostPerSuccessMetric,
    Episode,
    EvalReport,
    Score,
    TaskSuccessMetric,
    evaluate,
    pass_at_k,
    pass_hat_k,
    per_million,
    wilson_interval,
)
from pytest_ldd.errors import InvalidObservationError, InvalidSpecError, PriceError

# One dollar per million input tokens: an episode of n million tokens costs n dollars.
DOLLAR = per_million(1.0, 1.0)


def _episode(task_id: str, output: str, dollars: float = 0.0, model: str | None = None) -> Episode:
    return Episode(
        task_id, output=output, cost=Cost(input_tokens=round(dollars * 1e6)), model=model
    )


# -- Score ---------------------------------------------------------------------------------


def test_score_holds_value_detail_direction_and_verdict() -> None:
    score = Score(1, "ok", True, success=True, task_id="t")
    assert score.value == 1.0
    assert isinstance(score.value, float)
    assert (score.detail, score.higher_is_better, score.success, score.task_id) == (
        "ok",
        True,
        True,
        "t",
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"value": math.nan, "detail": "", "higher_is_better": True}, "value"),
        ({"value": True, "detail": "", "higher_is_better": True}, "value"),
        ({"value": "1", "detail": "", "higher_is_better": True}, "value"),
        ({"value": 1.0, "detail": None, "higher_is_better": True}, "detail"),
        ({"value": 1.0, "detail": "", "higher_is_better": 1}, "higher_is_better"),
        ({"value": 1.0, "detail": "", "higher_is_better": True, "success": 1}, "success"),
        ({"value": 1.0, "detail": "", "higher_is_better": True, "task_id": ""}, "task_id"),
    ],
)
def test_score_validates(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        Score(**kwargs)


# -- Wilson --------------------------------------------------------------------------------


def _wilson_by_bisection(
    successes: int, n: int, z: float = 1.959963984540054
) -> tuple[float, float]:
    """Invert the score test numerically: the p with (phat - p)^2 = z^2 p (1 - p) / n."""
    phat = successes / n

    def excess(p: float) -> float:
        return (phat - p) ** 2 - z * z * p * (1 - p) / n

    def root(lo: float, hi: float) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if (excess(lo) > 0) == (excess(mid) > 0):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if successes == 0 else root(0.0, phat)
    high = 1.0 if successes == n else root(phat, 1.0)
    return low, high


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # the textbook example
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_known_values(successes: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(successes, n)
    assert got == pytest.approx((low, high), abs=5e-5)
    assert got == pytest.approx(_wilson_by_bisection(successes, n), abs=1e-12)


@settings(max_examples=200)
@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_matches_the_inverted_score_test(counts: tuple[int, int]) -> None:
    successes, n = counts
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    assert (low, high) == pytest.approx(_wilson_by_bisection(successes, n), abs=1e-9)


@pytest.mark.parametrize(
    ("successes", "n", "match"),
    [(0, 0, "undefined"), (3, 2, "successes"), (-1, 2, "successes"), (1, True, "'n'")],
)
def test_wilson_interval_errors(successes: Any, n: Any, match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        wilson_interval(successes, n)


# -- TaskSuccessMetric ---------------------------------------------------------------------


def test_task_success_scores_and_rate() -> None:
    metric = TaskSuccessMetric()
    assert metric.name == "task_success"
    assert metric.higher_is_better is True
    scores = [
        metric(_episode("a", "42"), "42"),
        metric(_episode("b", "41"), "42"),
        metric(_episode("c", " 42 "), "42"),
        metric(_episode("d", "x"), "y"),
    ]
    assert [s.value for s in scores] == [1.0, 0.0, 1.0, 0.0]
    assert [s.success for s in scores] == [True, False, True, False]
    assert [s.task_id for s in scores] == ["a", "b", "c", "d"]
    assert scores[0].detail == "passed"
    assert scores[1].detail == "failed"
    assert metric.aggregate(scores) == 0.5
    assert metric.interval(scores) == wilson_interval(2, 4)


def test_task_success_with_a_named_checker_and_a_name() -> None:
    metric = TaskSuccessMetric("quasi_exact", name="gaia_success")
    assert metric.name == "gaia_success"
    assert metric(_episode("a", "$1,000"), 1000).value == 1.0
    assert "gaia_success" in repr(metric)


def test_task_success_of_nothing_is_undefined() -> None:
    metric = TaskSuccessMetric()
    with pytest.raises(InvalidObservationError, match="undefined"):
        metric.aggregate([])
    with pytest.raises(InvalidObservationError, match="undefined"):
        metric.interval([])


def test_task_success_accepts_plain_zero_one_scores_only() -> None:
    metric = TaskSuccessMetric()
    assert metric.aggregate([Score(1.0, "", True), Score(0.0, "", True)]) == 0.5
    with pytest.raises(InvalidObservationError, match=r"0\.0 or 1\.0"):
        metric.aggregate([Score(0.5, "", True)])
    with pytest.raises(InvalidObservationError, match="Score objects"):
        metric.aggregate([1.0])  # type: ignore[list-item]


def test_bad_metric_names_and_checkers() -> None:
    with pytest.raises(InvalidSpecError, match="name"):
        TaskSuccessMetric(name="")
    with pytest.raises(InvalidSpecError, match="'check'"):
        TaskSuccessMetric("nope")


# -- CostPerSuccessMetric ------------------------------------------------------------------


def test_cost_per_success_seed_example() -> None:
    episode = Episode(task_id="t1", output="42", cost=Cost(input_tokens=1_000_000))
    metric = CostPerSuccessMetric(price=per_million(2.0, 6.0))
    score = metric(episode, "42")
    assert round(score.value, 4) == 2.0
    assert score.success is True
    assert score.higher_is_better is False
    assert score.detail.startswith("$2.000000, success")
    assert metric.name == "cost_per_success"


def test_cost_per_success_is_a_ratio_of_sums_not_a_mean_of_ratios() -> None:
    metric = CostPerSuccessMetric(price=DOLLAR)
    episodes = [_episode("a", "ok", 1.0), _episode("b", "ok", 9.0), _episode("c", "no", 10.0)]
    scores = [metric(ep, "ok") for ep in episodes]
    assert [s.value for s in scores] == pytest.approx([1.0, 9.0, 10.0])
    # $20 spent for 2 successes; the failed episode's $10 is part of the price of passing.
    assert metric.aggregate(scores) == pytest.approx(10.0)
    mean_over_successes = (1.0 + 9.0) / 2
    assert metric.aggregate(scores) != pytest.approx(mean_over_successes)


def test_cost_per_success_is_infinite_without_success() -> None:
    metric = CostPerSuccessMetric(price=DOLLAR)
    scores = [metric(_episode("a", "no", 1.0), "ok"), metric(_episode("b", "no", 0.0), "ok")]
    assert metric.aggregate(scores) == math.inf
    assert metric.aggregate(scores, estimator="per_task") == math.inf
    with pytest.raises(InvalidObservationError, match="undefined"):
        metric.aggregate([])


def test_per_task_estimator_is_the_mean_of_per_task_cost_of_pass() -> None:
    metric = CostPerSuccessMetric(price=DOLLAR)
    episodes = [
        # task a: mean cost 2, success rate 1/2 -> 4 per pass
        (_episode("a", "ok", 1.0), "ok"),
        (_episode("a", "no", 3.0), "ok"),
        # task b: mean cost 1, success rate 1 -> 1 per pass
        (_episode("b", "ok", 1.0), "ok"),
        (_episode("b", "ok", 1.0), "ok"),
    ]
    scores = [metric(ep, gold) for ep, gold in episodes]
    assert metric.aggregate(scores, estimator="per_task") == pytest.approx((4.0 + 1.0) / 2)
    assert metric.aggregate(scores) == pytest.approx(6.0 / 3)
    scores.append(metric(_episode("c", "no", 1.0), "ok"))
    assert metric.aggregate(scores, estimator="per_task") == math.inf
    with pytest.raises(InvalidSpecError, match="'estimator'"):
        metric.aggregate(scores, estimator="mean")  # type: ignore[arg-type]
    with pytest.raises(InvalidObservationError, match="task_id"):
        metric.aggregate([Score(1.0, "", False, success=True)], estimator="per_task")


def test_cost_per_success_prices_by_model() -> None:
    catalog = {"cheap": per_million(1.0, 1.0), "dear": per_million(10.0, 10.0)}
    metric = CostPerSuccessMetric(prices=catalog)
    assert metric(_episode("a", "ok", 1.0, model="dear"), "ok").value == pytest.approx(10.0)
    with pytest.raises(PriceError, match="'gpt-x'"):
        metric(_episode("a", "ok", 1.0, model="gpt-x"), "ok")
    fallback = CostPerSuccessMetric(price=DOLLAR, prices=catalog)
    assert fallback(_episode("a", "ok", 2.0), "ok").value == pytest.approx(2.0)
    from_dicts = CostPerSuccessMetric(
        prices={"m": {"input_per_million": 3.0, "output_per_million": 1.0}}
    )
    assert from_dicts(_episode("a", "ok", 1.0, model="m"), "ok").value == pytest.approx(3.0)


def test_cost_per_success_needs_price_information() -> None:
    with pytest.raises(PriceError, match="'price' or 'prices'"):
        CostPerSuccessMetric()
    with pytest.raises(PriceError, match="'price' must be a ModelPrice"):
        CostPerSuccessMetric(price=1.0)  # type: ignore[arg-type]


# -- pass@k / pass^k -----------------------------------------------------------------------


def test_pass_at_k_and_pass_hat_k_closed_forms() -> None:
    trials = {"a": [True, True, False], "b": [True, False, False]}
    # pass@2: a = 1 - C(1,2)/C(3,2) = 1, b = 1 - C(2,2)/C(3,2) = 2/3
    assert pass_at_k(trials, 2) == pytest.approx((1 + 2 / 3) / 2)
    # pass^2: a = C(2,2)/C(3,2) = 1/3, b = C(1,2)/C(3,2) = 0
    assert pass_hat_k(trials, 2) == pytest.approx((1 / 3 + 0) / 2)
    # k = 1: both are the mean per-task success rate
    assert pass_at_k(trials, 1) == pytest.approx(0.5)
    assert pass_hat_k(trials, 1) == pytest.approx(0.5)
    # k = n: pass^n asks for every trial to pass
    assert pass_hat_k(trials, 3) == 0.0
    assert pass_at_k(trials, 3) == 1.0


def _by_enumeration(outcomes: Sequence[bool], k: int, combine: Any) -> Fraction:
    subsets = list(itertools.combinations(outcomes, k))
    return Fraction(sum(combine(subset) for subset in subsets), len(subsets))


@settings(max_examples=200)
@given(
    st.dictionaries(
        st.text("abc", min_size=1, max_size=2),
        st.lists(st.booleans(), min_size=1, max_size=7),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 7),
)
def test_estimators_equal_the_mean_over_all_k_subsets(
    trials: dict[str, list[bool]], k: int
) -> None:
    if k > min(len(outcomes) for outcomes in trials.values()):
        with pytest.raises(InvalidObservationError, match="fewer than k"):
            pass_hat_k(trials, k)
        return
    at_k = sum(_by_enumeration(o, k, any) for o in trials.values()) / len(trials)
    hat_k = sum(_by_enumeration(o, k, all) for o in trials.values()) / len(trials)
    assert pass_at_k(trials, k) == pytest.approx(float(at_k), abs=1e-12)
    assert pass_hat_k(trials, k) == pytest.approx(float(hat_k), abs=1e-12)
    assert pass_hat_k(trials, k) <= pass_at_k(trials, k)


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
def test_pass_k_errors(estimator: Any) -> None:
    with pytest.raises(ValueError, match=r"task 'short' has 1 trials, fewer than k=2"):
        estimator({"long": [True, False], "short": [True]}, 2)
    with pytest.raises(ValueError, match="'k'"):
        estimator({"a": [True]}, 0)
    with pytest.raises(ValueError, match="'k'"):
        estimator({"a": [True]}, True)
    with pytest.raises(ValueError, match="'trials'"):
        estimator({}, 1)
    with pytest.raises(ValueError, match="bools"):
        estimator({"a": [1, 0]}, 1)


# -- evaluate ------------------------------------------------------------------------------


def test_evaluate_with_aligned_golds() -> None:
    success, cost = TaskSuccessMetric(), CostPerSuccessMetric(price=DOLLAR)
    episodes = [_episode("a", "1", 1.0), _episode("b", "2", 2.0), _episode("c", "x", 3.0)]
    report = evaluate([success, cost], episodes, ["1", "2", "3"])
    assert isinstance(report, EvalReport)
    assert report.episodes == tuple(episodes)
    assert [s.value for s in report.scores["task_success"]] == [1.0, 1.0, 0.0]
    assert report.aggregates["task_success"] == pytest.approx(2 / 3)
    assert report.aggregates["cost_per_success"] == pytest.approx(6.0 / 2)


def test_evaluate_with_golds_by_task_and_repeated_trials() -> None:
    episodes = [_episode("a", "1"), _episode("a", "0"), _episode("b", "2")]
    report = evaluate(TaskSuccessMetric(), episodes, {"a": "1", "b": "2"})
    assert report.aggregates == {"task_success": pytest.approx(2 / 3)}


def test_evaluate_errors() -> None:
    episodes = [_episode("a", "1")]
    with pytest.raises(InvalidObservationError, match="one gold per episode"):
        evaluate([TaskSuccessMetric()], episodes, [])
    with pytest.raises(InvalidObservationError, match="no gold for task 'a'"):
        evaluate([TaskSuccessMetric()], episodes, {"b": "1"})
    with pytest.raises(InvalidObservationError, match="'golds'"):
        evaluate([TaskSuccessMetric()], episodes, "1")
    with pytest.raises(InvalidObservationError, match="Episode objects"):
        evaluate([TaskSuccessMetric()], ["a"], ["1"])  # type: ignore[list-item]
    with pytest.raises(InvalidSpecError, match="'task_success' twice"):
        evaluate([TaskSuccessMetric(), TaskSuccessMetric()], episodes, ["1"])


# -- the seed's signatures -----------------------------------------------------------------


def test_check_none_means_the_default_checker() -> None:
    from pytest_ldd.agents.checkers import resolve_checker
    from pytest_ldd.agents.metrics import DEFAULT_CHECK

    default = resolve_checker(DEFAULT_CHECK)
    assert TaskSuccessMetric(check=None).check is default
    assert TaskSuccessMetric().check is default
    assert CostPerSuccessMetric(check=None, price=DOLLAR).check is default
    assert CostPerSuccessMetric(price=DOLLAR).check is default
    # "output" normalizes case and whitespace: the default grades like it.
    assert TaskSuccessMetric(None)(_episode("a", "  OK ", 1.0), "ok").value == 1.0


def test_cost_per_success_prices_are_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        CostPerSuccessMetric("output", DOLLAR)  # type: ignore[misc]
    metric = CostPerSuccessMetric(None, price=DOLLAR)
    assert metric(_episode("a", "ok", 2.0), "ok").value == pytest.approx(2.0)


# -- inconclusive episodes -----------------------------------------------------------------


def _by_output(episode: Episode, gold: Any) -> CheckResult:
    """Passes "ok", fails "bad", cannot grade anything else."""
    if episode.output in ("ok", "bad"):
        return CheckResult(episode.output == "ok", episode.output)
    return CheckResult(False, "grader crashed", inconclusive=True)


def test_success_rate_and_cost_of_pass_leave_inconclusive_episodes_out() -> None:
    episodes = [
        _episode("t1", "ok", 1.0),
        _episode("t2", "bad", 2.0),
        _episode("t3", "??", 40.0),
        _episode("t3", "??", 50.0),
    ]
    success = TaskSuccessMetric(check=_by_output)
    cost = CostPerSuccessMetric(check=_by_output, price=DOLLAR)
    report = evaluate([success, cost], episodes, [None] * 4)
    scores = report.scores["task_success"]
    assert [s.inconclusive for s in scores] == [False, False, True, True]
    assert [s.success for s in scores] == [True, False, None, None]
    # 1 success of 2 graded episodes, not of 4; $3 over 1 success, not $93.
    assert report.aggregates["task_success"] == 0.5
    assert success.interval(scores) == wilson_interval(1, 2)
    assert report.aggregates["cost_per_success"] == pytest.approx(3.0)
    assert cost.aggregate(report.scores["cost_per_success"], estimator="per_task") == (
        pytest.approx((1.0 + math.inf) / 2)
    )
    assert report.inconclusive == {"task_success": 2, "cost_per_success": 2}
    assert report.scores["cost_per_success"][2].detail == "$40.000000, grader crashed"


def test_a_corpus_graded_by_nobody_has_no_rate() -> None:
    episodes = [_episode("t1", "??", 1.0)]
    metrics = [
        TaskSuccessMetric(check=_by_output),
        CostPerSuccessMetric(check=_by_output, price=DOLLAR),
    ]
    report = evaluate(metrics, episodes, [None])
    assert math.isnan(report.aggregates["task_success"])
    assert math.isnan(report.aggregates["cost_per_success"])
    assert all(math.isnan(x) for x in TaskSuccessMetric().interval(report.scores["task_success"]))
    assert report.inconclusive == {"task_success": 1, "cost_per_success": 1}


def test_an_inconclusive_score_has_no_success() -> None:
    with pytest.raises(InvalidObservationError, match="'success' must be None"):
        Score(0.0, "x", True, success=False, inconclusive=True)
    with pytest.raises(InvalidObservationError, match="'inconclusive' must be a bool"):
        Score(0.0, "x", True, inconclusive=1)  # type: ignore[arg-type]
