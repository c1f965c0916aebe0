"""Score a corpus of episodes with several metrics at once: :func:`evaluate`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, final

from pytest_ldd.agents.checkers import hidden_tests_behind
from pytest_ldd.agents.episode import Episode
from pytest_ldd.agents.metrics import Score, inconclusive_count
from pytest_ldd.errors import InvalidObservationError, InvalidSpecError

__all__ = ["EpisodeMetric", "EvalReport", "evaluate"]


class EpisodeMetric(Protocol):
    """What :func:`evaluate` needs of a metric: a name, a per-episode score, an aggregate."""

    @property
    def name(self) -> str: ...

    def __call__(self, episode: Episode, gold: Any, /) -> Score: ...

    def aggregate(self, scores: Iterable[Score], /) -> float: ...


@final
@dataclass(frozen=True, slots=True)
class EvalReport:
    """Per-episode scores and corpus aggregates, both keyed by metric name.

    ``scores[name][i]`` is the score of ``episodes[i]``; ``aggregates[name]`` is the
    metric's corpus aggregate (a ratio of sums); ``inconclusive[name]`` counts the
    episodes that metric's checker could not grade, which its aggregate leaves out
    (NaN when it could grade none).
    """

    episodes: tuple[Episode, ...]
    scores: Mapping[str, tuple[Score, ...]]
    aggregates: Mapping[str, float]
    inconclusive: Mapping[str, int] = field(default_factory=dict)


def _golds_for(episodes: Sequence[Episode], golds: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    if isinstance(golds, Mapping):
        missing = [ep.task_id for ep in episodes if ep.task_id not in golds]
        if missing:
            msg = f"'golds' has no gold for task {missing[0]!r} ({len(missing)} episodes lack one)"
            raise InvalidObservationError(msg)
        return [golds[ep.task_id] for ep in episodes]
    if isinstance(golds, (str, bytes)) or not isinstance(golds, Sequence):
        msg = f"'golds' must be a sequence aligned with the episodes or a mapping (got {golds!r})"
        raise InvalidObservationError(msg)
    if len(golds) != len(episodes):
        msg = f"'golds' must hold one gold per episode: {len(episodes)} (got {len(golds)})"
        raise InvalidObservationError(msg)
    return list(golds)


def evaluate(
    metrics: EpisodeMetric | Iterable[EpisodeMetric],
    episodes: Iterable[Episode],
    golds: Sequence[Any] | Mapping[str, Any],
    *,
    workers: int = 1,
    progress: bool | None = None,
) -> EvalReport:
    """Score every episode with every metric and aggregate each metric over the corpus.

    *golds* is a sequence aligned with *episodes* or a mapping ``task_id -> gold``
    (repeated trials of a task share its gold).  Checker errors propagate.

    Metrics that grade by hidden tests (``check="hidden_tests:PATH"`` or a
    ``hidden_tests(...)`` checker) have every workspace graded first, *workers* at a
    time, by the sandbox's warm corpus grader (:func:`pytest_ldd.sandbox.grade_many`),
    each workspace once per checker however many metrics share it; *progress* draws
    its progress line on standard error (default: only on a terminal).  The scores
    are those grading each episode alone would give.
    """
    count: object = workers
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        msg = f"'workers' must be an int >= 1 (got {count!r})"
        raise InvalidSpecError(msg)
    metric_list: list[EpisodeMetric] = (
        [metrics] if callable(metrics) and hasattr(metrics, "aggregate") else list(metrics)  # type: ignore[arg-type]
    )
    names = [metric.name for metric in metric_list]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        msg = f"metric names must be unique in one evaluation (got {duplicates[0]!r} twice)"
        raise InvalidSpecError(msg)
    given: tuple[object, ...] = tuple(episodes)
    for episode in given:
        if not isinstance(episode, Episode):
            msg = f"'episodes' must hold Episode objects (got {episode!r})"
            raise InvalidObservationError(msg)
    episode_list = cast("tuple[Episode, ...]", given)
    gold_list = _golds_for(episode_list, golds)
    sandboxed = hidden_tests_behind(getattr(metric, "check", None) for metric in metric_list)
    ahead: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if sandboxed:
        from pytest_ldd.sandbox import graded_ahead

        ahead = graded_ahead(sandboxed, episode_list, workers=count, progress=progress)
    with ahead:
        scores = {
            metric.name: tuple(
                metric(ep, gold) for ep, gold in zip(episode_list, gold_list, strict=True)
            )
            for metric in metric_list
        }
    aggregates = {metric.name: metric.aggregate(scores[metric.name]) for metric in metric_list}
    return EvalReport(
        episodes=episode_list,
        scores=scores,
        aggregates=aggregates,
        inconclusive={name: inconclusive_count(found) for name, found in scores.items()},
    )
