"""Hook specifications of pytest-ldd, registered from ``pytest_addhooks``.

Implement them in a ``conftest.py`` or a plugin.  Example::

    # conftest.py
    from pytest_ldd import positive_count

    def pytest_ldd_register_metrics(registry):
        registry.register(
            positive_count("latency_p99", description="99th percentile request latency",
                           unit="ms", normalize_scale=1000.0)
        )
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_ldd.agents import Episode, Score
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.model.observation import Observation
    from pytest_ldd.model.statistics import MetricState

__all__ = [
    "pytest_ldd_episode",
    "pytest_ldd_observation",
    "pytest_ldd_register_metrics",
    "pytest_ldd_state_changed",
]


def pytest_ldd_register_metrics(registry: MetricRegistry) -> None:
    """Declare metrics from code, once per session, before any test runs.

    Call ``registry.register(metric)`` for each metric.  Called in every process
    (the xdist controller and each worker); registering the same spec again is a
    no-op.  Implement it in the rootdir ``conftest.py`` or a plugin: conftest
    files deeper in the tree load after this hook has run.
    """


def pytest_ldd_observation(item: pytest.Item, observation: Observation) -> None:
    """Called for every observation a test records, after it has been validated.

    Example: print slow latencies as they happen::

        def pytest_ldd_observation(item, observation):
            if observation.name == "latency_p99" and observation.observed > 400:
                print(f"{item.nodeid}: slow ({observation.observed} ms)")
    """


def pytest_ldd_episode(
    item: pytest.Item, episode: Episode, gold: Any, scores: dict[str, Score]
) -> None:
    """Called for every graded agent episode with its scores by metric name.

    ``scores["task_success"].value`` is 1.0 or 0.0; ``scores["cost_per_success"]``
    (present when a price is known) holds the episode's dollars.  Example::

        def pytest_ldd_episode(item, episode, gold, scores):
            if not scores["task_success"].value:
                print(f"{episode.task_id} failed: {scores['task_success'].detail}")
    """


def pytest_ldd_state_changed(name: str, before: MetricState, after: MetricState) -> None:
    """Called at the end of a ``--ldd`` session for each metric whose state changed.

    Example: announce promotions in the CI log::

        def pytest_ldd_state_changed(name, before, after):
            if after.is_load_bearing:
                print(f"{name} is now load-bearing (n={after.n}, MAE={after.mae:.3f})")
    """
