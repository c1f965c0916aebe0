"""Only the final attempt of a rerun test counts, on every path pytest-rerunfailures takes.

A test fails its first attempt and passes its second: by a plain failure (in the
call, in a fixture's setup, in its teardown), by a timeout (pytest-timeout, both
methods), or by crashing its xdist worker (``os._exit``, ``SIGKILL``).  In every
case the session records the final attempt's observations and pairs once, and
``counts.tests`` counts each test once.  Each attempt observes its own number, so
the pairs tell which attempt was kept.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from plugin_support import PROJECT_ARGS, read_jsonl

METRIC = """
[tool.ldd.metrics.attempt_n]
kind = "positive"
unit = "count"
normalize_scale = 10
description = "which attempt of the test ran"
"""

#: ``{fail}`` fails the first attempt (and the second too, with ``{times}`` = 2).
FLAKY = """
import os
import signal
import time
from pathlib import Path

import pytest

def attempt():
    marker = Path(__file__).with_name("attempts")
    number = int(marker.read_text()) + 1 if marker.exists() else 1
    marker.write_text(str(number))
    return number

@pytest.fixture
def numbered(ldd):
    number = attempt()
    ldd.observe("attempt_n", number, predicted=number)
    if number <= {times} and "{where}" == "setup":
        raise RuntimeError("setup fails")
    yield number
    if number <= {times} and "{where}" == "teardown":
        raise RuntimeError("teardown fails")

def test_flaky(numbered, ldd):
    ldd.observe("attempt_n", numbered * 10, predicted=numbered * 10)
    if numbered <= {times} and "{where}" == "call":
        {fail}

def test_steady(ldd):
    ldd.observe("attempt_n", 0, predicted=0)
"""

FAILURES = {
    "assert": "assert False, 'first attempt'",
    "os._exit": "os._exit(3)",
    "SIGKILL": "os.kill(os.getpid(), signal.SIGKILL)",
    "timeout": "time.sleep(5)",
}


def run_flaky(
    pytester: pytest.Pytester,
    *args: str,
    fail: str = "assert",
    where: str = "call",
    times: int = 1,
) -> pytest.RunResult:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(test_flaky=FLAKY.format(fail=FAILURES[fail], where=where, times=times))
    # A fresh interpreter: a crash, a signal or pytest-timeout's thread method ends it.
    result = pytester.runpytest_subprocess(*PROJECT_ARGS, "--ldd", *args)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    return result


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """pytest's closing counts, warnings aside."""
    return {k: v for k, v in result.parseoutcomes().items() if not k.startswith("warning")}


def assert_final_attempt_only(pytester: pytest.Pytester, final: int) -> None:
    ldd_dir = pytester.path / ".ldd"
    pairs = sorted(p["raw_observed"] for p in read_jsonl(ldd_dir / "metric_calibrations.jsonl"))
    # test_steady's 0, and the final attempt's fixture and call values.
    assert pairs == [0, final, final * 10]
    assert len(read_jsonl(ldd_dir / "observations.jsonl")) == 3
    (session,) = read_jsonl(ldd_dir / "sessions.jsonl")
    assert session["counts"]["tests"] == 2
    assert session["counts"]["pairs"] == 3
    assert session["counts"]["observations"] == 3


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("where", ["setup", "call", "teardown"])
def test_a_plain_failure_rerun(pytester: pytest.Pytester, where: str, workers: list[str]) -> None:
    result = run_flaky(pytester, "--reruns", "1", *workers, where=where)
    assert result.ret == 0, result.stdout.str()
    # A teardown that fails follows a call that passed, and was reported so.
    passed = 3 if where == "teardown" else 2
    assert outcomes(result) == {"passed": passed, "rerun": 1}
    assert_final_attempt_only(pytester, final=2)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_two_failures_then_a_pass(pytester: pytest.Pytester, workers: list[str]) -> None:
    result = run_flaky(pytester, "--reruns", "3", *workers, times=2)
    assert result.ret == 0, result.stdout.str()
    assert outcomes(result) == {"passed": 2, "rerun": 2}
    assert_final_attempt_only(pytester, final=3)


def run_crashing(pytester: pytest.Pytester, *args: str, **flaky: Any) -> pytest.RunResult:
    """``run_flaky`` until pytest-rerunfailures noticed the crash it is to rerun.

    On a loaded machine pytest-rerunfailures sometimes reports a crashed xdist worker's
    test as failed without rerunning it (its crash bookkeeping races the worker's
    death). That run has no final attempt to check; run again from a clean project,
    at most three times. A run with a rerun is judged in full by the caller.
    """
    for _ in range(3):
        result = run_flaky(pytester, *args, **flaky)
        output = result.stdout.str()
        if "rerun" in outcomes(result) or "crashed while running" not in output:
            return result
        shutil.rmtree(pytester.path / ".ldd", ignore_errors=True)
        (pytester.path / "attempts").unlink(missing_ok=True)
    return result


@pytest.mark.parametrize("crash", ["os._exit", "SIGKILL"])
def test_a_crashed_worker_rerun_keeps_the_final_attempt(
    pytester: pytest.Pytester, crash: str
) -> None:
    result = run_crashing(pytester, "--reruns", "1", "-n", "2", fail=crash)
    assert result.ret == 0, result.stdout.str()
    assert outcomes(result) == {"passed": 2, "rerun": 1}
    assert_final_attempt_only(pytester, final=2)


def test_two_crashes_then_a_pass(pytester: pytest.Pytester) -> None:
    result = run_crashing(pytester, "--reruns", "2", "-n", "2", fail="os._exit", times=2)
    assert result.ret == 0, result.stdout.str()
    assert outcomes(result) == {"passed": 2, "rerun": 2}
    assert_final_attempt_only(pytester, final=3)


@pytest.mark.parametrize(
    ("method", "workers"),
    [("signal", []), ("signal", ["-n", "2"]), ("thread", ["-n", "2"])],
    ids=["signal-serial", "signal-xdist", "thread-xdist"],
)
def test_a_timed_out_attempt_rerun(
    pytester: pytest.Pytester, method: str, workers: list[str]
) -> None:
    # The thread method ends the worker it fires in: the crash path.
    result = run_flaky(
        pytester,
        "--reruns",
        "1",
        "--timeout=1",
        f"--timeout-method={method}",
        *workers,
        fail="timeout",
    )
    assert result.ret == 0, result.stdout.str()
    assert outcomes(result) == {"passed": 2, "rerun": 1}
    assert_final_attempt_only(pytester, final=2)


def test_a_crash_that_is_not_rerun_counts_as_a_test(pytester: pytest.Pytester) -> None:
    result = run_flaky(pytester, "-n", "2", fail="os._exit")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*crashed while running*test_flaky*"])
    ldd_dir = pytester.path / ".ldd"
    # The crashed worker's records were never handed over; the test ran all the same.
    pairs = [p["raw_observed"] for p in read_jsonl(ldd_dir / "metric_calibrations.jsonl")]
    assert pairs == [0]
    (session,) = read_jsonl(ldd_dir / "sessions.jsonl")
    assert session["counts"]["tests"] == 2
