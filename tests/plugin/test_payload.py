"""A test's payload: one typed class, one codec, the trip from an xdist worker."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from calibration_support import latency, recording_context

from pytest_ldd.agents.corpus import CorpusTally
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidObservationError
from pytest_ldd.model.gates import Breach
from pytest_ldd.plugin.ledger import SessionLedger
from pytest_ldd.plugin.payload import FIELDS, Checkpoint, Payload
from pytest_ldd.plugin.recorder import TestRecorder
from pytest_ldd.store.files import TraceStore


def full_payload() -> Payload:
    """A payload with every field set."""
    payload = Payload()
    payload.counts = {"latency": [2, 1]}
    payload.observations = ['{"o": 1}', '{"o": 2}']
    payload.pairs = ['{"p": 1}']
    payload.errors = [("latency", 1, 0.25)]
    payload.specs = {"latency": {"name": "latency", "kind": "positive"}}
    payload.breaches = [Breach("latency", 512.0, "le 500", True, "ldd gate failed", "t::a")]
    payload.gates = {"latency": ["le 500"]}
    payload.history = [("latency", "t::a", 512.0)]
    tally = CorpusTally()
    tally.add(task_id="t1", success=True, dollars=0.5, group="t.py::a")
    payload.episodes = tally
    return payload


def fields(payload: Payload) -> dict[str, object]:
    return {
        field.name: (
            getattr(payload, field.name).to_dict()
            if field.name == "episodes"
            else getattr(payload, field.name)
        )
        for field in FIELDS
    }


def test_every_field_survives_the_codec() -> None:
    payload = full_payload()
    assert set(Payload.__slots__) == {field.name for field in FIELDS}
    for carried in (payload.encode(), payload.to_wire()):
        back = Payload.decode(carried)
        assert fields(back) == fields(payload)
    assert Payload.decode(Payload().encode()).counts == {}


def test_an_empty_payload_is_nothing_to_hand_over() -> None:
    payload = Payload()
    assert not payload
    payload.counts["x"] = [1, 0]
    assert payload
    assert Payload.decode(payload.encode()).counts == {"x": [1, 0]}


def test_a_checkpoint_restores_each_field_as_the_table_says() -> None:
    payload = full_payload()
    payload.episodes = None
    checkpoint = Checkpoint(payload, {"latency": [1.0]}, ["a failure"])
    payload.counts["latency"][0] += 5
    payload.observations.append('{"o": 3}')
    payload.specs = {"other": {"name": "other"}}
    tally = CorpusTally()
    tally.add(task_id="t2", success=False, dollars=None, group="g")
    payload.episodes = tally
    checkpoint.restore(payload)
    assert payload.counts == {"latency": [2, 1]}
    assert payload.observations == ['{"o": 1}', '{"o": 2}']
    # Specs stay shipped; an episode graded after a tally-less checkpoint is dropped.
    assert payload.specs == {"other": {"name": "other"}}
    assert payload.episodes is None
    assert checkpoint.history == {"latency": [1.0]}
    assert checkpoint.failures == ["a failure"]
    # Restored twice, the first restore's changes do not leak into the second.
    payload.observations.append('{"o": 4}')
    checkpoint.restore(payload)
    assert payload.observations == ['{"o": 1}', '{"o": 2}']


def test_a_checkpoint_after_an_episode_keeps_the_tally() -> None:
    payload = full_payload()
    kept = payload.episodes
    checkpoint = Checkpoint(payload, None, [])
    checkpoint.restore(payload)
    assert payload.episodes is kept


@pytest.mark.parametrize(
    ("text", "expected"), [("{not json", "not valid JSON"), ("[1, 2]", "not an object")]
)
def test_a_malformed_worker_payload_is_a_clear_error(
    tmp_path: Path, text: str, expected: str
) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    ctx = recording_context(registry)
    with pytest.raises(InvalidObservationError, match=expected):
        SessionLedger(ctx).consume(text)
    assert not registry.store.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"counts": [1]}', "'counts' must map"),
        ('{"counts": {"x": [1]}}', "'counts' must map"),
        ('{"lines": [1, 0]}\nnot json', "'observations' must be JSON objects"),
        ('{"lines": [0, 1]}\n{"a": 1} x', "'pairs' must be JSON objects"),
        ('{"lines": [0, 1]}', "'lines' says [0, 1] but 0 lines follow"),
        ('{"lines": [1, 0]}\n{"a": 1}\n{"b": 2}', "'lines' says [1, 0] but 2 lines"),
        ('{"lines": "2"}\n{"a": 1}', "'lines' says '2'"),
        ('{"errors": [["m", 1]]}', "'errors' must be a list"),
        ('{"breaches": [{"value": 1}]}', "'breaches' is malformed"),
        ('{"history": "x"}', "'history' is malformed"),
    ],
)
def test_a_worker_payload_of_another_shape_writes_nothing(
    tmp_path: Path, text: str, expected: str
) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    ctx = recording_context(registry)
    with pytest.raises(InvalidObservationError, match=re.escape(expected)) as info:
        SessionLedger(ctx).consume(text)
    assert "same version" in str(info.value)
    assert not registry.store.exists()


def test_a_payload_survives_its_trip_as_text(tmp_path: Path) -> None:
    # One recorder makes one payload (its lines carry their timestamps), and two
    # ledgers write it: one from the payload itself, one from its text.  Recorded
    # twice, the timestamps of two recordings could differ by a second.
    recording = MetricRegistry(TraceStore(tmp_path / "recording"))
    recording.register(latency())
    recorder = TestRecorder(recording_context(recording, ship_specs=True), "t.py::t")
    recorder.observe("latency", math.inf, 3)
    recorder.observe("latency", 7)
    payload = recorder.take_payload()
    assert payload is not None
    text = payload.encode()

    def written(folder: Path, carried: Payload | str) -> dict[str, bytes]:
        # A registry that knows no metric: the payload's specs declare it.
        registry = MetricRegistry(TraceStore(folder))
        ledger = SessionLedger(recording_context(registry))
        ledger.consume(carried)
        assert (ledger.observations, ledger.pairs) == (2, 1)
        assert registry.spec("latency") == recording.spec("latency")
        store = registry.store
        return {p.name: p.read_bytes() for p in (store.observations_path, store.calibrations_path)}

    from_text = written(tmp_path / "text", text)
    assert from_text == written(tmp_path / "object", payload)
    lines = [*payload.observations, *payload.pairs]
    assert b"".join(from_text.values()).decode().splitlines() == lines
