"""Recording next to tests that fake the clock (pytest-mock, monkeypatch, freezegun).

pytest-ldd stamps its records from the real clock, taken when the plugin loads: a
test's own ``time.time`` double neither runs dry because pytest-ldd read it
(``side_effect``) nor relabels what is recorded (1970, 2012).  Each case runs
serially and under xdist; the session-wide freeze runs in a fresh interpreter,
where the plugin is imported before the conftest freezes time.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from plugin_support import PROJECT_ARGS, read_jsonl, run

METRIC = """
[tool.ldd.metrics.step_s]
kind = "positive"
unit = "s"
normalize_scale = 10
description = "wall time of one step"
"""

#: Test bodies that fake the clock, each as a project's test would.
FAKES = {
    "mocker-side-effect": """
import time

def test_step(mocker, ldd):
    mocker.patch("time.time", side_effect=[100.0, 100.25])
    start = time.time()
    ldd.observe("step_s", 0.25, predicted=0.3)
    assert time.time() - start == 0.25
""",
    "mocker-return-value": """
import time

def test_step(mocker, ldd):
    mocker.patch("time.time", return_value=1000.0)
    ldd.observe("step_s", 0.25, predicted=0.3)
    assert time.time() == 1000.0
""",
    "mocker-every-clock": """
import time

def test_step(mocker, ldd):
    for name in ("time", "time_ns", "monotonic", "gmtime", "localtime", "strftime",
                 "clock_gettime", "perf_counter"):
        mocker.patch(f"time.{name}", side_effect=AssertionError(f"time.{name} read"))
    ldd.observe("step_s", 0.25, predicted=0.3)
""",
    "monkeypatch": """
import time

def test_step(monkeypatch, ldd):
    monkeypatch.setattr(time, "time", lambda: 0.0)
    ldd.observe("step_s", 0.25, predicted=0.3)
    assert time.time() == 0.0
""",
    "freezegun-decorator": """
import datetime
import time
from freezegun import freeze_time
from pytest_ldd import Observation

@freeze_time("2012-01-14 12:00:00")
def test_step(ldd):
    assert datetime.datetime.now().year == 2012
    ldd.observe("step_s", 0.25, predicted=0.3)
    assert time.time() == 1326542400.0

@freeze_time("2012-01-14 12:00:00", tick=True)
def test_yielded():
    yield Observation("step_s", 0.5, predicted=0.5)
""",
    "freezegun-context": """
from freezegun import freeze_time

def test_step(ldd):
    with freeze_time("1999-12-31 23:59:59") as frozen:
        ldd.observe("step_s", 0.25, predicted=0.3)
        frozen.tick(3600)
        ldd.observe("step_s", 0.5, predicted=0.3)
""",
}


def _seconds(stamp: str) -> float:
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return when.timestamp()


def assert_stamped_now(folder: Path, before: float, after: float) -> None:
    """Every timestamp pytest-ldd wrote under ``folder`` lies in [before, after]."""
    ldd_dir = folder / ".ldd"
    records = read_jsonl(ldd_dir / "observations.jsonl")
    pairs = read_jsonl(ldd_dir / "metric_calibrations.jsonl")
    assert records, "nothing recorded"
    assert len(pairs) == len(records)
    (session,) = read_jsonl(ldd_dir / "sessions.jsonl")
    stamps = [r["timestamp"] for r in records + pairs]
    stamps += [session["started_at"], session["ended_at"]]
    stamps.append(json.loads((ldd_dir / "metrics.json").read_text())["generated_at"])
    report = json.loads((folder / "r.json").read_text())
    stamps.append(report["generated_at"])
    for stamp in stamps:
        assert int(before) <= _seconds(stamp) <= after + 1, (stamp, before, after)
    # The session id starts with its (real) start time.
    day = time.strftime("%Y%m%d", time.gmtime(before))
    assert session["session_id"].startswith(day) or session["session_id"] > day


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("fake", sorted(FAKES))
def test_a_faked_clock_neither_breaks_nor_relabels_recording(
    pytester: pytest.Pytester, fake: str, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(test_clock=FAKES[fake])
    # The same test passes without pytest-ldd recording ...
    plain = run(pytester, *workers)
    assert plain.ret == 0, plain.stdout.str()
    before = time.time()
    result = run(pytester, "--ldd", "--ldd-report=r.json", *workers)
    after = time.time()
    # ... and with it: the test's own double was not read by pytest-ldd.
    assert result.ret == 0, result.stdout.str()
    assert "StopIteration" not in result.stdout.str()
    assert_stamped_now(pytester.path, before, after)


def test_a_clock_frozen_for_the_whole_session_does_not_reach_the_records(
    pytester: pytest.Pytester,
) -> None:
    # Frozen as the conftest is imported (after pytest loaded its plugins), never
    # thawed until pytest ends: every hook of pytest-ldd runs under the freeze.
    pytester.makepyprojecttoml(METRIC)
    pytester.makeconftest(
        """
        from freezegun import freeze_time

        freezer = freeze_time("2012-01-14 12:00:00")
        freezer.start()

        def pytest_unconfigure(config):
            freezer.stop()
        """
    )
    pytester.makepyfile(
        test_clock="""
        import datetime

        def test_frozen(ldd):
            assert datetime.datetime.now().year == 2012
            ldd.observe("step_s", 0.25, predicted=0.3)
        """
    )
    before = time.time()
    result = pytester.runpytest_subprocess(*PROJECT_ARGS, "--ldd", "--ldd-report=r.json")
    after = time.time()
    assert result.ret == 0, result.stdout.str()
    assert_stamped_now(pytester.path, before, after)
