"""pytest-ldd: calibrated metrics for pytest.

A metric starts *advisory*; once its predictions have matched its observations
(n >= 5, MAE <= 0.15 by default) it becomes *load-bearing* and its gates fail
tests.  Names are imported lazily so that loading the pytest plugin stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd.agents import Cost, Episode
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.model.compose import maximum, minimum, weighted_sum
    from pytest_ldd.model.estimator import (
        BayesianSynthesisEstimator,
        MeanHistoryEstimator,
        Prediction,
    )
    from pytest_ldd.model.loss import Loss, Signal, VectorLoss
    from pytest_ldd.model.metric import MetricSpec, bounded_rate, positive_count, signed_delta
    from pytest_ldd.model.observation import Observation
    from pytest_ldd.model.records import CalibrationRecord
    from pytest_ldd.model.statistics import CalibrationGate, CalibrationStats, MetricState
    from pytest_ldd.store.files import TraceStore

__all__ = [
    "BayesianSynthesisEstimator",
    "CalibrationGate",
    "CalibrationRecord",
    "CalibrationStats",
    "Calibrator",
    "Cost",
    "Episode",
    "Loss",
    "MeanHistoryEstimator",
    "MetricRegistry",
    "MetricSpec",
    "MetricState",
    "Observation",
    "Prediction",
    "Signal",
    "TraceStore",
    "VectorLoss",
    "__version__",
    "bounded_rate",
    "maximum",
    "minimum",
    "positive_count",
    "signed_delta",
    "weighted_sum",
]

_HOME = {
    "BayesianSynthesisEstimator": "pytest_ldd.model.estimator",
    "CalibrationGate": "pytest_ldd.model.statistics",
    "CalibrationRecord": "pytest_ldd.model.records",
    "CalibrationStats": "pytest_ldd.model.statistics",
    "Calibrator": "pytest_ldd.calibration.calibrator",
    "Cost": "pytest_ldd.agents",
    "Episode": "pytest_ldd.agents",
    "Loss": "pytest_ldd.model.loss",
    "MeanHistoryEstimator": "pytest_ldd.model.estimator",
    "MetricRegistry": "pytest_ldd.calibration.registry",
    "MetricSpec": "pytest_ldd.model.metric",
    "MetricState": "pytest_ldd.model.statistics",
    "Observation": "pytest_ldd.model.observation",
    "Prediction": "pytest_ldd.model.estimator",
    "Signal": "pytest_ldd.model.loss",
    "TraceStore": "pytest_ldd.store.files",
    "VectorLoss": "pytest_ldd.model.loss",
    "bounded_rate": "pytest_ldd.model.metric",
    "maximum": "pytest_ldd.model.compose",
    "minimum": "pytest_ldd.model.compose",
    "positive_count": "pytest_ldd.model.metric",
    "signed_delta": "pytest_ldd.model.metric",
    "weighted_sum": "pytest_ldd.model.compose",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("pytest-ldd")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            return "0+unknown"
    home = _HOME.get(name)
    if home is None:
        msg = f"module 'pytest_ldd' has no attribute {name!r}"
        raise AttributeError(msg)
    # Not cached in globals(): the home module stays the single source of the class,
    # even where a test runner drops and re-imports modules between runs.
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
