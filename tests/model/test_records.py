"""The line formats: CalibrationRecord, ObservationRecord and the line builders."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibration_support import (
    TIMESTAMP,
    re_match,
)

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import (
    InvalidObservationError,
)
from pytest_ldd.model.metric import bounded_rate, positive_count
from pytest_ldd.model.records import CalibrationRecord, ObservationRecord, utc_timestamp
from pytest_ldd.store.files import TraceStore


def test_record_validation() -> None:
    with pytest.raises(
        InvalidObservationError,
        match=r"'predicted' must be a normalized number in \[0, 1\] \(got 2\)",
    ):
        CalibrationRecord("m", 1, 2, 0.5)
    with pytest.raises(InvalidObservationError, match="'metric_version' must be an int >= 1"):
        CalibrationRecord("m", 0, 0.5, 0.5)
    with pytest.raises(InvalidObservationError, match="'timestamp' must be UTC"):
        CalibrationRecord("m", 1, 0.5, 0.5, timestamp="yesterday")
    with pytest.raises(InvalidObservationError, match=r"missing key\(s\) \['observed'\]"):
        CalibrationRecord.from_json({"metric_name": "m", "metric_version": 1, "predicted": 0.5})
    with pytest.raises(InvalidObservationError, match="'normalized' must be a normalized number"):
        ObservationRecord("m", 1, 5, float("nan"))
    with pytest.raises(InvalidObservationError, match="'nodeid' must be a str or None"):
        ObservationRecord("m", 1, 5, 0.5, nodeid=3)  # type: ignore[arg-type]


def test_utc_timestamp() -> None:
    assert utc_timestamp(0) == "1970-01-01T00:00:00Z"
    assert re_match(TIMESTAMP, utc_timestamp())


def test_line_builders_equal_the_records_they_stand_for(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(positive_count("lat", description="request latency", normalize_scale=10))
    registry.register(bounded_rate("rate", description="share of failing checks"))
    calibrator = Calibrator(registry)
    for name, predicted, observed in [("lat", 3, 12.5), ("rate", (1, 4), (2, 4))]:
        line = calibrator.pair_line(name, predicted, observed, session_id="s", nodeid="t::a")
        record = calibrator.make_record(name, predicted, observed, session_id="s", nodeid="t::a")
        assert line == record.to_json()
        obs = calibrator.observation_line(name, observed, session_id="s", nodeid="t::a")
        assert (
            obs
            == calibrator.make_observation(name, observed, session_id="s", nodeid="t::a").to_json()
        )
    with pytest.raises(InvalidObservationError, match="predicted"):
        calibrator.pair_line("lat", -1, 3)


