"""MetricRegistry, Calibrator, CalibrationGate and MetricState."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.compose import maximum, weighted_sum
from pytest_ldd.errors import (
    CompositionError,
    InvalidObservationError,
    LddError,
    StoreCorruptError,
    UnknownMetricError,
    VersionConflictError,
)
from pytest_ldd.metric import Metric, MetricSpec, bounded_rate, positive_count, signed_delta
from pytest_ldd.registry import (
    CalibrationGate,
    CalibrationRecord,
    CalibrationStats,
    Calibrator,
    MetricRegistry,
    MetricState,
    ObservationRecord,
    utc_timestamp,
)
from pytest_ldd.store import TraceStore

TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def rate(name: str = "pass_rate", version: int = 1) -> Metric:
    return bounded_rate(name, description="fraction of failing tests", version=version)


def latency(unit: str = "ms", version: int = 1) -> Metric:
    return positive_count(
        "latency", description="p99 latency", unit=unit, normalize_scale=1000, version=version
    )


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


@pytest.fixture
def registry(store: TraceStore) -> MetricRegistry:
    return MetricRegistry(store)


def log_errors(cal: Calibrator, name: str, errors: list[float]) -> None:
    """Log pairs of a bounded metric whose absolute errors are ``errors``."""
    for error in errors:
        cal.log(name, 0.5 + error / 2, 0.5 - error / 2)


def recording_context(registry: MetricRegistry, *, ship_specs: bool = False) -> Any:
    """A recording session's context on ``registry`` (as the plugin makes one)."""
    from pytest_ldd.config import LddConfig
    from pytest_ldd.recording import RunContext

    return RunContext(
        registry=registry,
        calibrator=Calibrator(registry),
        config=LddConfig(),
        session_id="20261201T083000Z-3f2a9c",
        recording=True,
        start_states={},
        ship_specs=ship_specs,
    )


def snapshot(store: TraceStore) -> dict[str, bytes]:
    if not store.ldd_dir.exists():
        return {}
    return {p.name: p.read_bytes() for p in store.ldd_dir.iterdir() if p.name != ".lock"}


# --------------------------------------------------------------------------- registration


def test_register_new_metric_starts_advisory(registry: MetricRegistry) -> None:
    metric = rate()
    assert registry.register(metric) is metric
    state = registry.state("pass_rate")
    assert state == MetricState("pass_rate", 1)
    assert state.state == "insufficient_data"
    assert not state.is_load_bearing
    assert not registry.is_load_bearing("pass_rate")
    assert registry.names() == ["pass_rate"]
    assert registry.get("pass_rate") is metric
    assert registry.spec("pass_rate") == metric.spec
    assert "pass_rate" in registry
    assert len(registry) == 1
    doc = registry.store.read_metrics()
    assert doc is not None
    assert doc["specs"] == [metric.spec.to_json()]
    assert doc["promotions"][0]["state"] == "insufficient_data"
    assert doc["promotions"][0]["metric_name"] == "pass_rate"


def test_identical_reregistration_is_a_no_op(store: TraceStore) -> None:
    MetricRegistry(store).register(rate())
    before = snapshot(store)
    again = MetricRegistry(store)
    again.register(rate())
    again.register(rate().spec)
    assert snapshot(store) == before


def test_same_version_different_spec_conflicts(registry: MetricRegistry) -> None:
    registry.register(latency("ms"))
    message = (
        "metric 'latency' version 1 is already registered with a different 'unit' "
        "('ms' != 's'): bump 'version' to change it"
    )
    with pytest.raises(VersionConflictError) as info:
        registry.register(latency("s"))
    assert str(info.value) == message
    # A fresh registry reading the same store knows the spec and conflicts too.
    with pytest.raises(VersionConflictError, match="different 'unit'"):
        MetricRegistry(registry.store).register(latency("s"))


def test_lower_version_conflicts(registry: MetricRegistry) -> None:
    registry.register(latency(version=3))
    with pytest.raises(
        VersionConflictError, match="version 2 is lower than the registered version 3"
    ):
        registry.register(latency(version=2))


def test_higher_version_replaces_the_spec_and_resets_the_state(registry: MetricRegistry) -> None:
    cal = Calibrator(registry)
    registry.register(rate())
    log_errors(cal, "pass_rate", [0.0] * 5)
    assert cal.try_promote("pass_rate")
    registry.extend_history({("pass_rate", "t"): [0.5]})
    registry.register(rate(version=2))
    assert registry.spec("pass_rate").version == 2
    assert registry.state("pass_rate") == MetricState("pass_rate", 2)
    assert registry.history("pass_rate", "t") == []
    # Old pairs stay in the log and are ignored.
    assert cal.stats("pass_rate").n == 0
    assert len(registry.store.read_jsonl(registry.store.calibrations_path)[0]) == 5
    log_errors(cal, "pass_rate", [0.1])
    assert cal.stats("pass_rate").n == 1
    assert cal.recompute("pass_rate").n == 1


def test_register_a_spec(registry: MetricRegistry) -> None:
    spec = MetricSpec("ratio", "bounded", "rate", "share of retried requests")
    metric = registry.register(spec)
    assert metric.spec == spec
    assert metric.observed(0.25) == 0.25


def test_register_rejects_other_objects(registry: MetricRegistry) -> None:
    with pytest.raises(LddError, match="expects a Metric or a MetricSpec"):
        registry.register("pass_rate")  # type: ignore[arg-type]


def test_composite_needs_registered_components(registry: MetricRegistry) -> None:
    a, b = rate("a"), rate("b")
    combo = weighted_sum("combo", [(a, 1.0), (b, 2.0)], description="a and b")
    registry.register(a)
    with pytest.raises(
        CompositionError, match=r"needs its components registered first: missing \['b'\]"
    ):
        registry.register(combo)
    with pytest.raises(CompositionError, match="missing"):
        registry.register(combo.spec)
    registry.register(b)
    registry.register(combo)
    assert registry.spec("combo").components == (("a", 1.0), ("b", 2.0))


def test_composite_components_must_match_the_registered_specs(registry: MetricRegistry) -> None:
    registry.register(rate("a", version=2))
    combo = maximum("combo", [rate("a", version=1)], description="worst of a")
    with pytest.raises(
        CompositionError, match="component 'a' differs from the registered spec in 'version'"
    ):
        registry.register(combo)


def test_register_many_writes_once(registry: MetricRegistry) -> None:
    a, b = rate("a"), rate("b")
    combo = maximum("combo", [a, b], description="worst of a and b")
    registry.register_many([a, b, combo])
    assert registry.names() == ["a", "b", "combo"]
    with pytest.raises(VersionConflictError):
        registry.register_many([rate("c"), latency(), latency("s")])
    # The failed batch registered nothing.
    assert registry.names() == ["a", "b", "combo"]
    assert [s["name"] for s in registry.store.read_metrics()["specs"]] == ["a", "b", "combo"]  # type: ignore[index]


def test_reopened_registry_knows_every_spec(store: TraceStore) -> None:
    a, lat = rate("a"), latency()
    s = signed_delta("delta", description="change in loss", normalize_scale=2.0)
    combo = weighted_sum("combo", [(a, 1.0), (lat, 3.0)], description="a and latency")
    first = MetricRegistry(store)
    first.register_many([a, lat, s, combo])
    reopened = MetricRegistry(store)
    assert reopened.names() == ["a", "latency", "delta", "combo"]
    for name in reopened.names():
        assert reopened.spec(name) == first.spec(name)
    theta = 0.3
    rebuilt = reopened.get("combo")
    # Components read theta with the identity accessor; so do the originals here.
    assert rebuilt.observed(theta) == pytest.approx(combo.observed(theta))
    # Logging needs no re-registration.
    Calibrator(reopened).log("combo", 0.2, 0.25)
    assert Calibrator(MetricRegistry(store)).stats("combo").n == 1


def test_unknown_metric(registry: MetricRegistry) -> None:
    registry.register(rate())
    for call in (registry.get, registry.spec, registry.state, registry.is_load_bearing):
        with pytest.raises(UnknownMetricError, match="unknown metric 'nope'") as info:
            call("nope")
        assert isinstance(info.value, KeyError)
        assert info.value.name == "nope"
        assert "pass_rate" in str(info.value)
    with pytest.raises(UnknownMetricError):
        Calibrator(registry).log("nope", 0.1, 0.2)


def test_corrupt_spec_on_disk(store: TraceStore) -> None:
    store.write_metrics({"schema_version": 1, "specs": [{"name": "x"}], "promotions": []})
    before = store.metrics_path.read_bytes()
    with pytest.raises(StoreCorruptError, match="missing key"):
        MetricRegistry(store)
    assert store.metrics_path.read_bytes() == before


def test_corrupt_state_on_disk(registry: MetricRegistry) -> None:
    registry.register(rate())
    doc = registry.store.read_metrics()
    assert doc is not None
    doc["promotions"][0]["calibration"]["n"] = 7  # histogram no longer adds up
    registry.store.write_metrics(doc)
    with pytest.raises(StoreCorruptError, match="inconsistent counts"):
        MetricRegistry(registry.store)


def test_state_without_incremental_data_is_recounted(registry: MetricRegistry) -> None:
    """metrics.json written by another tool has no calibration cursor: count from the start."""
    cal = Calibrator(registry)
    registry.register(rate())
    log_errors(cal, "pass_rate", [0.1, 0.2])
    doc = registry.store.read_metrics()
    assert doc is not None
    for item in doc["promotions"]:
        del item["calibration"]
        del item["history"]
    registry.store.write_metrics(doc)
    other = Calibrator(MetricRegistry(registry.store))
    assert other.stats("pass_rate").n == 2
    assert other.verify() == []


# --------------------------------------------------------------------------- read-only


def test_read_only_registry_never_writes(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    ro = MetricRegistry(store, read_only=True)
    ro.register(rate())
    ro.extend_history({("pass_rate", "t"): [0.5]})
    assert ro.history("pass_rate", "t") == [0.5]
    cal = Calibrator(ro)
    record = cal.make_record("pass_rate", 0.5, 0.4)
    assert record.observed == 0.4
    assert cal.stats("pass_rate").n == 0
    assert not cal.can_promote("pass_rate")
    with pytest.raises(LddError, match="read_only=True"):
        cal.log("pass_rate", 0.5, 0.4)
    with pytest.raises(LddError, match="read_only=True"):
        cal.log_observations([cal.make_observation("pass_rate", 0.4)])
    with pytest.raises(LddError, match="read_only=True"):
        cal.update()
    ro.reload()
    assert ro.names() == ["pass_rate"]
    assert list(tmp_path.iterdir()) == []


def test_read_only_registry_validates_against_disk(store: TraceStore) -> None:
    MetricRegistry(store).register(latency("ms"))
    before = snapshot(store)
    ro = MetricRegistry(store, read_only=True)
    with pytest.raises(VersionConflictError, match="'ms' != 's'"):
        ro.register(latency("s"))
    ro.register(latency("ms"))
    ro.register(rate())
    assert ro.names() == ["latency", "pass_rate"]
    assert snapshot(store) == before


# --------------------------------------------------------------------------- records


def test_log_normalizes_and_appends_one_line(registry: MetricRegistry) -> None:
    registry.register(latency())
    cal = Calibrator(registry)
    record = cal.log("latency", 250, 500.0, session_id="s1", nodeid="t.py::x")
    assert record.predicted == 0.25
    assert record.observed == 0.5
    assert record.raw_predicted == 250
    assert record.raw_observed == 500.0
    assert record.metric_version == 1
    assert record.timestamp is not None
    assert re_match(TIMESTAMP, record.timestamp)
    lines, _ = registry.store.read_jsonl(registry.store.calibrations_path)
    assert lines == [record.to_json()]
    assert CalibrationRecord.from_json(lines[0]) == record
    assert set(lines[0]) == {
        "metric_name",
        "metric_version",
        "predicted",
        "observed",
        "timestamp",
        "raw_predicted",
        "raw_observed",
        "session_id",
        "nodeid",
    }


def re_match(pattern: str, text: str) -> bool:
    import re

    return re.fullmatch(pattern, text) is not None


def test_raw_pairs_and_infinities_are_kept_in_json_form(registry: MetricRegistry) -> None:
    registry.register_many([rate(), latency()])
    cal = Calibrator(registry)
    pair = cal.log("pass_rate", (1, 4), (2, 4))
    assert (pair.predicted, pair.observed) == (0.25, 0.5)
    assert pair.raw_predicted == [1, 4]
    inf = cal.log("latency", float("inf"), 10)
    assert inf.predicted == 1.0
    assert inf.raw_predicted == "inf"
    lines, _ = registry.store.read_jsonl(registry.store.calibrations_path)
    assert [CalibrationRecord.from_json(line) for line in lines] == [pair, inf]


def test_make_record_touches_nothing(registry: MetricRegistry) -> None:
    registry.register(rate())
    before = snapshot(registry.store)
    cal = Calibrator(registry)
    start = time.perf_counter()
    for _ in range(10_000):
        cal.make_record("pass_rate", 0.5, 0.4, nodeid="t")
        cal.make_observation("pass_rate", 0.4, nodeid="t")
    elapsed = time.perf_counter() - start
    assert snapshot(registry.store) == before
    assert elapsed < 2.0  # cheap: ~10,000 of each per session


def test_invalid_values_name_the_field(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    with pytest.raises(InvalidObservationError, match=r"predicted: .*\(got 1\.5\)"):
        cal.make_record("pass_rate", 1.5, 0.4)
    with pytest.raises(InvalidObservationError, match=r"observed: .*\(got True\)"):
        cal.make_record("pass_rate", 0.5, True)


def test_observations(registry: MetricRegistry) -> None:
    registry.register(latency())
    cal = Calibrator(registry)
    obs = [cal.make_observation("latency", v, session_id="s") for v in (100, 2000, float("inf"))]
    assert [o.normalized for o in obs] == [0.1, 1.0, 1.0]
    assert obs[2].raw == "inf"
    cal.log_observations(obs)
    lines, _ = registry.store.read_jsonl(registry.store.observations_path)
    assert [ObservationRecord.from_json(line) for line in lines] == obs
    assert set(lines[0]) == {
        "metric_name",
        "metric_version",
        "raw",
        "normalized",
        "timestamp",
        "session_id",
        "nodeid",
    }


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


# --------------------------------------------------------------------------- gate edges


def test_four_pairs_are_not_enough_five_are(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.0] * 4)
    assert cal.stats("pass_rate").n == 4
    assert not cal.can_promote("pass_rate")
    assert not cal.try_promote("pass_rate")
    assert registry.state("pass_rate").state == "insufficient_data"
    log_errors(cal, "pass_rate", [0.0])
    assert cal.can_promote("pass_rate")
    assert cal.try_promote("pass_rate")
    assert registry.state("pass_rate").promoted_at is not None


def test_mae_of_exactly_the_limit_passes(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    for _ in range(5):
        cal.log("pass_rate", 0.5, 0.35)  # |0.5 - 0.35| = 0.15000000000000002
    stats = cal.stats("pass_rate")
    assert stats.mae == pytest.approx(0.15)
    assert cal.try_promote("pass_rate")


def test_mae_just_above_the_limit_fails(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    for _ in range(5):
        cal.log("pass_rate", 0.5, 0.3499)
    assert cal.stats("pass_rate").mae == pytest.approx(0.1501)
    assert not cal.try_promote("pass_rate")
    assert registry.state("pass_rate").state == "drifting"


def test_gate_verdicts() -> None:
    gate = CalibrationGate(max_p95=0.2, max_worst=0.5)
    assert gate.verdict(CalibrationStats()) == "insufficient_data"
    assert gate.verdict(CalibrationStats(5, 0.1, 0.1, 0.6, 0.1)) == "catastrophic_outlier"
    assert gate.verdict(CalibrationStats(5, 0.1, 0.3, 0.4, 0.1)) == "tail_risk_high"
    assert gate.verdict(CalibrationStats(5, 0.16, 0.2, 0.4, 0.1)) == "drifting"
    assert gate.verdict(CalibrationStats(5, 0.1, 0.2, 0.4, 0.16)) == "drifting"
    assert gate.verdict(CalibrationStats(5, 0.15, 0.2, 0.5, 0.15)) == "load_bearing"
    assert gate.passes(CalibrationStats(5, 0.15 + 1e-10, 0.2, 0.5, 0.15))
    assert not gate.passes(CalibrationStats(5, 0.15 + 1e-8, 0.2, 0.5, 0.15))


def test_window_mae_must_pass_for_promotion(registry: MetricRegistry) -> None:
    registry.register(rate())
    registry.set_gate("pass_rate", CalibrationGate(window=3))
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.0] * 10 + [0.4] * 3)
    stats = cal.stats("pass_rate")
    assert stats.mae is not None
    assert stats.mae < 0.15
    assert stats.window_mae == pytest.approx(0.4)
    assert not cal.try_promote("pass_rate")
    assert registry.state("pass_rate").state == "drifting"


def test_load_bearing_metric_is_demoted_after_drift(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.05] * 20)
    assert cal.update() == [
        ("pass_rate", MetricState("pass_rate", 1), registry.state("pass_rate"))
    ]
    promoted = registry.state("pass_rate")
    assert promoted.is_load_bearing
    log_errors(cal, "pass_rate", [0.6] * 4)  # window MAE = (6*0.05 + 4*0.6)/10 = 0.27
    changes = cal.update()
    assert [(name, b.state, a.state) for name, b, a in changes] == [
        ("pass_rate", "load_bearing", "drifting")
    ]
    state = registry.state("pass_rate")
    assert state.mae is not None
    assert state.mae <= 0.15
    assert state.window_mae == pytest.approx(0.27)
    assert state.demoted_at is not None
    assert state.promoted_at == promoted.promoted_at
    # Recovers: ten good pairs later the window passes again.
    log_errors(cal, "pass_rate", [0.0] * 10)
    assert cal.try_promote("pass_rate")
    assert registry.state("pass_rate").demoted_at is None


def test_catastrophic_outlier_and_tail_risk(registry: MetricRegistry) -> None:
    registry.register_many([rate("a"), rate("b")])
    registry.set_gate("a", CalibrationGate(max_worst=0.5))
    registry.set_gate("b", CalibrationGate(max_p95=0.1, max_mae=0.5))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 19 + [0.9])
    log_errors(cal, "b", [0.0] * 18 + [0.2, 0.2])
    cal.update()
    assert registry.state("a").state == "catastrophic_outlier"
    assert registry.state("a").worst_error == pytest.approx(0.9)
    assert registry.state("b").state == "tail_risk_high"
    assert registry.state("b").p95_error == pytest.approx(0.2)


def test_p95_is_nearest_rank_on_the_quantized_scale(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    errors = [i / 100 for i in range(1, 21)]  # 0.01 .. 0.20
    log_errors(cal, "pass_rate", errors)
    # rank = ceil(0.95 * 20) = 19 -> 0.19
    assert cal.stats("pass_rate").p95_error == pytest.approx(0.19, abs=1e-12)
    log_errors(cal, "pass_rate", [0.123456])
    # n = 21, rank = ceil(19.95) = 20 -> the 20th smallest is 0.19 still
    assert cal.stats("pass_rate").p95_error == pytest.approx(0.19, abs=1e-12)
    assert cal.stats("pass_rate").worst_error == pytest.approx(0.2)


def test_composite_with_an_advisory_component_stays_advisory(registry: MetricRegistry) -> None:
    a, b = rate("a"), rate("b")
    combo = weighted_sum("combo", [(a, 1.0), (b, 1.0)], description="a and b")
    registry.register_many([a, b, combo])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    log_errors(cal, "combo", [0.0] * 5)  # its own pairs pass
    cal.update()
    assert registry.is_load_bearing("a")
    assert not registry.is_load_bearing("b")
    assert not registry.is_load_bearing("combo")
    assert not cal.can_promote("combo")
    assert not cal.try_promote("combo")
    log_errors(cal, "b", [0.0] * 5)
    # Updating the component re-evaluates the composite that depends on it.
    changes = cal.update(["b"])
    assert [name for name, _, _ in changes] == ["b", "combo"]
    assert registry.is_load_bearing("combo")
    # A demoted component demotes the composite.
    registry.register(rate("b", version=2))
    cal.update(["b"])
    assert not registry.is_load_bearing("combo")
    assert registry.state("combo").demoted_at is not None


def test_composite_with_failing_own_pairs_stays_advisory(registry: MetricRegistry) -> None:
    a = rate("a")
    combo = maximum("combo", [a], description="worst of a")
    registry.register_many([a, combo])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    log_errors(cal, "combo", [0.5] * 5)
    cal.update()
    assert registry.is_load_bearing("a")
    assert registry.state("combo").state == "drifting"


def test_update_returns_only_changes_and_writes_once(registry: MetricRegistry) -> None:
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    changes = cal.update()
    assert [(n, b.state, a.state) for n, b, a in changes] == [
        ("a", "insufficient_data", "load_bearing")
    ]
    assert cal.update() == []
    on_disk = MetricRegistry(registry.store)
    assert on_disk.state("a") == registry.state("a")
    assert on_disk.state("a").n == 5


def test_update_of_unknown_metric(registry: MetricRegistry) -> None:
    with pytest.raises(UnknownMetricError):
        Calibrator(registry).update(["ghost"])


def test_calibrator_gate_and_per_metric_gates(store: TraceStore) -> None:
    registry = MetricRegistry(
        store, gate=CalibrationGate(min_n=2), gates={"b": CalibrationGate(min_n=4)}
    )
    registry.register_many([rate("a"), rate("b")])
    assert registry.gate_for("a") == CalibrationGate(min_n=2)
    assert registry.gate_for("b") == CalibrationGate(min_n=4)
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 3)
    log_errors(cal, "b", [0.0] * 3)
    assert cal.can_promote("a")
    assert not cal.can_promote("b")
    strict = Calibrator(registry, CalibrationGate(min_n=10))
    assert strict.gate_for("a") == CalibrationGate(min_n=10)
    assert strict.gate_for("b") == CalibrationGate(min_n=4)  # the metric's own gate wins
    assert not strict.can_promote("a")


def test_a_wider_window_recounts_once(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.3] * 20 + [0.0] * 10)
    cal.update()
    assert cal.stats("pass_rate").window_mae == 0.0
    wide = Calibrator(registry, CalibrationGate(window=30))
    assert wide.stats("pass_rate").window_mae == pytest.approx(0.2)
    assert wide.verify() == []


def test_other_versions_are_ignored(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.5] * 3)
    registry.register(rate(version=2))
    log_errors(cal, "pass_rate", [0.1] * 2)
    stats = cal.stats("pass_rate")
    assert stats.n == 2
    assert stats.mae == pytest.approx(0.1)
    assert cal.recompute("pass_rate") == stats


# --------------------------------------------------------------------------- incremental


def test_stats_read_only_what_was_appended(registry: MetricRegistry) -> None:
    """After an update, damaging an early line goes unnoticed: it is never re-read."""
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1] * 5)
    cal.update()
    path = registry.store.calibrations_path
    data = path.read_bytes()
    first_end = data.index(b"\n")
    path.write_bytes(b"x" * first_end + data[first_end:])  # same length, now invalid JSON
    log_errors(cal, "pass_rate", [0.1])
    assert cal.stats("pass_rate").n == 6
    assert Calibrator(MetricRegistry(registry.store)).try_promote("pass_rate")
    assert cal.update() == []
    # A full recompute does read everything, and says where the damage is.
    with pytest.raises(StoreCorruptError, match=r"metric_calibrations\.jsonl:1: "):
        cal.verify()


def test_a_truncated_log_is_an_error_not_a_reset(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1] * 5)
    cal.update()
    registry.store.calibrations_path.write_bytes(b"")
    with pytest.raises(StoreCorruptError, match="was truncated"):
        cal.update()


def test_malformed_pair_values_name_the_line(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1])
    registry.store.append_calibrations(
        [{"metric_name": "pass_rate", "metric_version": 1, "predicted": 2, "observed": 0}]
    )
    with pytest.raises(
        StoreCorruptError,
        match=r":2: 'predicted' must be a normalized number in \[0, 1\] \(got 2\)",
    ):
        cal.stats("pass_rate")


def test_verify_detects_tampered_figures(registry: MetricRegistry) -> None:
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1, 0.2, 0.3])
    cal.update()
    assert cal.verify() == []
    doc = registry.store.read_metrics()
    assert doc is not None
    doc["promotions"][0]["calibration"]["sum_abs_error"] = 0.3
    registry.store.write_metrics(doc)
    problems = Calibrator(MetricRegistry(registry.store)).verify()
    assert problems == [
        "metric 'pass_rate' version 1: stored mae = 0.09999999999999999, "
        "full recompute mae = 0.20000000000000004"
    ] or (len(problems) == 1 and "stored mae" in problems[0])


def _write_big_log(store: TraceStore, n: int) -> None:
    """A log of ``n`` pairs with metrics.json already counted up to its end."""
    registry = MetricRegistry(store)
    registry.register(rate())
    line = (
        json.dumps(
            {"metric_name": "pass_rate", "metric_version": 1, "predicted": 0.5, "observed": 0.4},
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )
    store.calibrations_path.write_bytes(line * n)
    doc = store.read_metrics()
    assert doc is not None
    calibration = doc["promotions"][0]["calibration"]
    error = abs(0.5 - 0.4)
    total = 0.0
    for _ in range(n):
        total += error
    calibration.update(
        log_offset=len(line) * n,
        log_line=n,
        n=n,
        sum_abs_error=total,
        worst_error=error,
        histogram={"1000": n},
        recent_errors=[error] * 10,
    )
    store.write_metrics(doc)


@pytest.mark.parametrize("n", [10_000, 1_000_000])
def test_status_and_promotion_cost_does_not_grow_with_history(tmp_path: Path, n: int) -> None:
    store = TraceStore(tmp_path)
    _write_big_log(store, n)
    registry = MetricRegistry(store)
    cal = Calibrator(registry)
    start = time.perf_counter()
    log_errors(cal, "pass_rate", [0.1] * 3)
    stats = cal.stats("pass_rate")
    assert cal.try_promote("pass_rate")
    cal.update()
    elapsed = time.perf_counter() - start
    assert stats.n == n + 3
    # A full re-read of a million lines takes seconds; the incremental path milliseconds.
    assert elapsed < 0.5


# --------------------------------------------------------------------------- history


def test_history_is_bounded_and_persisted(registry: MetricRegistry) -> None:
    registry.register_many([rate("a"), rate("b")])
    registry.extend_history({("a", "t1"): [0.1, 0.2], ("b", "<session>"): [1.0]}, window=3)
    registry.extend_history({("a", "t1"): [0.3, 0.4]}, window=3)
    assert registry.history("a", "t1") == [0.2, 0.3, 0.4]
    assert registry.history("a", "t2") == []
    reopened = MetricRegistry(registry.store)
    assert reopened.history("a", "t1") == [0.2, 0.3, 0.4]
    assert reopened.history("b", "<session>") == [1.0]
    with pytest.raises(UnknownMetricError):
        registry.history("ghost", "t")
    with pytest.raises(InvalidObservationError, match=r"must be a finite number \(got nan\)"):
        registry.extend_history({("a", "t1"): [float("nan")]})
    with pytest.raises(LddError, match="'window' must be an int >= 1"):
        registry.extend_history({("a", "t1"): [0.1]}, window=0)


def test_update_writes_history_and_states_together(registry: MetricRegistry) -> None:
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    writes: list[Any] = []
    original = registry.store.write_metrics

    def counting(doc: Any) -> None:
        writes.append(doc)
        original(doc)

    registry.store.write_metrics = counting  # type: ignore[method-assign]
    cal.update(history={("a", "t"): [0.25]})
    assert len(writes) == 1
    reopened = MetricRegistry(registry.store)
    assert reopened.history("a", "t") == [0.25]
    assert reopened.is_load_bearing("a")


# --------------------------------------------------------------------------- several writers


def test_two_registries_on_one_store(store: TraceStore) -> None:
    one, two = MetricRegistry(store), MetricRegistry(store)
    one.register(rate())
    cal_one, cal_two = Calibrator(one), Calibrator(two)
    log_errors(cal_one, "pass_rate", [0.0] * 3)
    two.reload()
    log_errors(cal_two, "pass_rate", [0.0] * 2)
    cal_one.update()
    assert one.is_load_bearing("pass_rate")
    # two bumps the version; one learns it at its next update.
    two.register(rate(version=2))
    log_errors(cal_one, "pass_rate", [0.0])  # one still logs version 1
    cal_one.update()
    assert one.spec("pass_rate").version == 2
    assert one.state("pass_rate").state == "insufficient_data"
    assert cal_one.stats("pass_rate").n == 0
    assert cal_one.verify() == []


def test_a_removed_log_is_an_error_naming_the_fix(registry: MetricRegistry) -> None:
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 2)
    cal.update()
    registry.store.calibrations_path.unlink()
    with pytest.raises(StoreCorruptError, match=r"truncated or removed .*metrics\.json too"):
        cal.stats("b")


def test_verify_of_an_empty_registry(registry: MetricRegistry) -> None:
    assert Calibrator(registry).verify() == []
    assert not registry.store.exists()


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


def test_histogram_is_dense_and_older_forms_still_read(tmp_path: Path) -> None:
    import base64
    from array import array

    from pytest_ldd.registry import _empty_histogram, _pack_histogram, _unpack_histogram

    histogram = _empty_histogram()
    for q, count in {0: 2, 1500: 7, 10000: 1}.items():
        histogram[q] = count
    packed = _pack_histogram(histogram)
    assert set(packed) == {"dense"}
    # Constant size whatever the counts: mostly zeros, compressed.
    assert len(packed["dense"]) < 400
    assert _unpack_histogram(packed) == histogram
    assert _unpack_histogram({"0": 2, "1500": 7, "10000": 1}) == histogram
    sparse = {
        "bins": base64.b64encode(array("H", [0, 1500, 10000]).tobytes()).decode(),
        "counts": base64.b64encode(array("I", [2, 7, 1]).tobytes()).decode(),
    }
    assert _unpack_histogram(sparse) == histogram
    with pytest.raises(ValueError, match="count"):
        _unpack_histogram({"12": 0})
    with pytest.raises(ValueError, match="bytes"):
        _unpack_histogram({"dense": _pack_histogram(array("I", [1, 2]))["dense"]})


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
    from pytest_ldd.recording import TestRecorder

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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=40), st.integers(1, 12))
def test_add_many_is_add_one_by_one(errors: list[float], keep: int) -> None:
    from pytest_ldd.registry import _Accumulator
    from pytest_ldd.store import Cursor

    one, many = (_Accumulator(1, Cursor(), Cursor(), keep=keep) for _ in range(2))
    for error in errors:
        one.add(error)
    many.add_many(errors)
    assert (many.n, many.sum_abs, many.worst, list(many.recent)) == (
        one.n,
        one.sum_abs,
        one.worst,
        list(one.recent),
    )
    assert many.histogram == one.histogram


def test_own_pairs_are_counted_from_memory_only_while_nobody_else_wrote(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1] * 5)
    cal.update()
    log_errors(cal, "pass_rate", [0.2] * 3)
    run = registry.store.own_appends(registry.store.calibrations_path)
    assert run is not None
    assert run.lines == 8
    # Another writer (another store object: another process) appends in between.
    other = Calibrator(MetricRegistry(TraceStore(tmp_path)))
    other.log_many([other.make_record("pass_rate", 0.0, 0.5)])
    log_errors(cal, "pass_rate", [0.3])
    stats = cal.stats("pass_rate")
    assert stats.n == 10
    assert stats.worst_error == pytest.approx(0.5)
    assert cal.verify() == []


def test_own_pairs_from_memory_equal_a_full_read(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1, 0.05])
    cal.update()
    log_errors(cal, "a", [0.3, 0.01])
    log_errors(cal, "b", [0.2])
    cal.update()
    assert cal.stats("a").n == 4
    assert cal.stats("b").n == 1
    assert cal.verify() == []
    assert cal.stats("a") == cal.recompute("a")


def test_past_the_memory_cap_own_pairs_are_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_ldd.store

    monkeypatch.setattr(pytest_ldd.store, "_MAX_REMEMBERED_LINES", 3)
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1, 0.2, 0.3])
    assert registry.store.own_appends(registry.store.calibrations_path) is not None
    log_errors(cal, "pass_rate", [0.4])
    assert registry.store.own_appends(registry.store.calibrations_path) is None
    assert cal.stats("pass_rate").n == 4
    assert cal.stats("pass_rate").worst_error == pytest.approx(0.4)


def test_only_changed_histograms_are_packed_again(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1, 0.3])
    log_errors(cal, "b", [0.2, 0.4, 0.6])
    cal.update()
    reopened = Calibrator(MetricRegistry(TraceStore(tmp_path)))
    before = json.loads(registry.store.metrics_path.read_text())
    log_errors(reopened, "a", [0.9])
    reopened.update()
    after = json.loads(registry.store.metrics_path.read_text())

    def histogram(doc: dict[str, Any], name: str) -> Any:
        (state,) = (s for s in doc["promotions"] if s["metric_name"] == name)
        return state["calibration"]["histogram"]

    assert histogram(after, "b") == histogram(before, "b")
    assert histogram(after, "a") != histogram(before, "a")
    final = Calibrator(MetricRegistry(TraceStore(tmp_path)))
    assert final.stats("a").p95_error == final.recompute("a").p95_error == pytest.approx(0.9)
    assert final.verify() == []


def test_a_recording_session_syncs_its_logs_before_metrics_json_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ldd.recording import SessionLedger, TestRecorder

    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(rate())
    ctx = recording_context(registry)
    ledger = SessionLedger(ctx)
    recorder = TestRecorder(ctx, "test_a.py::test_a")
    recorder.observe("pass_rate", 0.5, 0.5)
    ledger.consume(recorder.take_payload() or {})
    store = registry.store
    events: list[str] = []
    real_sync, real_write = store.sync, store.write_metrics
    monkeypatch.setattr(
        store, "sync", lambda paths=None: events.append("sync") or real_sync(paths)
    )
    monkeypatch.setattr(
        store, "write_metrics", lambda doc: events.append("write") or real_write(doc)
    )
    ledger.finish()
    assert events == ["sync", "write"]
    assert Calibrator(MetricRegistry(TraceStore(tmp_path))).stats("pass_rate").n == 1


@pytest.mark.parametrize(
    ("text", "expected"), [("{not json", "not valid JSON"), ("[1, 2]", "not an object")]
)
def test_a_malformed_worker_payload_is_a_clear_error(
    tmp_path: Path, text: str, expected: str
) -> None:
    from pytest_ldd.recording import SessionLedger

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
    from pytest_ldd.recording import SessionLedger

    registry = MetricRegistry(TraceStore(tmp_path))
    ctx = recording_context(registry)
    with pytest.raises(InvalidObservationError, match=re.escape(expected)) as info:
        SessionLedger(ctx).consume(text)
    assert "same version" in str(info.value)
    assert not registry.store.exists()


def test_a_payload_survives_its_trip_as_text(tmp_path: Path) -> None:
    from pytest_ldd.recording import SessionLedger, TestRecorder, payload_text

    def session(folder: Path, as_text: bool) -> dict[str, bytes]:
        registry = MetricRegistry(TraceStore(folder))
        registry.register(latency())
        ctx = recording_context(registry, ship_specs=True)
        recorder, ledger = TestRecorder(ctx, "t.py::t"), SessionLedger(ctx)
        recorder.observe("latency", math.inf, 3)
        recorder.observe("latency", 7)
        payload = recorder.take_payload()
        assert payload is not None
        ledger.consume(payload_text(payload) if as_text else payload)
        assert (ledger.observations, ledger.pairs) == (2, 1)
        store = registry.store
        return {p.name: p.read_bytes() for p in (store.observations_path, store.calibrations_path)}

    assert session(tmp_path / "text", True) == session(tmp_path / "dict", False)
