"""The public import surface of DESIGN §2: every name importable, sorted, documented."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

PUBLIC = {
    "pytest_ldd": [
        "Observation", "Episode", "Cost", "MetricSpec", "bounded_rate", "positive_count",
        "signed_delta", "weighted_sum", "maximum", "minimum", "Loss", "Signal", "VectorLoss",
        "Prediction", "MeanHistoryEstimator", "BayesianSynthesisEstimator", "TraceStore",
        "MetricRegistry", "Calibrator", "CalibrationGate", "CalibrationRecord",
        "CalibrationStats", "MetricState",
    ],
    "pytest_ldd.errors": [
        "LddError", "InvalidSpecError", "GamingGuardError", "InvalidObservationError",
        "CompositionError", "UnknownMetricError", "VersionConflictError", "StoreCorruptError",
        "PriceError", "SandboxError", "LddWarning", "LddAdvisoryWarning",
    ],
    "pytest_ldd.agents": [
        "Episode", "Cost", "ModelPrice", "per_million", "load_prices", "Score",
        "TaskSuccessMetric", "CostPerSuccessMetric", "output_match", "quasi_exact_match",
        "final_state_match", "recorded_success", "pass_at_k", "pass_hat_k", "evaluate",
        "EvalReport",
    ],
    "pytest_ldd.sandbox": ["run_hidden_tests", "hidden_tests", "grade_many", "Verdict"],
}  # fmt: skip


@pytest.mark.parametrize(
    ("module", "name"), [(m, n) for m, names in PUBLIC.items() for n in names]
)
def test_public_name_is_importable_and_documented(module: str, name: str) -> None:
    value = getattr(importlib.import_module(module), name)
    assert name in importlib.import_module(module).__all__
    assert inspect.getdoc(value), f"{module}.{name} has no docstring"


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_all_is_sorted(module: str) -> None:
    names = list(importlib.import_module(module).__all__)

    # The isort-style order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions.
    def key(name: str) -> tuple[int, str]:
        group = 0 if name.isupper() else 1 if name[0].isupper() else 2
        return group, name

    assert names == sorted(names, key=key)


def test_error_hierarchy() -> None:
    from pytest_ldd import errors

    assert issubclass(errors.GamingGuardError, errors.InvalidSpecError)
    for name, builtin in [
        ("InvalidSpecError", ValueError),
        ("InvalidObservationError", ValueError),
        ("CompositionError", ValueError),
        ("UnknownMetricError", KeyError),
        ("VersionConflictError", ValueError),
        ("PriceError", ValueError),
    ]:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.LddError)
        assert issubclass(cls, builtin)
    assert issubclass(errors.LddAdvisoryWarning, errors.LddWarning)
    assert issubclass(errors.LddWarning, UserWarning)


def test_version_is_resolved_lazily() -> None:
    import pytest_ldd

    assert pytest_ldd.__version__ == importlib.metadata.version("pytest-ldd")


def test_observation_is_a_frozen_dataclass() -> None:
    from dataclasses import FrozenInstanceError

    from pytest_ldd import Observation

    obs = Observation("latency", 12.0)
    assert obs.predicted is None
    with pytest.raises(FrozenInstanceError):
        obs.observed = 1.0  # type: ignore[misc]


def test_loading_the_plugin_does_not_import_the_heavy_modules() -> None:
    code = (
        "import sys, pytest_ldd.plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_ldd')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    for heavy in (
        "pytest_ldd.calibration.registry",
        "pytest_ldd.calibration.calibrator",
        "pytest_ldd.model.statistics",
        "pytest_ldd.store",
        "pytest_ldd.agents",
        "pytest_ldd.sandbox",
    ):
        assert heavy not in loaded
