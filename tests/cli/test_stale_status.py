"""Pairs logged after the last update (by the reference tool, by a killed session) are
shown by every read-only command, at the cost of the log's tail only; ``verify``
compares what is shown with the whole log."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from backends import Backend

from pytest_ldd import cli
from pytest_ldd.store import Store

PYPROJECT = """
[tool.ldd.metrics.accuracy]
kind = "bounded"
description = "Share of answers that match the reference answer."

[tool.ldd.metrics.latency_ms]
kind = "positive"
unit = "ms"
normalize_scale = 1000.0
description = "Time to first byte of the search endpoint."
"""


def ldd(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> tuple[int, str, str]:
    code = cli.main([*args, "--project", str(project)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(backend: Backend, tmp_path: Path) -> Iterator[tuple[Path, Store]]:
    backend.write_pyproject(tmp_path, PYPROJECT)
    code = cli.main(["metric", "calibrate", "--name", "latency_ms", "--predicted", "300",
                     "--observed", "420", "--project", str(tmp_path)])  # fmt: skip
    assert code == 0
    store = backend.open(tmp_path)
    yield tmp_path, store
    store.close()


def _reference_lines(store: Store) -> None:
    # The reference tool appends its own lines: raw latencies, no raw_* keys.
    store.append_pairs(
        [{"metric_name": "latency_ms", "metric_version": 1, "predicted": p, "observed": o,
          "timestamp": "2026-12-01T00:00:00Z"}
         for p, o in [(400.0, 410.0), (380.0, 400.0), (0.41, 0.42)]]
    )  # fmt: skip


def test_status_shows_the_pairs_logged_after_the_last_update(
    project: tuple[Path, Store], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store = project
    _reference_lines(store)
    code, out, _ = ldd(capsys, folder, "metric", "status")
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("latency_ms")]
    assert row.split()[1:4] == ["1", "insufficient_data", "4"]
    assert "latency_ms +3" in out
    code, out, _ = ldd(capsys, folder, "metric", "status", "--json")
    doc = json.loads(out)
    (latency,) = [m for m in doc["metrics"] if m["name"] == "latency_ms"]
    assert latency["n"] == 4
    assert latency["mae"] == pytest.approx((0.12 + 0.01 + 0.02 + 0.01) / 4)
    code, out, _ = ldd(capsys, folder, "metric", "show", "latency_ms")
    assert "n:                     4" in out
    # Reading stored nothing: the stored state still says 1 until an update.
    from pytest_ldd.calibration.registry import MetricRegistry

    assert MetricRegistry(store).state("latency_ms").n == 1


def test_a_tail_that_earns_promotion_is_shown_promoted(
    project: tuple[Path, Store], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store = project
    store.append_pairs(
        [{"metric_name": "latency_ms", "metric_version": 1, "predicted": 0.4,
          "observed": 0.41} for _ in range(5)]
    )  # fmt: skip
    code, out, _ = ldd(capsys, folder, "metric", "list")
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("latency_ms")]
    assert "load_bearing" in row.split()


def test_verify_compares_what_status_shows_with_the_whole_log(
    project: tuple[Path, Store], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store = project
    _reference_lines(store)
    code, out, err = ldd(capsys, folder, "metric", "verify")
    assert code == 0, err
    assert "ok: 2 metrics verified" in out
    assert "latency_ms +3" in out
    # The tail counted, the figures are those of the whole log: a tampered stored
    # figure is still a mismatch, tail or no tail.
    doc = json.loads(store.read_registry_bytes() or b"{}")
    (state,) = [s for s in doc["promotions"] if s["metric_name"] == "latency_ms"]
    state["calibration"]["recent_errors"] = [0.11]
    state["calibration"]["worst_error"] = 0.11
    with store.lock():
        store.replace_registry(doc)
    code, _, err = ldd(capsys, folder, "metric", "verify")
    assert code == 1
    assert "metric 'latency_ms'" in err


def test_status_reads_only_the_tail(
    project: tuple[Path, Store],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, store = project
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.calibration.registry import MetricRegistry

    for _ in range(3):
        store.append_pairs(
            [{"metric_name": "accuracy", "metric_version": 1, "predicted": 0.5,
              "observed": 0.4} for _ in range(100)]
        )  # fmt: skip
    Calibrator(MetricRegistry(store)).update()
    _reference_lines(store)
    asked: list[Any] = []
    store_class = type(store)
    read_pairs = store_class.read_pairs

    def spy(self: Any, cursors: Collection[Any], *, recount: bool = False) -> Any:
        asked.append((min(cursors), recount))
        return read_pairs(self, cursors, recount=recount)

    monkeypatch.setattr(store_class, "read_pairs", spy)
    code, _, _ = ldd(capsys, folder, "metric", "status")
    assert code == 0
    (begin, recount) = asked[-1]
    assert not recount
    assert begin > store.origin()  # after the 301 counted pairs, not from the start
    registry = MetricRegistry(store)
    assert registry.counted("latency_ms").cursor == begin
