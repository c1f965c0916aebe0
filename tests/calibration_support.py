"""Helpers shared by the registry, calibrator and records tests."""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.model.metric import Metric, bounded_rate, positive_count
from pytest_ldd.store.files import TraceStore

TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def rate(name: str = "pass_rate", version: int = 1) -> Metric:
    return bounded_rate(name, description="fraction of failing tests", version=version)


def latency(unit: str = "ms", version: int = 1) -> Metric:
    return positive_count(
        "latency", description="p99 latency", unit=unit, normalize_scale=1000, version=version
    )


def log_errors(cal: Calibrator, name: str, errors: list[float]) -> None:
    """Log pairs of a bounded metric whose absolute errors are ``errors``."""
    for error in errors:
        cal.log(name, 0.5 + error / 2, 0.5 - error / 2)


def recording_context(registry: MetricRegistry, *, ship_specs: bool = False) -> Any:
    """A recording session's context on ``registry`` (as the plugin makes one)."""
    from pytest_ldd.config import LddConfig
    from pytest_ldd.plugin.recorder import RunContext

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


def re_match(pattern: str, text: str) -> bool:

    return re.fullmatch(pattern, text) is not None


def write_pair_lines(store: TraceStore, count: int, *, tail: str = "") -> None:
    """Write ``count`` pair lines of ``accuracy`` to the pair log (``tail`` after them).

    Each line's node id ends in its index (``t.py::test_000042``).
    """
    store.ldd_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "metric_name": "accuracy",
                "metric_version": 1,
                "predicted": 0.5,
                "observed": 0.5,
                "timestamp": "2026-12-01T08:00:00Z",
                "raw_predicted": 0.5,
                "raw_observed": 0.5,
                "session_id": "s1",
                "nodeid": f"t.py::test_{i:06d}",
            },
            separators=(",", ":"),
        )
        for i in range(count)
    ]
    store.calibrations_path.write_text("\n".join(lines) + "\n" + tail)
