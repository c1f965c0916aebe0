"""The accumulator and its histogram, CalibrationGate verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.model.statistics import CalibrationGate, CalibrationStats


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


def test_histogram_is_dense_and_older_forms_still_read(tmp_path: Path) -> None:
    import base64
    from array import array

    from pytest_ldd.model.statistics import _empty_histogram, _pack_histogram, _unpack_histogram

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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=40), st.integers(1, 12))
def test_add_many_is_add_one_by_one(errors: list[float], keep: int) -> None:
    from pytest_ldd.model.statistics import Accumulator
    from pytest_ldd.store.files import LogCursor

    one, many = (Accumulator(1, LogCursor(), LogCursor(), keep=keep) for _ in range(2))
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


def test_an_accumulator_keeps_its_positions_in_its_stores_form() -> None:
    from pytest_ldd.errors import StoreCorruptError
    from pytest_ldd.model.statistics import Accumulator

    acc = Accumulator(2, "here", "there", keep=3)
    acc.add_many([0.1, 0.2])
    data = acc.to_json({"span": ["here", "there"]})
    assert list(data)[:3] == ["version", "span", "n"]
    back = Accumulator.from_json(data, "doc", lambda d: tuple(d["span"]))
    assert (back.start, back.cursor, back.n, list(back.recent)) == ("here", "there", 2, [0.1, 0.2])
    assert back.histogram == acc.histogram
    with pytest.raises(StoreCorruptError, match="doc: calibration state is malformed"):
        Accumulator.from_json(data, "doc", lambda d: d["missing"])


def _tampered(change: str) -> object:
    from pytest_ldd.model.statistics import Accumulator

    acc = Accumulator(1, "start", "end", keep=3)
    acc.add_many([0.1, 0.25, 0.2, 0.5])
    if change == "n":
        acc.n += 1
    elif change == "sum":
        acc.sum_abs += 0.01
    elif change == "worst below the top bin":
        acc.worst = 0.4
    elif change == "a count above the worst":
        acc.histogram[9000] += 1
        acc.n += 1
        acc.sum_abs += 0.9
    elif change == "a recent error not counted":
        acc.recent[0] = 0.3
    elif change == "a recent error above the worst":
        acc.recent[0] = 0.50004  # in the worst error's bin, yet above it
    return acc


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("n", "the histogram counts 4 errors, 'n' is 5"),
        ("sum", "'sum_abs_error' 1.06 does not match the histogram"),
        (
            "worst below the top bin",
            "'worst_error' 0.4 is not in the histogram's largest bin (5000)",
        ),
        (
            "a count above the worst",
            "'worst_error' 0.5 is not in the histogram's largest bin (9000)",
        ),
        ("a recent error not counted", "recent error 0.3 is not counted in the histogram"),
        ("a recent error above the worst", "recent error 0.50004 exceeds 'worst_error' 0.5"),
    ],
)
def test_figures_no_sequence_of_errors_gives_are_named(change: str, expected: str) -> None:
    assert _tampered("none").inconsistency() is None  # type: ignore[attr-defined]
    problem = _tampered(change).inconsistency()  # type: ignore[attr-defined]
    assert problem is not None
    assert problem.startswith(expected)


def test_an_empty_accumulator_is_consistent_unless_it_has_a_sum() -> None:
    from pytest_ldd.model.statistics import Accumulator

    acc = Accumulator(1, "start", "end")
    assert acc.inconsistency() is None
    acc.sum_abs = 0.5
    assert acc.inconsistency() == "'sum_abs_error' 0.5 with n = 0"
    acc.histogram[10_000] = 1
    assert acc.inconsistency() == "the histogram counts 1 errors, 'n' is 0"


def test_a_state_is_evaluated_by_one_rule() -> None:
    from pytest_ldd.model.statistics import MetricState, evaluate_state

    gate = CalibrationGate(min_n=2, max_mae=0.1)
    good = CalibrationStats(3, 0.05, 0.05, 0.05, 0.05)
    bad = CalibrationStats(3, 0.5, 0.5, 0.5, 0.5)
    advisory = MetricState("m", 1)
    promoted = evaluate_state(advisory, good, gate, now="2026-12-01T08:00:00Z")
    assert promoted.state == "load_bearing"
    assert (promoted.n, promoted.mae) == (3, 0.05)
    assert promoted.promoted_at == "2026-12-01T08:00:00Z"
    # A composite waits for its components, however good its own pairs.
    waiting = evaluate_state(advisory, good, gate, components_load_bearing=False, now="x")
    assert waiting.state == "insufficient_data"
    assert waiting.promoted_at is None
    demoted = evaluate_state(promoted, bad, gate, now="2026-12-02T08:00:00Z")
    assert demoted.state == "drifting"
    assert demoted.promoted_at == "2026-12-01T08:00:00Z"
    assert demoted.demoted_at == "2026-12-02T08:00:00Z"
    again = evaluate_state(demoted, good, gate, now="2026-12-03T08:00:00Z")
    assert (again.promoted_at, again.demoted_at) == ("2026-12-03T08:00:00Z", None)
