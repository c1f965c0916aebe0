"""Recording next to pytest-timeout: a test's records are one unit, a timeout is a test's.

pytest-timeout's ``signal`` method raises in whatever code runs when its timer fires
(the whole protocol is timed, reports included); its ``thread`` method ends the
process with ``os._exit``.  Whichever fires, and wherever: each test's observations
and pairs are written whole or not at all (every observation here has a
prediction, so per test the two logs hold as many lines), a timeout is a failure of
the test it fired in, never an INTERNALERROR, and the session goes on (signal) or
ends with everything before it intact (thread).

The timeouts that land in pytest-ldd's own code are made to land there: a conftest
slows the hand-over of one test's records (inside the timer) or the write of its
unit (which pytest-ldd does once the timer is cancelled).  Every run is a fresh
interpreter: the ``thread`` method ends the process it fires in.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from plugin_support import PROJECT_ARGS, read_jsonl

METRIC = """
[tool.ldd.metrics.step_s]
kind = "positive"
unit = "s"
normalize_scale = 10
description = "wall time of one step"
"""

TESTS = """
import time
import pytest

def test_first(ldd):
    for value in (1.0, 1.5, 2.0):
        ldd.observe("step_s", value, predicted=value)

def test_slow(ldd):
    for value in (2.0, 2.5):
        ldd.observe("step_s", value, predicted=value)
    time.sleep(SLEEP)

def test_last(ldd):
    ldd.observe("step_s", 3.0, predicted=3.0)
"""

#: A conftest that slows pytest-ldd down for ``test_slow`` alone, at one place.
SLOW_DOWN = """
import os
import signal
import time

from pytest_ldd.plugin import recorder
from pytest_ldd.store.files import appender

if "{action}" == "interrupt":
    # Ctrl-C as a terminal session has it, whatever this process inherited from the
    # one that started it (a SIGINT ignored or blocked there stays so across exec,
    # and then the interruption this test sends itself would never arrive).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})
    if not callable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, signal.default_int_handler)

def act():
    if "{action}" == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    time.sleep({seconds})

if "{where}" == "hand-over":
    # Inside the test's timer: taking the test's payload once its teardown is reported.
    _take = recorder.TestRecorder.take_payload

    def take_payload(self):
        if self.nodeid.endswith("test_slow"):
            act()
        return _take(self)

    recorder.TestRecorder.take_payload = take_payload
else:
    # Between the two appends of the test's unit: its observations are written, its
    # pairs not yet.
    _append = appender.LogAppender._append

    def _slow_append(self, key, data, *args):
        result = _append(self, key, data, *args)
        if key.endswith("observations.jsonl") and b"test_slow" in data:
            act()
        return result

    appender.LogAppender._append = _slow_append
"""


def project(pytester: pytest.Pytester, *, sleep: float = 0.0, ini: str = "") -> None:
    pytester.makepyprojecttoml(METRIC + ini)
    pytester.makepyfile(test_steps=TESTS.replace("SLEEP", str(sleep)))


def units(folder: Path) -> dict[str, tuple[int, int]]:
    """Per test: its observation lines and pair lines (whole units hold as many)."""
    ldd_dir = folder / ".ldd"
    observations = read_jsonl(ldd_dir / "observations.jsonl")
    pairs = read_jsonl(ldd_dir / "metric_calibrations.jsonl")
    observed = Counter(r["nodeid"].rsplit("::", 1)[-1] for r in observations)
    paired = Counter(r["nodeid"].rsplit("::", 1)[-1] for r in pairs)
    # Every line is whole: read_jsonl would have failed on a torn one.
    return {test: (observed[test], paired[test]) for test in sorted(observed | paired)}


def last_session(folder: Path) -> dict[str, object]:
    sessions = read_jsonl(folder / ".ldd" / "sessions.jsonl")
    assert sessions, "no session record"
    return sessions[-1]


def runpytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest_subprocess(*PROJECT_ARGS, "-p", "no:randomly", *args)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    return result


WHOLE = {"test_first": (3, 3), "test_slow": (2, 2), "test_last": (1, 1)}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    ("how", "ini"),
    [
        (["--timeout=1"], ""),
        ([], "[tool.pytest.ini_options]\ntimeout = 1\n"),
        (["--timeout=1", "--timeout-method=signal"], ""),
    ],
    ids=["--timeout", "ini timeout", "signal method"],
)
def test_a_test_timing_out_fails_alone_and_keeps_every_unit_whole(
    pytester: pytest.Pytester, how: list[str], ini: str, workers: list[str]
) -> None:
    project(pytester, sleep=5, ini=ini)
    result = runpytest(pytester, "--ldd", *how, *workers)
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*Timeout*"])
    # What test_slow observed before its timeout is kept, whole; the session went on.
    assert units(pytester.path) == WHOLE
    counts = last_session(pytester.path)["counts"]
    assert counts == {**counts, "tests": 3, "observations": 6, "pairs": 6}  # type: ignore[dict-item]


def test_a_timeout_marker_on_one_test(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(
        test_marked="""
        import time
        import pytest

        @pytest.mark.timeout(1)
        def test_marked(ldd):
            ldd.observe("step_s", 4.0, predicted=4.0)
            time.sleep(5)
        """
    )
    result = runpytest(pytester, "--ldd")
    result.assert_outcomes(passed=3, failed=1)
    assert units(pytester.path) == {**WHOLE, "test_marked": (1, 1)}


def test_the_thread_method_ends_the_process_with_every_unit_before_it_whole(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, sleep=5)
    result = runpytest(pytester, "--ldd", "--timeout=1", "--timeout-method=thread")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*Timeout*"])
    # os._exit in the middle of test_slow: its unit was never handed over.
    assert units(pytester.path) == {"test_first": (3, 3)}


def test_the_thread_method_under_xdist_loses_only_the_crashed_test(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, sleep=5)
    result = runpytest(pytester, "--ldd", "--timeout=1", "--timeout-method=thread", "-n", "2")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*crashed while running*test_slow*"])
    assert units(pytester.path) == {"test_first": (3, 3), "test_last": (1, 1)}
    assert last_session(pytester.path)["counts"]["tests"] == 3  # type: ignore[index]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_timeout_in_the_hand_over_fails_that_test_and_keeps_its_unit(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    project(pytester)
    pytester.makeconftest(SLOW_DOWN.format(where="hand-over", action="sleep", seconds=3))
    result = runpytest(pytester, "--ldd", "--timeout=1", *workers)
    assert result.ret == 1, result.stdout.str()
    # The test passed; the timeout that fired while its records were handed over is
    # an error of that test, and the session went on to the next one.
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_slow*", "*Timeout*while pytest-ldd handed over*"]
    )
    assert units(pytester.path) == WHOLE
    assert last_session(pytester.path)["counts"]["tests"] == 3  # type: ignore[index]


def test_a_thread_timeout_in_the_hand_over_writes_none_of_that_unit(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.makeconftest(SLOW_DOWN.format(where="hand-over", action="sleep", seconds=3))
    result = runpytest(pytester, "--ldd", "--timeout=1", "--timeout-method=thread")
    assert result.ret == 1
    assert units(pytester.path) == {"test_first": (3, 3)}


@pytest.mark.parametrize("method", ["signal", "thread"])
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_slow_write_is_past_the_tests_timer(
    pytester: pytest.Pytester, method: str, workers: list[str]
) -> None:
    # The unit is written once pytest-timeout cancelled the test's timer: a store
    # that takes longer than the limit times nothing out, and tears nothing.
    project(pytester)
    pytester.makeconftest(SLOW_DOWN.format(where="write", action="sleep", seconds=2))
    result = runpytest(pytester, "--ldd", "--timeout=1", f"--timeout-method={method}", *workers)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    assert units(pytester.path) == WHOLE


def test_ctrl_c_in_the_middle_of_a_unit_waits_for_its_end(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makeconftest(SLOW_DOWN.format(where="write", action="interrupt", seconds=0.2))
    result = runpytest(pytester, "--ldd")
    assert result.ret == 2, result.stdout.str()
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    # test_slow's pairs were written after its observations, before the interruption.
    assert units(pytester.path) == {"test_first": (3, 3), "test_slow": (2, 2)}
    assert last_session(pytester.path)["interrupted"] is True
