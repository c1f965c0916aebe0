"""The session's ledger: what it writes, and in which order."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibration_support import rate, recording_context

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.plugin.ledger import SessionLedger
from pytest_ldd.plugin.recorder import TestRecorder
from pytest_ldd.store.files import TraceStore


def test_a_recording_session_syncs_its_logs_before_metrics_json_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(rate())
    ctx = recording_context(registry)
    ledger = SessionLedger(ctx)
    recorder = TestRecorder(ctx, "test_a.py::test_a")
    recorder.observe("pass_rate", 0.5, 0.5)
    payload = recorder.take_payload()
    assert payload is not None
    ledger.consume(payload)
    store = registry.store
    events: list[str] = []
    real_sync, real_write = store.sync, store.replace_registry
    monkeypatch.setattr(
        store, "sync", lambda paths=None: events.append("sync") or real_sync(paths)
    )
    monkeypatch.setattr(
        store, "replace_registry", lambda doc: events.append("write") or real_write(doc)
    )
    ledger.finish()
    assert events == ["sync", "write"]
    assert Calibrator(MetricRegistry(TraceStore(tmp_path))).stats("pass_rate").n == 1
