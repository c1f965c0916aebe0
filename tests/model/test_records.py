"""The line formats: CalibrationRecord, ObservationRecord and the line builders."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from calibration_support import (
    TIMESTAMP,
    re_match,
    recording_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import (
    InvalidObservationError,
)
from pytest_ldd.model.metric import bounded_rate, positive_count, signed_delta
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


# The plugin's fast paths must say exactly what the slow ones say.

_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")

_RAWS = {
    "lat": st.one_of(st.floats(0, 1e6, allow_nan=False), st.integers(0, 10**6), st.just(math.inf)),
    "rate": st.one_of(
        st.floats(0, 1, allow_nan=False),
        st.integers(0, 1),
        st.tuples(st.integers(0, 5), st.integers(5, 9)),
        st.fractions(0, 1),
    ),
    "delta": st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.integers(-1000, 1000)),
}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(_RAWS)), nodeid=st.text(max_size=12))
def test_recorded_lines_are_the_line_builders_encoded(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, name: str, nodeid: str
) -> None:
    from pytest_ldd.plugin.recording import TestRecorder

    registry = MetricRegistry(TraceStore(tmp_path_factory.mktemp("lines")))
    registry.register(positive_count("lat", description="request latency", normalize_scale=10))
    registry.register(bounded_rate("rate", description="share of failing checks"))
    registry.register(signed_delta("delta", description="change in size", normalize_scale=50))
    calibrator = Calibrator(registry)
    ctx = recording_context(registry)
    observed = data.draw(_RAWS[name], label="observed")
    predicted = data.draw(st.none() | _RAWS[name], label="predicted")
    recorder = TestRecorder(ctx, nodeid)
    recorder.observe(name, observed, predicted)
    payload = recorder.take_payload()
    assert payload is not None
    kwargs = {"session_id": ctx.session_id, "nodeid": nodeid}
    (line,) = payload["observations"]
    expected = calibrator.observation_line(name, observed, **kwargs)
    got = json.loads(line)
    assert _STAMP.fullmatch(got.pop("timestamp"))
    assert expected.pop("timestamp")
    assert got == expected
    if predicted is None:
        assert payload["pairs"] == payload["errors"] == []
        return
    (pair,) = payload["pairs"]
    expected = calibrator.pair_line(name, predicted, observed, **kwargs)
    got = json.loads(pair)
    assert _STAMP.fullmatch(got.pop("timestamp"))
    assert expected.pop("timestamp")
    assert got == expected
    ((metric, version, error),) = payload["errors"]
    assert (metric, version) == (name, 1)
    assert error == abs(expected["predicted"] - expected["observed"])
