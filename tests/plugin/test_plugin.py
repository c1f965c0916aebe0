"""End-to-end tests of the pytest plugin: declare, record, promote, gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_support import metrics_doc, read_jsonl, run, snapshot, state_of, strip_volatile

MARKED_TEST = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric(
    "latency", kind="positive", unit="ms", normalize_scale=1000,
    description="response latency of the toy handler", le=500,
)
def test_latency():
    yield Observation("latency", 512, predicted=510)
"""

CONFIG_DECLARED = """
[tool.ldd.metrics.latency]
kind = "positive"
unit = "ms"
normalize_scale = 1000
description = "response latency of the toy handler"
le = 500
"""

CONFIG_TEST = """
from pytest_ldd import Observation

def test_latency():
    yield Observation("latency", 512, predicted=510)
"""

HOOK_CONFTEST = """
from pytest_ldd.model.metric import positive_count

def pytest_ldd_register_metrics(registry):
    registry.register(positive_count(
        "latency", description="response latency of the toy handler",
        unit="ms", normalize_scale=1000,
    ))
"""

HOOK_TEST = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric("latency", le=500)
def test_latency():
    yield Observation("latency", 512, predicted=510)
"""

GATE_FAILURE = "ldd gate failed: latency = 512 ms, limit le 500 (load-bearing: n=5, MAE=0.002)"


def six_runs(pytester: pytest.Pytester, *extra: str) -> list[pytest.RunResult]:
    """Run the project six times with --ldd and check the advisory -> load-bearing arc."""
    ldd_dir = pytester.path / ".ldd"
    results = []
    for number in range(1, 7):
        result = run(pytester, "--ldd", *extra)
        results.append(result)
        if number <= 4:
            assert result.ret == 0, result.stdout.str()
            result.stdout.fnmatch_lines(["*LddAdvisoryWarning: ldd advisory breach: latency*"])
            assert state_of(ldd_dir, "latency") == "insufficient_data"
        elif number == 5:
            assert result.ret == 0, result.stdout.str()
            assert state_of(ldd_dir, "latency") == "load_bearing"
            result.stdout.fnmatch_lines(["*latency: insufficient_data -> load_bearing*"])
        else:
            assert result.ret == 1, result.stdout.str()
            result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])
    return results


def test_marker_declared_metric_earns_its_gate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    six_runs(pytester)
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert len(pairs) == 6
    assert pairs[0]["nodeid"] == "test_latency.py::test_latency"
    assert pairs[0]["predicted"] == pytest.approx(0.51)
    assert pairs[0]["observed"] == pytest.approx(0.512)
    assert pairs[0]["raw_observed"] == 512


def test_config_declared_metric_earns_its_gate(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(CONFIG_DECLARED)
    pytester.makepyfile(test_latency=CONFIG_TEST)
    six_runs(pytester)


def test_hook_declared_metric_earns_its_gate(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HOOK_CONFTEST)
    pytester.makepyfile(test_latency=HOOK_TEST)
    six_runs(pytester)


def test_xdist_records_the_same_data_as_a_serial_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(
        test_many="""
        import pytest
        from pytest_ldd import Observation

        @pytest.mark.metric("score", kind="bounded", description="share of cases solved", ge=0.5)
        @pytest.mark.parametrize("case", range(8))
        def test_case(case):
            yield Observation("score", case / 10, predicted=case / 10 + 0.01)
            yield Observation("score", case / 20)
        """
    )
    serial_dir = tmp_path / "serial"
    xdist_dir = tmp_path / "xdist"
    for _ in range(6):
        assert run(pytester, "--ldd", f"--ldd-dir={serial_dir}").ret in (0, 1)
        assert run(pytester, "--ldd", f"--ldd-dir={xdist_dir}", "-n", "2").ret in (0, 1)
    for name in ("metric_calibrations.jsonl", "observations.jsonl"):
        serial = strip_volatile(read_jsonl(serial_dir / name))
        parallel = strip_volatile(read_jsonl(xdist_dir / name))
        assert serial == parallel
        assert len(serial) == (48 if name.startswith("metric") else 96)
    # The figures agree; only the order in which workers' pairs reached the log (and
    # so the float rounding of the running sums) may differ.
    figures = ("state", "n_calibration_samples", "last_mae", "last_p95_error", "last_worst_error")
    serial_states = metrics_doc(serial_dir)["promotions"]
    xdist_states = metrics_doc(xdist_dir)["promotions"]
    assert len(serial_states) == len(xdist_states) == 1
    for key in figures:
        assert serial_states[0][key] == pytest.approx(xdist_states[0][key], abs=1e-12), key
    assert serial_states[0]["state"] == "load_bearing"


def test_four_workers_record_each_pair_once(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_many="""
        import pytest
        from pytest_ldd import Observation

        @pytest.mark.metric("score", kind="bounded", description="share of cases solved")
        @pytest.mark.parametrize("case", range(12))
        def test_case(case):
            yield Observation("score", case / 20, predicted=case / 20)
        """
    )
    serial_dir, xdist_dir = tmp_path / "serial", tmp_path / "xdist"
    assert run(pytester, "--ldd", f"--ldd-dir={serial_dir}").ret == 0
    assert run(pytester, "--ldd", f"--ldd-dir={xdist_dir}", "-n", "4").ret == 0
    for name in ("metric_calibrations.jsonl", "observations.jsonl"):
        serial = strip_volatile(read_jsonl(serial_dir / name))
        assert serial == strip_volatile(read_jsonl(xdist_dir / name))
        assert len(serial) == 12


def test_xdist_gates_fail_on_every_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST.replace("def test_latency", "def test_a"))
    pytester.makepyfile(test_other=MARKED_TEST.replace("def test_latency", "def test_b"))
    # Two tests, one pair each per session: n = 6 after the third session.
    for _ in range(3):
        assert run(pytester, "--ldd", "-n", "2").ret == 0
    assert state_of(pytester.path / ".ldd", "latency") == "load_bearing"
    result = run(pytester, "-n", "2")
    assert result.ret == 1
    result.assert_outcomes(failed=2)


def test_without_ldd_nothing_is_created(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    result = run(pytester)
    assert result.ret == 0
    assert not (pytester.path / ".ldd").exists()


def test_without_ldd_the_folder_is_byte_for_byte_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    for _ in range(5):
        assert run(pytester, "--ldd").ret == 0
    before = snapshot(pytester.path / ".ldd")
    result = run(pytester)
    # Gates still apply from the states on disk.
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])
    assert snapshot(pytester.path / ".ldd") == before


def test_demotion_after_predictions_start_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_latency="""
        import os
        import pytest
        from pytest_ldd import Observation

        @pytest.mark.metric(
            "latency", kind="positive", unit="ms", normalize_scale=1000,
            description="response latency of the toy handler", le=500,
        )
        def test_latency():
            predicted = float(os.environ.get("PREDICTED", "510"))
            yield Observation("latency", 512, predicted=predicted)
        """
    )
    ldd_dir = pytester.path / ".ldd"
    for _ in range(5):
        assert run(pytester, "--ldd").ret == 0
    assert state_of(ldd_dir, "latency") == "load_bearing"
    # Predictions now miss by 0.5 on the normalized scale: the window MAE drifts.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREDICTED", "12")
        outcomes = [run(pytester, "--ldd").ret for _ in range(5)]
    # Window MAE after each session: 0.085, 0.144, 0.189 (> 0.15: demoted), ...
    # While load-bearing at session start the gate fails; once demoted it stops failing.
    assert outcomes == [1, 1, 1, 0, 0]
    assert state_of(ldd_dir, "latency") == "drifting"
    demoted = metrics_doc(ldd_dir)["promotions"][0]
    assert demoted["demoted_at"] is not None
    result = run(pytester)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*ldd advisory breach: latency = 512 ms, limit le 500*"])


def ldd_section(result: pytest.RunResult) -> list[str]:
    """The lines of the "ldd" terminal section, without the separator lines."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.strip("= ") == "ldd")
    section = []
    for line in lines[start + 1 :]:
        if line.startswith("====="):
            break
        section.append(line)
    return section


def test_summary_lines(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    first = ldd_section(run(pytester, "--ldd"))
    assert first == [
        "metric   kind      v  state              n    MAE  gate    +obs  +pairs  breaches",
        "latency  positive  1  insufficient_data  1  0.002  le 500     1       1         1",
        "advisory breach: latency = 512 ms, limit le 500 (test_latency.py::test_latency)",
    ]
    for _ in range(3):
        run(pytester, "--ldd")
    fifth = ldd_section(run(pytester, "--ldd"))
    assert fifth == [
        "metric   kind      v  state                              n    MAE  gate    +obs  "
        "+pairs  breaches",
        "latency  positive  1  insufficient_data -> load_bearing  5  0.002  le 500     1  "
        "     1         1",
        "state changes:",
        "  latency: insufficient_data -> load_bearing",
        "advisory breach: latency = 512 ms, limit le 500 (test_latency.py::test_latency)",
    ]
    gated = ldd_section(run(pytester))
    assert gated == [
        "not recording (run with --ldd to log calibration pairs)",
        "metric   kind      v  state         n    MAE  gate    +obs  +pairs  breaches",
        "latency  positive  1  load_bearing  5  0.002  le 500     1       1         1",
        "gate failed: latency = 512 ms, limit le 500 (test_latency.py::test_latency)",
    ]


def test_no_summary_without_metrics(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = run(pytester)
    assert not any(line.strip("= ") == "ldd" for line in result.stdout.lines)
    result = run(pytester, "--ldd-summary=full")
    assert any(line.strip("= ") == "ldd" for line in result.stdout.lines)


def test_json_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    result = run(pytester, "--ldd", "--ldd-report=report.json")
    assert result.ret == 0
    doc = json.loads((pytester.path / "report.json").read_text())
    session = doc["session"]
    assert session["recording"] is True
    assert session["counts"] == {
        "tests": 1,
        "observations": 1,
        "pairs": 1,
        "gate_failures": 0,
        "advisory_breaches": 1,
        "inconclusive": 0,
    }
    (row,) = session["metrics"]
    assert row["name"] == "latency"
    assert row["kind"] == "positive"
    assert row["unit"] == "ms"
    assert row["version"] == 1
    assert row["state_before"] == "insufficient_data"
    assert row["state_after"] == "insufficient_data"
    assert row["n"] == 1
    assert row["mae"] == pytest.approx(0.002)
    assert row["gates"] == ["le 500"]
    assert row["observations"] == 1
    assert row["pairs"] == 1
    assert row["breaches"] == [
        {
            "nodeid": "test_latency.py::test_latency",
            "value": 512.0,
            "limit": "le 500",
            "enforced": False,
        }
    ]
    assert session["state_changes"] == []
    sessions = read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")
    assert [s["session_id"] for s in sessions] == [session["session_id"]]


def test_state_changes_are_reported_through_the_hook(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_ldd_state_changed(name, before, after):
            print(f"CHANGED {name} {before.state} {after.state} {after.is_load_bearing}")
        """
    )
    pytester.makepyfile(test_latency=MARKED_TEST)
    for _ in range(4):
        assert "CHANGED" not in run(pytester, "--ldd", "-s").stdout.str()
    result = run(pytester, "--ldd", "-s")
    result.stdout.fnmatch_lines(["*CHANGED latency insufficient_data load_bearing True"])


def test_a_killed_worker_loses_nothing_it_had_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_crash="""
        import os
        import signal
        import pytest

        SCORE = pytest.mark.metric("score", kind="bounded", description="share solved")

        @SCORE
        def test_a():
            yield 0.25

        @SCORE
        def test_b_crash():
            yield 0.5
            os.kill(os.getpid(), signal.SIGKILL)

        @SCORE
        def test_c():
            yield 0.75
        """
    )
    result = run(pytester, "--ldd", "-n", "1", "--max-worker-restart=1")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    observations = read_jsonl(pytester.path / ".ldd" / "observations.jsonl")
    # The crashed test never reported: its observation died with the worker.
    assert sorted(o["raw"] for o in observations) == [0.25, 0.75]


def test_a_version_bump_starts_advisory_even_without_ldd(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    for _ in range(5):
        assert run(pytester, "--ldd").ret == 0
    assert run(pytester).ret == 1
    # A pull request bumps the metric's version: a new instrument, advisory again.
    pytester.makepyfile(test_latency=MARKED_TEST.replace("le=500,", "le=500, version=2,"))
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*ldd advisory breach: latency = 512 ms, limit le 500*"])
    assert "load_bearing" not in "\n".join(ldd_section(result))


def test_config_and_marker_declare_the_same_default_scale(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.ldd.metrics.queue_depth]
        kind = "positive"
        description = "jobs in the queue"
        """
    )
    pytester.makepyfile(
        test_scale="""
        import pytest

        @pytest.mark.metric("queue_depth", kind="positive", description="jobs in the queue")
        def test_depth():
            yield 50
        """
    )
    result = run(pytester, "--ldd")
    assert result.ret == 0, result.stdout.str()
    (spec,) = metrics_doc(pytester.path / ".ldd")["specs"]
    assert spec["normalize_scale"] == 100.0


def test_observation_and_episode_hooks_fire(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_ldd_observation(item, observation):
            print(f"OBS {item.name} {observation.name} {observation.observed}")

        def pytest_ldd_episode(item, episode, gold, scores):
            print(f"EPISODE {episode.task_id} {scores['task_success'].value}")
        """
    )
    pytester.makepyfile(
        test_hooks="""
        from pytest_ldd import Episode

        def test_it():
            yield Episode("t1", output="a"), "a"
        """
    )
    pytester.makepyfile(test_latency=MARKED_TEST)
    result = run(pytester, "-s")
    result.stdout.fnmatch_lines(["*OBS test_latency latency 512*"])
    result.stdout.fnmatch_lines(["*OBS test_it task_success 1.0*", "*EPISODE t1 1.0*"])


def test_the_store_folder_comes_from_the_option_or_the_config(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.ldd]\ndir = "quality/ldd"\n')
    pytester.makepyfile(test_latency=MARKED_TEST)
    assert run(pytester, "--ldd").ret == 0
    assert (pytester.path / "quality" / "ldd" / "metrics.json").exists()
    assert not (pytester.path / ".ldd").exists()
    assert run(pytester, "--ldd", "--ldd-dir=elsewhere").ret == 0
    assert len(read_jsonl(pytester.path / "elsewhere" / "observations.jsonl")) == 1


def test_float_subclasses_travel_through_xdist(pytester: pytest.Pytester) -> None:
    # numpy.float64 is a float subclass; xdist's serializer takes plain types only.
    pytester.makepyfile(
        test_sub="""
        import pytest

        class Seconds(float):
            pass

        @pytest.mark.metric("lat", kind="positive", description="request latency")
        def test_it(ldd):
            ldd.observe("lat", Seconds(3.0), predicted=Seconds(2.0))
        """
    )
    result = run(pytester, "--ldd", "-n", "2")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=1)
    (pair,) = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert (pair["raw_predicted"], pair["raw_observed"]) == (2.0, 3.0)


def test_a_version_bump_under_xdist_is_registered_like_a_serial_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_latency=MARKED_TEST)
    assert run(pytester, "--ldd").ret == 0
    pytester.makepyfile(test_latency=MARKED_TEST.replace("le=500,", "le=500, version=2,"))
    assert run(pytester, "--ldd", "-n", "2").ret == 0
    (spec,) = metrics_doc(pytester.path / ".ldd")["specs"]
    assert spec["version"] == 2
    (state,) = metrics_doc(pytester.path / ".ldd")["promotions"]
    assert (state["version"], state["n_calibration_samples"]) == (2, 1)


def test_an_infinite_history_value_travels_through_xdist(pytester: pytest.Pytester) -> None:
    # A positive metric takes +inf; a worker's payload carries it as JSON all the same.
    pytester.makepyfile(
        test_inf="""
        import pytest

        @pytest.mark.metric("lat", kind="positive", unit="ms", normalize_scale=1000,
                            description="latency of the endpoint", predictor="history_mean")
        def test_inf(ldd):
            ldd.observe("lat", float("inf"))

        @pytest.mark.metric("lat")
        def test_fails():
            assert False
        """
    )
    result = run(pytester, "-n", "1")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=1, failed=1)
    # The history accepts what the metric accepts: every session keeps its records.
    for session in (1, 2):
        recorded = run(pytester, "--ldd", "-n", "1")
        assert "INTERNALERROR" not in recorded.stdout.str() + recorded.stderr.str()
        recorded.assert_outcomes(passed=1, failed=1)
        assert len(read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")) == session
    (state,) = metrics_doc(pytester.path / ".ldd")["promotions"]
    assert state["history"] == {"test_inf.py::test_inf": [1e300, 1e300]}
    (pair,) = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert (pair["predicted"], pair["observed"], pair["raw_observed"]) == (1.0, 1.0, "inf")
    assert state["n_calibration_samples"] == 1
