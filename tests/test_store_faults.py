"""The store under faults and hand edits: every one a correct figure, a recovery
with a warning, or a named error; nothing stored is lost (issue #13)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from calibration_support import log_errors, rate

from pytest_ldd.calibrator import Calibrator
from pytest_ldd.errors import LddWarning, StoreCorruptError
from pytest_ldd.registry import MetricRegistry
from pytest_ldd.store.files import TraceStore


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


def calibrated(store: TraceStore, errors: list[float], name: str = "pass_rate") -> Calibrator:
    registry = MetricRegistry(store)
    registry.register(rate(name))
    cal = Calibrator(registry)
    log_errors(cal, name, errors)
    cal.update()
    return cal


def edit(store: TraceStore, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(store.metrics_path.read_text())
    change(doc)
    store.metrics_path.write_text(json.dumps(doc))


def state(doc: dict[str, Any], name: str = "pass_rate") -> dict[str, Any]:
    (item,) = [p for p in doc["promotions"] if p["metric_name"] == name]
    return item


def calibration(doc: dict[str, Any]) -> dict[str, Any]:
    return state(doc)["calibration"]  # type: ignore[no-any-return]


# -- 1. stored figures are validated on read ------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = state(doc)
        *parents, last = path.split(".")
        for key in parents:
            target = target[key]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("calibration.sum_abs_error", -100, "'sum_abs_error'"),
        ("calibration.sum_abs_error", 0.9, "'sum_abs_error'"),
        ("calibration.sum_abs_error", 1e9, "'sum_abs_error'"),
        ("calibration.sum_abs_error", "0.5", "'sum_abs_error'"),
        ("calibration.sum_abs_error", True, "'sum_abs_error'"),
        ("calibration.worst_error", -0.1, "'worst_error'"),
        ("calibration.worst_error", 0.5, "'worst_error'"),
        ("calibration.worst_error", 2.0, "'worst_error'"),
        ("calibration.worst_error", None, "'worst_error'"),
        ("calibration.n", 6, r"min\(n, recent_keep\)"),
        ("calibration.n", -1, "'n'"),
        ("calibration.n", True, "'n'"),
        ("calibration.n", 5.0, "'n'"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1], "'recent_errors'"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1, 0.9], "recent error"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1, -0.1], "'recent_errors'"),
        ("calibration.recent_keep", 0, "'recent_keep'"),
        ("calibration.version", "1", "'version'"),
        ("last_mae", 0.02, "'last_mae'"),
        ("last_worst_error", 0.0, "'last_worst_error'"),
        ("last_p95_error", 0.9, "'last_p95_error'"),
        ("n_calibration_samples", 9, "'n_calibration_samples'"),
        ("n_calibration_samples", True, "'n_calibration_samples'"),
        ("is_load_bearing", False, "'is_load_bearing'"),
        ("is_load_bearing", "yes", "'is_load_bearing'"),
        ("state", "drifting", "'is_load_bearing'"),
        ("version", True, "'version'"),
    ],
)
def test_a_tampered_figure_is_a_named_error(
    store: TraceStore, path: str, value: Any, named: str
) -> None:
    calibrated(store, [0.1] * 5)
    edit(store, _set(path, value))
    before = store.metrics_path.read_bytes()
    with pytest.raises(StoreCorruptError, match=named):
        MetricRegistry(store)
    assert store.metrics_path.read_bytes() == before


def test_a_negative_sum_never_promotes(store: TraceStore) -> None:
    cal = calibrated(store, [0.3] * 5)
    assert not cal.registry.is_load_bearing("pass_rate")
    edit(store, _set("calibration.sum_abs_error", -100))
    with pytest.raises(StoreCorruptError, match="'sum_abs_error'"):
        Calibrator(MetricRegistry(store)).update()


def test_a_consistent_looking_tampered_state_fails_verify(store: TraceStore) -> None:
    calibrated(store, [0.1] * 3)  # insufficient data

    def promote(doc: dict[str, Any]) -> None:
        state(doc)["state"] = "load_bearing"
        state(doc)["is_load_bearing"] = True

    edit(store, promote)
    problems = Calibrator(MetricRegistry(store)).verify()
    assert problems == [
        "metric 'pass_rate' version 1: state = 'load_bearing', but the gate gives its "
        "figures 'insufficient_data'"
    ]


def test_a_state_claiming_fewer_pairs_fails_verify(store: TraceStore) -> None:
    calibrated(store, [0.1] * 6)
    edit(store, _set("n_calibration_samples", 5))
    (problem,) = Calibrator(MetricRegistry(store)).verify()
    assert "n_calibration_samples = 5, but 6 pairs are counted" in problem


def test_verify_checks_the_window_mae_shown(store: TraceStore) -> None:
    calibrated(store, [0.1] * 5)
    edit(store, _set("last_window_mae", 0.01))
    (problem,) = Calibrator(MetricRegistry(store)).verify()
    assert "last_window_mae = 0.01" in problem


def test_states_follow_every_metric_whose_pairs_were_counted(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    log_errors(cal, "b", [0.0] * 5)
    cal.update(["a"])  # b's pairs are counted too: its state follows them
    assert registry.state("b").n == 5
    assert registry.is_load_bearing("b")
    assert Calibrator(MetricRegistry(store)).verify() == []


# -- 2. a read position must name the same content -------------------------------------


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_a_log_grown_back_to_the_old_offset_is_recounted(store: TraceStore, how: str) -> None:
    first = calibrated(store, [0.02] * 5)
    size = store.calibrations_path.stat().st_size
    if how == "deleted":
        store.calibrations_path.unlink()
    else:
        with store.calibrations_path.open("r+b") as handle:
            handle.truncate(size // 2 - (size // 2) % (size // 5))
    # Pairs of a bad estimator, until the log reaches past the old offset.
    while not store.calibrations_path.exists() or store.calibrations_path.stat().st_size < size:
        log_errors(first, "pass_rate", [0.42])
    counted = store.read_jsonl(store.calibrations_path)[0]
    with pytest.warns(LddWarning, match="rewritten since.*recounted from the start"):
        registry = MetricRegistry(store)
    cal = Calibrator(registry)
    cal.update()
    stats = cal.stats("pass_rate")
    assert stats.n == len(counted)
    assert not registry.is_load_bearing("pass_rate")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Calibrator(MetricRegistry(store)).verify() == []


def test_the_same_log_copied_elsewhere_keeps_its_position(tmp_path: Path) -> None:
    import shutil

    first = TraceStore(tmp_path / "a")
    calibrated(first, [0.1] * 5)
    shutil.copytree(first.ldd_dir, tmp_path / "b" / ".ldd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = MetricRegistry(TraceStore(tmp_path / "b"))
    assert copy.is_load_bearing("pass_rate")


def test_a_log_rewritten_to_the_same_length_is_recounted(store: TraceStore) -> None:
    calibrated(store, [0.02] * 5)
    data = store.calibrations_path.read_bytes()
    # Same length, a line boundary at the same place, other values.
    store.calibrations_path.write_bytes(data.replace(b'"observed":0.49', b'"observed":0.09'))
    with pytest.warns(LddWarning, match="other bytes"):
        MetricRegistry(store)


# -- 6. keys other tools wrote are kept; duplicates are errors -------------------------


def test_unknown_keys_and_states_without_a_spec_survive_a_rewrite(store: TraceStore) -> None:
    calibrated(store, [0.1] * 2)

    def add(doc: dict[str, Any]) -> None:
        doc["other_tool"] = {"keep": [1, 2]}
        state(doc)["x_note"] = "hand written"
        doc["promotions"].append({"metric_name": "gone", "version": 3, "state": "drifting"})

    edit(store, add)
    cal = Calibrator(MetricRegistry(store))
    log_errors(cal, "pass_rate", [0.1] * 3)
    cal.update()
    doc = json.loads(store.metrics_path.read_text())
    assert doc["other_tool"] == {"keep": [1, 2]}
    assert state(doc)["x_note"] == "hand written"
    assert state(doc, "gone") == {"metric_name": "gone", "version": 3, "state": "drifting"}
    assert state(doc)["n_calibration_samples"] == 5


@pytest.mark.parametrize("where", ["specs", "promotions"])
def test_duplicate_specs_or_states_are_named(store: TraceStore, where: str) -> None:
    calibrated(store, [0.1])
    edit(store, lambda doc: doc[where].append(dict(doc[where][0])))
    with pytest.raises(StoreCorruptError, match=r"two (specs named|states of) 'pass_rate'"):
        MetricRegistry(store)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"schema_version": 1', b'"schema_version": 1, "schema_version": 1'),
        (b'"n": 1,', b'"n": 1, "n": 1,'),
        (b'"kind": "bounded"', b'"kind": "bounded", "kind": "bounded"'),
    ],
)
def test_duplicate_json_keys_are_named(store: TraceStore, old: bytes, new: bytes) -> None:
    calibrated(store, [0.1])
    data = store.metrics_path.read_bytes()
    assert old in data
    store.metrics_path.write_bytes(data.replace(old, new, 1))
    with pytest.raises(StoreCorruptError, match=r"holds the key .* twice"):
        MetricRegistry(store)


# -- 9. a NUL-filled tail is recovered like any torn tail ------------------------------


@pytest.mark.parametrize(
    "tail",
    [b"\x00" * 100, b'{"metric_name":"pass_rate","metric_ver' + b"\x00" * 40, b"\x00\x00\n"],
)
def test_a_nul_filled_tail_is_skipped_and_appending_goes_on(
    store: TraceStore, tail: bytes
) -> None:
    cal = calibrated(store, [0.1] * 2)
    with store.calibrations_path.open("ab") as handle:
        handle.write(tail)
    log_errors(cal, "pass_rate", [0.1] * 3)
    with pytest.warns(LddWarning, match="torn"):
        cal.update()
    log_errors(cal, "pass_rate", [0.1])
    cal.update()  # nothing more to warn about: appending goes on
    assert cal.stats("pass_rate").n == 6
    with pytest.warns(LddWarning, match="torn"):
        assert Calibrator(MetricRegistry(store)).verify() == []
    assert store.calibrations_path.read_bytes().endswith(b"\n")


def test_a_complete_line_before_nuls_counts(store: TraceStore) -> None:
    calibrated(store, [0.1])
    data = store.calibrations_path.read_bytes()
    store.calibrations_path.write_bytes(data[:-1] + b"\x00" * 8 + b"\n")
    records, cursor = store.read_jsonl(store.calibrations_path)
    assert records == [json.loads(data)]
    assert cursor.offset == len(data) + 8
