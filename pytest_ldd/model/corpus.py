"""The corpus metrics: what graded agent episodes add up to over a session.

Each graded episode is observed as ``task_success`` (1.0 or 0.0) and, when its price
is known, ``cost_per_success`` (its dollars); a session aggregates them (a success
rate, dollars per success) and ``[tool.ldd.gates]`` gates those aggregates.  Both are
declared on the first graded episode unless a project declared them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pytest_ldd.model.metric import Metric

__all__ = ["CORPUS_METRICS", "HUGE_COST", "SESSION_KEY", "corpus_metric"]

#: The corpus metrics, in the order they are reported.
CORPUS_METRICS: Final[tuple[str, ...]] = ("task_success", "cost_per_success")

#: The history key under which corpus metrics keep their per-session aggregates.
SESSION_KEY: Final = "<session>"

#: How an infinite cost-of-pass is remembered in the predictor history (JSON holds no
#: infinity; this normalizes to 1.0 all the same).
HUGE_COST: Final = 1e12


def corpus_metric(name: str) -> Metric:
    """The metric a project gets for the corpus metric ``name`` when it declares none."""
    from pytest_ldd.model.metric import bounded_rate, positive_count

    if name == "task_success":
        return bounded_rate(
            "task_success",
            description="fraction of agent tasks whose checker accepted the result",
        )
    if name == "cost_per_success":
        return positive_count(
            "cost_per_success",
            description="US dollars spent per successfully completed agent task",
            unit="USD",
            normalize_scale=1.0,
        )
    msg = f"corpus metric 'name' must be one of {', '.join(CORPUS_METRICS)} (got {name!r})"
    raise ValueError(msg)
