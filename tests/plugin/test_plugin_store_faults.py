"""A recording session under the faults a fleet meets: hostile names, forked children,
conflicting declarations, histories at the edge of the float range, thousands of
metrics.  Each is a named error or a correct record, never a traceback or a second
copy of the session."""

from __future__ import annotations

import contextlib
import json
import math
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from plugin_support import metrics_doc, read_jsonl, run

# Loaded before pytester snapshots sys.modules: its C extension keeps the exception
# classes of its first import, which a second import of the module would not match.
with contextlib.suppress(ImportError):
    import psycopg  # noqa: F401

# -- history_mean at the edge of the float range ---------------------------------------


def test_history_mean_reads_infinite_and_huge_histories(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_edges="""
        import math
        import pytest

        @pytest.mark.metric("lat", kind="positive", unit="ms", normalize_scale=1000,
                            description="latency of a call", predictor="history_mean")
        def test_infinite_then_finite(ldd):
            ldd.observe("lat", math.inf)
            ldd.observe("lat", 5.0)

        @pytest.mark.metric("big", kind="positive", normalize_scale=1000,
                            description="bytes moved by a call", predictor="history_mean")
        def test_three_huge_values(ldd):
            for _ in range(4):
                ldd.observe("big", 1e308)

        @pytest.mark.metric("drift", kind="signed", description="change of a score",
                            predictor="history_mean")
        def test_both_infinities(ldd):
            ldd.observe("drift", math.inf)
            ldd.observe("drift", -math.inf)
            ldd.observe("drift", 1.0)
            ldd.observe("drift", 2.0)
        """
    )
    result = run(pytester, "--ldd")
    assert "OverflowError" not in result.stdout.str()
    result.assert_outcomes(passed=3)
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    by_metric: dict[str, list[tuple[object, object]]] = {}
    for pair in pairs:
        by_metric.setdefault(pair["metric_name"], []).append(
            (pair["raw_predicted"], pair["raw_observed"])
        )
    # [inf] predicts inf (normalized 1.0) for the 5.0 that follows.
    assert by_metric["lat"] == [("inf", 5.0)]
    # The mean of 1e308, 1e308, 1e308 is 1e308: no intermediate sum overflows.
    assert by_metric["big"] == [(1e308, 1e308)] * 3
    # [inf] predicts inf; [inf, -inf] and [inf, -inf, 1.0] have no mean: no pair.
    assert by_metric["drift"] == [("inf", "-inf")]
    assert all(0.0 <= p["predicted"] <= 1.0 for p in pairs)
    # The next session reads the stored bound (1e300) as the infinity it stood for.
    (lat,) = [s for s in metrics_doc(pytester.path / ".ldd")["promotions"]
              if s["metric_name"] == "lat"]  # fmt: skip
    assert lat["history"] == {"test_edges.py::test_infinite_then_finite": [1e300, 5.0]}
    again = run(pytester, "--ldd", "-k", "infinite_then")
    again.assert_outcomes(passed=1)
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    latest = [(p["raw_predicted"], p["raw_observed"]) for p in pairs if p["metric_name"] == "lat"]
    assert latest == [("inf", 5.0), ("inf", "inf"), ("inf", 5.0)]
    assert math.isinf(float(latest[1][0]))


# -- a metric name with control characters never reaches the terminal raw -----------------

HOSTILE = "lat\x1b[2J\x07\nFAKE ====== 99 passed in 0.01s ======\u202e"


def _assert_escaped(output: str) -> None:
    assert "\x1b[2J" not in output
    assert "\x07" not in output
    assert "\u202e" not in output
    assert not any(line.startswith("FAKE") for line in output.splitlines())
    assert "\\x1b" in output


def test_an_unknown_metric_name_is_escaped_in_the_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_names=f"""
        def test_observe(ldd):
            ldd.observe({HOSTILE!r}, 1.0)

        def test_gate(ldd):
            with ldd.gate({HOSTILE!r}):
                pass

        def test_state(ldd):
            ldd.state({HOSTILE!r})
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ldd")
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=3)
    _assert_escaped(output)
    assert output.count("unknown metric") >= 3


def test_an_undeclared_marker_name_is_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marker=f"""
        import pytest

        @pytest.mark.metric({HOSTILE!r})
        def test_a():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 4
    _assert_escaped(output)
    assert "is not declared" in output


def test_a_hostile_key_in_tool_ldd_is_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        '[tool.ldd.calibration]\n"max\\u001b[2J\\nFAKE ====== 99 passed ======" = 1\n'
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 4
    assert "unknown key" in output
    assert "\x1b[2J" not in output
    assert not any(line.startswith("FAKE") for line in output.splitlines())


def test_the_cli_escapes_an_unknown_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ldd import cli

    (tmp_path / "pyproject.toml").write_text(
        '[tool.ldd.metrics.acc]\nkind = "bounded"\ndescription = "share of answers right"\n'
    )
    for verb in (["metric", "show", HOSTILE], ["metric", "calibrate", "--name", HOSTILE,
                                                "--predicted", "0.5", "--observed", "0.5"]):
        assert cli.main([*verb, "--project", str(tmp_path)]) == 1
        captured = capsys.readouterr()
        _assert_escaped(captured.out + captured.err)


# -- a database store that restarts or stops during a session ----------------------------

RESTARTING_TESTS = """
import json
import os
import subprocess

import pytest

@pytest.mark.parametrize("index", range({tests}))
@pytest.mark.metric("m", kind="bounded", description="share of checks that failed")
def test_observe(ldd, index):
    ldd.observe("m", 0.25, predicted=0.5)
    if index in {interrupt_at}:
        subprocess.run(json.loads(os.environ["LDD_SERVER_COMMAND"]), check=True,
                       capture_output=True, timeout=120)
"""


def _database_project(pytester: pytest.Pytester, server: Any, key: str) -> None:
    pytester.makepyprojecttoml(f'[tool.ldd]\nstore = "{server.dsn}"\nproject = "{key}"\n')


def _stored_pairs(server: Any, key: str) -> list[dict[str, Any]]:
    from pytest_ldd.store.postgres import PostgresStore

    reader = PostgresStore(server.dsn, key=key)
    try:
        return reader.read_log("pairs")[0]
    finally:
        reader.close()


@pytest.mark.parametrize("restarts", [1, 3])
def test_a_session_across_server_restarts_stores_every_pair(
    pytester: pytest.Pytester,
    private_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    restarts: int,
) -> None:
    key = f"restarts-{uuid.uuid4().hex[:8]}"
    _database_project(pytester, private_server, key)
    interrupt_at = {10 * (i + 1) for i in range(restarts)}
    pytester.makepyfile(
        test_restarts=RESTARTING_TESTS.format(tests=10 * (restarts + 2), interrupt_at=interrupt_at)
    )
    monkeypatch.setenv("LDD_SERVER_COMMAND", json.dumps(private_server.command("restart")))
    result = run(pytester, "--ldd")
    result.assert_outcomes(passed=10 * (restarts + 2))
    assert result.ret == 0
    pairs = _stored_pairs(private_server, key)
    # Each test's pair exactly once: none lost, none stored twice.
    nodeids = sorted(p["nodeid"] for p in pairs)
    expected = sorted(f"test_restarts.py::test_observe[{i}]" for i in range(10 * (restarts + 2)))
    assert nodeids == expected


def test_a_store_that_stays_down_fails_the_session_and_spills_what_it_holds(
    pytester: pytest.Pytester,
    private_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_ldd import cli

    monkeypatch.setattr("pytest_ldd.store.postgres.RECONNECT_DELAYS", (0.05, 0.1))
    key = f"spill-{uuid.uuid4().hex[:8]}"
    _database_project(pytester, private_server, key)
    pytester.makepyfile(test_stops=RESTARTING_TESTS.format(tests=30, interrupt_at={9}))
    monkeypatch.setenv("LDD_SERVER_COMMAND", json.dumps(private_server.command("stop")))
    try:
        result = run(pytester, "--ldd")
        output = result.stdout.str()
        result.assert_outcomes(passed=30)
        assert result.ret == 1
        (line,) = [text for text in output.splitlines() if "were not stored" in text]
        spilled = sorted((pytester.path / ".ldd-spill").iterdir())
        assert len(spilled) == 1
        folder = spilled[0]
        assert str(folder) in line
        assert f"ldd store import {folder}" in line
        counted = re.search(r"(\d+) pairs and (\d+) observations of this session", line)
        assert counted is not None
        kept = read_jsonl(folder / "metric_calibrations.jsonl")
        assert int(counted.group(1)) == len(kept) == int(counted.group(2)) > 0
        assert len(read_jsonl(folder / "sessions.jsonl")) == 1
    finally:
        private_server.start()
    # Once the store is back, the spill folder loads as any exported store does.
    assert len(_stored_pairs(private_server, key)) == 30 - len(kept)
    assert cli.main(["store", "import", str(folder), "--project", str(pytester.path)]) == 0
    assert "imported" in capsys.readouterr().out
    pairs = _stored_pairs(private_server, key)
    assert sorted(p["nodeid"] for p in pairs) == sorted(
        f"test_stops.py::test_observe[{i}]" for i in range(30)
    )
    assert cli.main(["metric", "verify", "--project", str(pytester.path)]) == 0


# -- a forked child that returns into pytest ----------------------------------------------

FORKING_TESTS = """
import os

import pytest

@pytest.mark.metric("m", kind="bounded", description="share of checks that failed")
def test_fork(ldd):
    ldd.observe("m", 0.25, predicted=0.5)
    pid = os.fork()
    if pid == 0:
        return  # the child returns into pytest instead of calling os._exit
    os.waitpid(pid, 0)

@pytest.mark.metric("m")
def test_after(ldd):
    ldd.observe("m", 0.5, predicted=0.5)
"""


def test_a_forked_child_that_returns_never_ends_the_session(
    pytester: pytest.Pytester, backend: Any
) -> None:
    backend.write_pyproject(pytester.path)
    pytester.makepyfile(test_fork=FORKING_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ldd")
    assert result.ret == 0, result.stdout.str()
    store = backend.open(pytester.path)
    try:
        sessions, _ = store.read_log("sessions")
        pairs, _ = store.read_log("pairs")
    finally:
        store.close()
    assert len(sessions) == 1
    nodeids = sorted(p["nodeid"] for p in pairs)
    assert nodeids == ["test_fork.py::test_after", "test_fork.py::test_fork"]
