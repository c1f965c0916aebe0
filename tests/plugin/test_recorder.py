"""A test's recorder: the log lines it builds say exactly what the slow path says."""

from __future__ import annotations

import json
import math
import re

import pytest
from calibration_support import recording_context
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.model.metric import bounded_rate, positive_count, signed_delta
from pytest_ldd.plugin.recorder import TestRecorder
from pytest_ldd.store.files import TraceStore

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
    (line,) = payload.observations
    expected = calibrator.observation_line(name, observed, **kwargs)
    got = json.loads(line)
    assert _STAMP.fullmatch(got.pop("timestamp"))
    assert expected.pop("timestamp")
    assert got == expected
    if predicted is None:
        assert payload.pairs == payload.errors == []
        return
    (pair,) = payload.pairs
    expected = calibrator.pair_line(name, predicted, observed, **kwargs)
    got = json.loads(pair)
    assert _STAMP.fullmatch(got.pop("timestamp"))
    assert expected.pop("timestamp")
    assert got == expected
    ((metric, version, error),) = payload.errors
    assert (metric, version) == (name, 1)
    assert error == abs(expected["predicted"] - expected["observed"])
