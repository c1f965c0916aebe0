"""Many writers at once never lose or tear a line; crashes leave readable stores."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import textwrap
import time
import warnings
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import LddWarning, StoreCorruptError
from pytest_ldd.model.metric import bounded_rate
from pytest_ldd.model.statistics import CalibrationGate
from pytest_ldd.store.files import TraceStore

WRITERS = 4
PAIRS = 1_000


def _writer(project: str, writer: int, start: Event) -> None:
    """One process: register (identically), then log PAIRS pairs one append at a time."""
    store = TraceStore(project)
    registry = MetricRegistry(store)
    registry.register(bounded_rate("shared", description="fraction of failing tests"))
    cal = Calibrator(registry)
    start.wait()
    for i in range(PAIRS):
        cal.log("shared", 0.5, 0.5, nodeid=f"w{writer}", session_id=str(i))
    cal.update()


def test_concurrent_writers_lose_and_tear_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [
        context.Process(target=_writer, args=(str(tmp_path), w, start)) for w in range(WRITERS)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    store = TraceStore(tmp_path)
    raw = store.calibrations_path.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    assert len(lines) == WRITERS * PAIRS
    seen = [json.loads(line) for line in lines]  # every line is valid JSON on its own
    keys = sorted((r["nodeid"], int(r["session_id"])) for r in seen)
    assert keys == sorted((f"w{w}", i) for w in range(WRITERS) for i in range(PAIRS))
    registry = MetricRegistry(store)
    assert registry.names() == ["shared"]
    cal = Calibrator(registry)
    assert cal.stats("shared").n == WRITERS * PAIRS
    assert cal.verify() == []
    assert registry.is_load_bearing("shared")


def _bumper(project: str, start: Event) -> None:
    store = TraceStore(project)
    registry = MetricRegistry(store)
    start.wait()
    for version in range(2, 12):
        registry.register(bounded_rate("shared", description="failing share", version=version))
        Calibrator(registry).log("shared", 0.5, 0.4)


def test_concurrent_updates_and_version_bumps_keep_statistics_exact(tmp_path: Path) -> None:
    MetricRegistry(TraceStore(tmp_path)).register(
        bounded_rate("shared", description="failing share", version=1)
    )
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=_bumper, args=(str(tmp_path), start))]
    workers += [
        context.Process(target=_writer_of_any_version, args=(str(tmp_path), w, start))
        for w in range(3)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    cal = Calibrator(MetricRegistry(TraceStore(tmp_path)))
    assert cal.verify() == []
    assert cal.registry.spec("shared").version == 11


def _writer_of_any_version(project: str, writer: int, start: Event) -> None:
    store = TraceStore(project)
    start.wait()
    for i in range(50):
        registry = MetricRegistry(store, gate=CalibrationGate(min_n=2))
        cal = Calibrator(registry)
        cal.log("shared", 0.5, 0.45, nodeid=f"w{writer}-{i}")
        cal.update()


# --------------------------------------------------------------------------- crashes


def test_torn_last_line_is_skipped_and_the_next_append_starts_fresh(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    registry = MetricRegistry(store)
    registry.register(bounded_rate("m", description="fraction of failing tests"))
    cal = Calibrator(registry)
    for _ in range(3):
        cal.log("m", 0.5, 0.5)
    # A crash in the middle of a write leaves half a line, without its newline.
    with store.calibrations_path.open("ab") as handle:
        handle.write(b'{"metric_name":"m","metric_version":1,"predicted":0.')
    with pytest.warns(LddWarning, match=r"metric_calibrations\.jsonl:4: incomplete last line"):
        assert cal.stats("m").n == 3
    cal.log("m", 0.5, 0.5)
    lines = store.calibrations_path.read_bytes().split(b"\n")
    assert lines[3].startswith(b'{"metric_name":"m","metric_version":1,"predicted":0.')
    assert json.loads(lines[4])["metric_name"] == "m"  # on its own line
    with pytest.warns(LddWarning, match=r"metric_calibrations\.jsonl:4: skipped a line torn"):
        assert cal.stats("m").n == 4
    # Warned once: the torn line is behind the cursor now.
    assert cal.stats("m").n == 4
    with pytest.warns(LddWarning, match=":4: skipped"):
        assert cal.verify() == []


def test_corrupt_metrics_json_raises_and_is_left_byte_for_byte(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    registry = MetricRegistry(store)
    registry.register(bounded_rate("m", description="fraction of failing tests"))
    good = store.metrics_path.read_bytes()
    corrupt = good[
        : len(good) // 2
    ]  # a half-written file (never produced by us: writes are atomic)
    store.metrics_path.write_bytes(corrupt)
    with pytest.raises(StoreCorruptError, match=r"metrics\.json") as info:
        MetricRegistry(store)
    assert info.value.path == str(store.metrics_path)
    with pytest.raises(StoreCorruptError):
        registry.register(bounded_rate("n", description="share of flaky tests"))
    with pytest.raises(StoreCorruptError):
        Calibrator(registry).update()
    assert store.metrics_path.read_bytes() == corrupt


_KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from pytest_ldd.model.metric import bounded_rate
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.store.files import TraceStore

    registry = MetricRegistry(TraceStore(sys.argv[1]))
    registry.register(bounded_rate("m", description="fraction of failing tests"))
    cal = Calibrator(registry)
    i = 0
    while True:
        cal.log("m", 0.5, 0.25, nodeid=str(i))
        if i == 200:
            print("ready", flush=True)
        i += 1
    """
)


def test_a_killed_writer_loses_nothing_it_had_written(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], stdout=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05)
        proc.kill()  # SIGKILL: no cleanup, no flush
        proc.wait(timeout=30)
    store = TraceStore(tmp_path)
    # A kill inside a write could tear the last line: that one is warned about, not lost data.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records, _ = store.read_jsonl(store.calibrations_path)
    assert all(issubclass(w.category, LddWarning) for w in caught)
    ids = [int(r["nodeid"]) for r in records]
    assert ids == list(range(len(ids)))
    assert len(ids) > 200
    if not caught:
        assert Calibrator(MetricRegistry(store)).stats("m").n == len(ids)
