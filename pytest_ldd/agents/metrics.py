"""Episode metrics whose corpus aggregate is a ratio of two sums.

:class:`TaskSuccessMetric` (success rate, with a Wilson interval) and
:class:`CostPerSuccessMetric` (Cost-of-Pass: dollars per successful task).  The
repeated-trial estimators :func:`pass_at_k` and :func:`pass_hat_k` live in
:mod:`pytest_ldd.agents.trials` and are re-exported here.  A mean of
per-episode ratios is never taken: it weights a cheap failure like an expensive
success and has no meaning when an episode's denominator is zero.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, final

from pytest_ldd.agents.checkers import Checker, resolve_checker, run_check
from pytest_ldd.agents.episode import Episode
from pytest_ldd.agents.prices import ModelPrice, episode_dollars, load_prices
from pytest_ldd.agents.trials import pass_at_k, pass_hat_k
from pytest_ldd.errors import InvalidObservationError, InvalidSpecError, PriceError

__all__ = [
    "DEFAULT_CHECK",
    "WILSON_Z95",
    "CostPerSuccessMetric",
    "Score",
    "TaskSuccessMetric",
    "inconclusive_count",
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
]

#: The checker ``check=None`` stands for (the seed's signatures): normalized output match.
DEFAULT_CHECK = "output"

#: The two-sided 95% normal quantile, z = Phi^-1(0.975).
WILSON_Z95 = 1.959963984540054

_ESTIMATORS = ("pooled", "per_task")


@final
@dataclass(frozen=True, slots=True)
class Score:
    """One episode's value under one metric, with a readable explanation.

    ``success`` is the checker's verdict and ``task_id`` the episode's task, kept so
    that corpus aggregates can be computed from scores alone.  ``inconclusive`` marks
    an episode the checker could not grade (its ``success`` is None): the corpus
    aggregates leave it out of numerator and denominator alike and count it apart.
    """

    value: float
    detail: str
    higher_is_better: bool
    success: bool | None = field(default=None, kw_only=True)
    task_id: str | None = field(default=None, kw_only=True)
    inconclusive: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            msg = f"Score 'value' must be a number, not NaN (got {value!r})"
            raise InvalidObservationError(msg)
        object.__setattr__(self, "value", float(value))
        detail: object = self.detail
        higher_is_better: object = self.higher_is_better
        success: object = self.success
        task_id: object = self.task_id
        if not isinstance(detail, str):
            msg = f"Score 'detail' must be a str (got {detail!r})"
            raise InvalidObservationError(msg)
        if not isinstance(higher_is_better, bool):
            msg = f"Score 'higher_is_better' must be a bool (got {higher_is_better!r})"
            raise InvalidObservationError(msg)
        if success is not None and not isinstance(success, bool):
            msg = f"Score 'success' must be a bool or None (got {success!r})"
            raise InvalidObservationError(msg)
        if task_id is not None and (not isinstance(task_id, str) or not task_id):
            msg = f"Score 'task_id' must be a non-empty str or None (got {task_id!r})"
            raise InvalidObservationError(msg)
        inconclusive: object = self.inconclusive
        if not isinstance(inconclusive, bool):
            msg = f"Score 'inconclusive' must be a bool (got {inconclusive!r})"
            raise InvalidObservationError(msg)
        if inconclusive and success is not None:
            msg = f"Score 'success' must be None when 'inconclusive' is True (got {success!r})"
            raise InvalidObservationError(msg)


def wilson_interval(successes: int, n: int, *, z: float = WILSON_Z95) -> tuple[float, float]:
    """The Wilson score interval for a success rate (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n
    successes.  ``n == 0`` is an :class:`InvalidObservationError`: a rate of nothing
    is undefined.
    """
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"wilson_interval {name!r} must be an int >= 0 (got {value!r})"
            raise InvalidObservationError(msg)
    if n == 0:
        msg = "wilson_interval 'n' must be >= 1: a rate over no trials is undefined (got 0)"
        raise InvalidObservationError(msg)
    if successes > n:
        msg = f"wilson_interval 'successes' must be <= n={n} (got {successes})"
        raise InvalidObservationError(msg)
    if not math.isfinite(z) or z <= 0:
        msg = f"wilson_interval 'z' must be finite and > 0 (got {z!r})"
        raise InvalidObservationError(msg)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


def _success_of(score: Score) -> bool:
    if score.success is not None:
        return score.success
    if score.value in (0.0, 1.0):
        return score.value == 1.0
    msg = f"a score without 'success' must have value 0.0 or 1.0 (got {score.value!r})"
    raise InvalidObservationError(msg)


def _scores(scores: Iterable[Score], metric: str) -> list[Score]:
    listed: list[object] = list(scores)
    if not listed:
        msg = f"{metric} needs at least one score: the aggregate of nothing is undefined"
        raise InvalidObservationError(msg)
    for score in listed:
        if not isinstance(score, Score):
            msg = f"{metric} aggregates Score objects (got {score!r})"
            raise InvalidObservationError(msg)
    return cast("list[Score]", listed)


def _graded(scores: list[Score]) -> list[Score]:
    """The scores of the episodes the checker could grade (inconclusive ones left out)."""
    return [score for score in scores if not score.inconclusive]


def inconclusive_count(scores: Iterable[Score]) -> int:
    """How many of *scores* are of episodes the checker could not grade."""
    return sum(1 for score in scores if isinstance(score, Score) and score.inconclusive)


def _metric_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        msg = f"metric 'name' must be a non-empty str (got {name!r})"
        raise InvalidSpecError(msg)
    return name


class TaskSuccessMetric:
    """Did the episode complete the task? ``1.0`` / ``0.0``; aggregate = success rate.

    *check* is a checker name (``"output"``, ``"quasi_exact"``, ``"final_state"``,
    ``"recorded"``, ``"hidden_tests:PATH"``) or any ``(episode, gold) -> bool``
    callable; ``None`` (the default) is :data:`DEFAULT_CHECK`, ``"output"``.  A
    checker that raises is not caught: the error belongs to the test.  An episode
    the checker could not grade (an inconclusive hidden-test verdict) scores 0.0 with
    ``inconclusive=True`` and ``success=None``; the success rate leaves it out.
    """

    __slots__ = ("check", "name")

    higher_is_better = True

    def __init__(self, check: str | Checker | None = None, *, name: str = "task_success") -> None:
        self.check: Checker = resolve_checker(DEFAULT_CHECK if check is None else check)
        self.name: str = _metric_name(name)

    def __repr__(self) -> str:
        return f"TaskSuccessMetric(check={self.check!r}, name={self.name!r})"

    def __call__(self, episode: Episode, gold: Any) -> Score:
        """Grade one episode: 1.0 when the checker passes it, else 0.0."""
        result = run_check(self.check, episode, gold)
        return Score(
            1.0 if result.passed else 0.0,
            result.detail,
            True,
            success=None if result.inconclusive else result.passed,
            task_id=episode.task_id,
            inconclusive=result.inconclusive,
        )

    def aggregate(self, scores: Iterable[Score]) -> float:
        """The success rate: successes / graded episodes.

        Inconclusive episodes count in neither; NaN when every episode was
        inconclusive (no scores at all: InvalidObservationError).
        """
        graded = _graded(_scores(scores, self.name))
        if not graded:
            return math.nan
        return sum(map(_success_of, graded)) / len(graded)

    def interval(self, scores: Iterable[Score], *, z: float = WILSON_Z95) -> tuple[float, float]:
        """The 95% Wilson interval ``(low, high)`` of the success rate (NaNs: none graded)."""
        graded = _graded(_scores(scores, self.name))
        if not graded:
            return (math.nan, math.nan)
        return wilson_interval(sum(map(_success_of, graded)), len(graded), z=z)


class CostPerSuccessMetric:
    """Cost-of-Pass: USD per successfully completed task (lower is better).

    The per-episode value is that episode's dollars (``Score.success`` keeps the
    checker's verdict); the number that matters is :meth:`aggregate`,
    ``sum(dollars) / sum(successes)``, ``inf`` when nothing succeeded.  Dollars come
    from *price* (one :class:`ModelPrice` for every episode) or from
    ``prices[episode.model]`` (a catalog, or anything :func:`load_prices` reads); with
    both, *price* covers the episodes that name no model.  *price* and *prices* are
    keyword-only (``CostPerSuccessMetric(check=None, *, price=None, prices=None)``, as
    the seed writes it): two optional price sources side by side read ambiguously when
    passed by position.  *check* is as for :class:`TaskSuccessMetric`.
    """

    __slots__ = ("check", "name", "price", "prices")

    higher_is_better = False

    def __init__(
        self,
        check: str | Checker | None = None,
        *,
        price: ModelPrice | None = None,
        prices: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        name: str = "cost_per_success",
    ) -> None:
        given: object = price
        if given is not None and not isinstance(given, ModelPrice):
            msg = f"'price' must be a ModelPrice or None (got {given!r})"
            raise PriceError(msg)
        if price is None and prices is None:
            msg = "CostPerSuccessMetric needs 'price' or 'prices' (got neither)"
            raise PriceError(msg)
        self.check: Checker = resolve_checker(DEFAULT_CHECK if check is None else check)
        self.price: ModelPrice | None = price
        self.prices: dict[str, ModelPrice] | None = None if prices is None else load_prices(prices)
        self.name: str = _metric_name(name)

    def __repr__(self) -> str:
        return (
            f"CostPerSuccessMetric(check={self.check!r}, price={self.price!r},"
            f" prices=<{len(self.prices or {})} models>, name={self.name!r})"
        )

    def __call__(self, episode: Episode, gold: Any) -> Score:
        """This episode's dollars, with the checker's verdict in ``success``."""
        dollars = episode_dollars(episode, price=self.price, prices=self.prices)
        if dollars is None:  # pragma: no cover - __init__ requires a price or a catalog
            msg = f"no price for the episode of task {episode.task_id!r}"
            raise PriceError(msg)
        result = run_check(self.check, episode, gold)
        if result.inconclusive:
            return Score(
                dollars,
                f"${dollars:.6f}, {result.detail}",
                False,
                task_id=episode.task_id,
                inconclusive=True,
            )
        return Score(
            dollars,
            f"${dollars:.6f}, {'success' if result.passed else 'failure'}: {result.detail}",
            False,
            success=result.passed,
            task_id=episode.task_id,
        )

    def aggregate(
        self, scores: Iterable[Score], *, estimator: Literal["pooled", "per_task"] = "pooled"
    ) -> float:
        """USD per success over the corpus.

        ``"pooled"`` (the default): ``sum(dollars) / sum(successes)``, ``inf`` when
        nothing succeeded.  ``"per_task"``: the mean over tasks of each task's
        ``mean cost / success rate`` (the Cost-of-Pass paper's per-problem form),
        ``inf`` when any task never succeeded.  Inconclusive episodes are left out of
        both sums (their dollars too); NaN when every episode was inconclusive.
        """
        listed = _graded(_scores(scores, self.name))
        chosen: str = estimator
        if chosen in _ESTIMATORS and not listed:
            return math.nan
        if chosen == "pooled":
            return _cost_per_success(math.fsum(s.value for s in listed), _successes(listed))
        if chosen == "per_task":
            by_task: dict[str, list[Score]] = {}
            for score in listed:
                if score.task_id is None:
                    msg = "the 'per_task' estimator needs scores with a 'task_id' (got None)"
                    raise InvalidObservationError(msg)
                by_task.setdefault(score.task_id, []).append(score)
            # mean cost / success rate = (sum / n) / (c / n) = sum / c for each task.
            return math.fsum(
                _cost_per_success(math.fsum(s.value for s in task), _successes(task))
                for task in by_task.values()
            ) / len(by_task)
        msg = f"'estimator' must be one of {', '.join(map(repr, _ESTIMATORS))} (got {chosen!r})"
        raise InvalidSpecError(msg)


def _successes(scores: Sequence[Score]) -> int:
    return sum(map(_success_of, scores))


def _cost_per_success(dollars: float, successes: int) -> float:
    return dollars / successes if successes else math.inf
