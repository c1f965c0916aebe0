"""Calibrator: logging pairs, statistics, the gate edges, states and verify."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from calibration_support import (
    TIMESTAMP,
    latency,
    log_errors,
    rate,
    re_match,
    snapshot,
)

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import (
    InvalidObservationError,
    StoreCorruptError,
    UnknownMetricError,
)
from pytest_ldd.model.compose import maximum, weighted_sum
from pytest_ldd.model.records import CalibrationRecord, ObservationRecord
from pytest_ldd.model.statistics import CalibrationGate, MetricState
from pytest_ldd.store.files import TraceStore


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


@pytest.fixture
def registry(store: TraceStore) -> MetricRegistry:
    return MetricRegistry(store)


# --------------------------------------------------------------------------- logging


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


def test_seed_aliases_mae_and_n_samples(registry: MetricRegistry) -> None:
    # The seed's convenience names (Calibrator.mae, n_samples) are thin aliases of stats().
    registry.register(rate())
    cal = Calibrator(registry)
    assert cal.mae("pass_rate") is None
    assert cal.n_samples("pass_rate") == 0
    cal.log("pass_rate", 0.5, 0.3)
    cal.log("pass_rate", 0.5, 0.4)
    assert cal.n_samples("pass_rate") == 2
    assert cal.mae("pass_rate") == pytest.approx(0.15)
    assert cal.mae("pass_rate") == cal.stats("pass_rate").mae


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
        match=r":2: 'predicted' must be a normalized number in \[0, 1\] \(got 2\), and read "
        r"as a raw value of 'pass_rate' it is not valid either",
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
    # A sum the histogram cannot hold is refused on read, naming the field.
    with pytest.raises(StoreCorruptError, match=r"'sum_abs_error' 0\.3 does not match"):
        MetricRegistry(registry.store)


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


def test_past_the_memory_cap_own_pairs_are_read_back(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.appender.remembered = 3
    registry = MetricRegistry(store)
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
