"""The plugin next to pytest's own features and popular plugins.

Gates hold wherever a value is observed, declarations do not depend on test
order, the end of a session always happens, each test counts once, and the
plugin's own failures are named errors.  Each case runs serially and, where
xdist applies, under ``-n 2``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_support import read_jsonl, run, snapshot, state_of

from pytest_ldd.cli import main as ldd_main

SERIAL_AND_XDIST = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

BUILD_METRIC = """
[tool.ldd.metrics.build_s]
kind = "positive"
unit = "s"
normalize_scale = 1000
description = "wall time of the build step"
le = 200
"""

GATE_FAILURE = "ldd gate failed: build_s = 250 s, limit le 200 (load-bearing: n=5, MAE=0.000)"


def load_bearing_build(pytester: pytest.Pytester) -> None:
    """A project whose ``build_s`` metric (gate le 200) is load-bearing."""
    pytester.makepyprojecttoml(BUILD_METRIC)
    for _ in range(5):
        code = ldd_main(
            [
                "metric",
                "calibrate",
                "--project",
                str(pytester.path),
                "--name",
                "build_s",
                "--predicted",
                "100",
                "--observed",
                "100",
            ]
        )
        assert code == 0
    assert state_of(pytester.path / ".ldd", "build_s") == "load_bearing"


# -- item 1: gates wherever a value is observed --------------------------------------


@SERIAL_AND_XDIST
def test_a_breach_in_fixture_teardown_is_a_teardown_error(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(
        test_build="""
        import pytest

        @pytest.fixture
        def build(ldd):
            yield
            ldd.observe("build_s", 250)

        def test_one(build):
            pass

        def test_two():
            pass
        """
    )
    result = run(pytester, *workers)
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_one*", f"*{GATE_FAILURE}*"])


@SERIAL_AND_XDIST
def test_a_breach_in_fixture_setup_is_a_setup_error(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(
        test_build="""
        import pytest

        @pytest.fixture
        def build(ldd):
            ldd.observe("build_s", 250)

        def test_one(build):
            raise AssertionError("never runs")
        """
    )
    result = run(pytester, *workers)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_one*", f"*{GATE_FAILURE}*"])
    result.stdout.no_fnmatch_line("*never runs*")


@SERIAL_AND_XDIST
def test_a_breach_in_a_unittest_method_fails_it(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(
        test_build="""
        import unittest
        import pytest

        class TestBuild(unittest.TestCase):
            @pytest.fixture(autouse=True)
            def _ldd(self, ldd):
                self.ldd = ldd

            def test_slow(self):
                self.ldd.observe("build_s", 250)

            def test_fast(self):
                self.ldd.observe("build_s", 150)
        """
    )
    result = run(pytester, *workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_build.py::TestBuild::test_slow*"])
    result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])


@SERIAL_AND_XDIST
def test_a_breach_in_a_yield_test_fails_it(pytester: pytest.Pytester, workers: list[str]) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(
        test_build="""
        from pytest_ldd import Observation

        def test_build():
            yield Observation("build_s", 250)
        """
    )
    result = run(pytester, *workers)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])


@SERIAL_AND_XDIST
@pytest.mark.parametrize("scope", ["module", "class", "session"])
def test_a_breach_in_a_wider_fixture_fails_the_test_running(
    pytester: pytest.Pytester, workers: list[str], scope: str
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(
        test_build=f"""
        import pytest

        @pytest.fixture(scope="{scope}")
        def build(ldd_session):
            ldd_session.observe("build_s", 150)
            yield
            ldd_session.observe("build_s", 250)

        class TestBuild:
            def test_one(self, build):
                pass

            def test_last(self, build):
                pass
        """
    )
    # Each xdist worker has its own fixture instances: one file, one worker.
    result = run(pytester, *workers, *(["--dist=loadfile"] if workers else []))
    # Torn down with the last test that used it: its teardown holds the breach.
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of TestBuild.test_last*", f"*{GATE_FAILURE}*"]
    )


def test_wider_fixture_observations_belong_to_the_test_running(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(
        test_build="""
        import pytest

        @pytest.fixture(scope="module")
        def build(ldd_session):
            ldd_session.observe("build_s", 10, predicted=10)
            yield
            ldd_session.observe("build_s", 20, predicted=20)

        def test_one(build):
            pass

        def test_two(build):
            pass
        """
    )
    assert run(pytester, "--ldd").ret == 0
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert [(p["raw_observed"], p["nodeid"]) for p in pairs] == [
        (10, "test_build.py::test_one"),
        (20, "test_build.py::test_two"),
    ]


# -- #13 item 5: a fixture kept after its test ----------------------------------------


def test_a_fixture_kept_after_its_test_is_a_named_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(
        test_kept="""
        KEPT = []

        def test_keeps(ldd):
            KEPT.append(ldd)

        def test_uses_it():
            KEPT[0].observe("build_s", 10)
        """
    )
    result = run(pytester, "--ldd")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*the ldd fixture of test_kept.py::test_keeps was used after that test ended*"]
    )
    assert read_jsonl(pytester.path / ".ldd" / "observations.jsonl") == []


# -- item 2: declarations before references ------------------------------------------

DECLARING = """
import pytest

@pytest.mark.metric("lat", kind="positive", unit="ms", normalize_scale=1000,
                    description="request latency")
def test_declares(ldd):
    ldd.observe("lat", 100)
"""

REFERENCING = """
import pytest

@pytest.mark.metric("lat", le=500)
def test_references(ldd):
    ldd.observe("lat", 120)
"""


@SERIAL_AND_XDIST
def test_a_reference_may_come_before_its_declaration(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    # test_a sorts first; and the node ids are given reference first.
    pytester.makepyfile(test_a_ref=REFERENCING, test_z_decl=DECLARING)
    for args in (
        [],
        ["test_a_ref.py::test_references", "test_z_decl.py::test_declares"],
    ):
        result = run(pytester, "--ldd", *workers, *args)
        assert result.ret == 0, result.stdout.str() + result.stderr.str()
        result.assert_outcomes(passed=2)


def test_a_reference_to_a_metric_nobody_collected_declares_says_where_to_declare(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a_ref=REFERENCING, test_z_decl=DECLARING)
    result = run(pytester, "test_a_ref.py")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*test_a_ref.py::test_references: metric 'lat' is not declared: no test "
            "collected in this session declares it*[tool.ldd.metrics.lat]*"
        ]
    )


def test_a_declaration_kept_in_the_store_serves_a_later_selection(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a_ref=REFERENCING, test_z_decl=DECLARING)
    assert run(pytester, "--ldd").ret == 0
    result = run(pytester, "--ldd", "test_a_ref.py")
    result.assert_outcomes(passed=1)


# -- item 3: the end of a session always happens --------------------------------------

FIVE_PAIRS_THEN_STOP = """
import pytest

@pytest.mark.metric("build_s", kind="positive", unit="s", normalize_scale=1000,
                    description="wall time of the build step")
@pytest.mark.parametrize("n", range(5))
def test_build(ldd, n):
    ldd.observe("build_s", 100, predicted=100)

def test_stop():
    {stop}

def test_after():
    pass
"""


def last_session(pytester: pytest.Pytester) -> dict[str, object]:
    sessions = read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")
    assert sessions, "no session record"
    return sessions[-1]


@pytest.mark.parametrize(
    ("stop", "args", "workers"),
    [
        ("assert False", ["-x"], []),
        ("assert False", ["-x"], ["-n", "2"]),
        ("assert False", ["--sw"], []),
        ("raise KeyboardInterrupt", [], []),
    ],
    ids=["-x", "-x -n 2", "--sw", "ctrl-c"],
)
def test_a_session_stopped_early_still_ends(
    pytester: pytest.Pytester, stop: str, args: list[str], workers: list[str]
) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop=stop))
    pytester.makeconftest(
        """
        def pytest_ldd_state_changed(name, before, after):
            print(f"STATE CHANGED {name} {after.state}")
        """
    )
    # --sw is a feature of the cache provider, which run() turns off.
    plugins = ["-p", "no:harvest"] if "--sw" in args else ["-p", "no:cacheprovider"]
    # File order (no pytest-randomly): the session stops at its sixth test.
    plugins += ["-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"]
    result = pytester.runpytest(
        *plugins, "--ldd", "--ldd-report=r.json", *args, *workers, no_reraise_ctrlc=True
    )
    assert result.ret in (1, 2), result.stdout.str()
    result.stdout.fnmatch_lines(["*= ldd =*", "*build_s*"])
    if not workers:
        result.stdout.fnmatch_lines(["*STATE CHANGED build_s load_bearing*"])
    assert state_of(pytester.path / ".ldd", "build_s") == "load_bearing"
    session = last_session(pytester)
    assert session["interrupted"] is True
    assert session["counts"]["pairs"] == 5  # type: ignore[index]
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["session"]["interrupted"] is True


def test_a_whole_session_is_not_marked_interrupted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    assert run(pytester, "--ldd").ret == 0
    assert last_session(pytester)["interrupted"] is False


# -- item 4: each test counted once (pytest-rerunfailures) ----------------------------

FLAKY = """
import pytest
from pathlib import Path

@pytest.mark.metric("build_s", kind="positive", unit="s", normalize_scale=1000,
                    description="wall time of the build step")
def test_flaky(ldd, tmp_path_factory):
    marker = Path(__file__).with_name("attempts")
    attempt = int(marker.read_text()) + 1 if marker.exists() else 1
    marker.write_text(str(attempt))
    ldd.observe("build_s", 100 * attempt, predicted=100 * attempt)
    assert attempt == 3, f"attempt {attempt}"

def test_steady(ldd):
    ldd.observe("build_s", 50, predicted=50)
"""


@SERIAL_AND_XDIST
def test_only_the_final_attempt_of_a_rerun_test_is_recorded(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_flaky=FLAKY)
    result = run(pytester, "--ldd", "--reruns", "2", *workers)
    assert result.parseoutcomes() == {"passed": 2, "rerun": 2}
    ldd_dir = pytester.path / ".ldd"
    pairs = read_jsonl(ldd_dir / "metric_calibrations.jsonl")
    assert sorted(p["raw_observed"] for p in pairs) == [50, 300]
    assert len(read_jsonl(ldd_dir / "observations.jsonl")) == 2
    counts = last_session(pytester)["counts"]
    assert counts["tests"] == 2  # type: ignore[index]
    assert counts["pairs"] == 2  # type: ignore[index]


# -- item 5: collect-only writes nothing --------------------------------------------


def test_collect_only_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    assert run(pytester, "--ldd").ret == 0
    before = snapshot(pytester.path / ".ldd")
    for flag in ("--collect-only", "--co"):
        result = run(pytester, "--ldd", flag, "--ldd-report=r.json")
        assert result.ret == 0
        assert snapshot(pytester.path / ".ldd") == before
        assert not (pytester.path / "r.json").exists()


def test_collect_only_creates_no_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    assert run(pytester, "--ldd", "--co").ret == 0
    assert not (pytester.path / ".ldd").exists()


# -- #13 item 12: report targets that cannot be written -------------------------------


@pytest.mark.parametrize("target", ["folder", "file/report.json"], ids=["a folder", "file parent"])
@pytest.mark.parametrize("option", ["--ldd-report", "--ldd-html"])
def test_an_unwritable_report_target_is_a_named_error(
    pytester: pytest.Pytester, option: str, target: str
) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    (pytester.path / "folder").mkdir()
    (pytester.path / "file").write_text("not a folder")
    result = run(pytester, "--ldd", f"{option}={target}")
    assert result.ret == 4
    output = result.stdout.str()
    assert "INTERNALERROR" not in output + result.stderr.str()
    assert "Traceback" not in output + result.stderr.str()
    result.stdout.fnmatch_lines(
        ["*= ldd =*", "*build_s*", f"*pytest-ldd: {option}: cannot write *{target}*"]
    )
    # The session itself was recorded all the same.
    assert last_session(pytester)["counts"]["pairs"] == 5  # type: ignore[index]


# -- #13 item 11: store warnings under warnings-as-errors -----------------------------


@pytest.mark.parametrize(
    "how", [["-W", "error"], ["-o", "filterwarnings=error"]], ids=["-W error", "filterwarnings"]
)
def test_a_torn_line_under_warnings_as_errors_is_a_named_session_error(
    pytester: pytest.Pytester, how: list[str]
) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    assert run(pytester, "--ldd").ret == 0
    ldd_dir = pytester.path / ".ldd"
    with (ldd_dir / "metric_calibrations.jsonl").open("a") as log:
        log.write('{"metric_name": "build_s", "metric_ver')
    before = len(read_jsonl(ldd_dir / "observations.jsonl"))
    result = run(pytester, "--ldd", *how)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert result.ret == 4, output
    result.stderr.fnmatch_lines(["*pytest-ldd: LddWarning: *metric_calibrations.jsonl*"])
    # The records of the tests that ran are kept.
    assert len(read_jsonl(ldd_dir / "observations.jsonl")) == before + 5
    assert len(read_jsonl(ldd_dir / "sessions.jsonl")) == 2


def test_a_torn_line_without_warnings_as_errors_is_a_warning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_stop=FIVE_PAIRS_THEN_STOP.format(stop="pass"))
    assert run(pytester, "--ldd").ret == 0
    with (pytester.path / ".ldd" / "metric_calibrations.jsonl").open("a") as log:
        log.write('{"metric_name": "build_s", "metric_ver')
    result = run(pytester, "--ldd", "-W", "default")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*LddWarning*metric_calibrations.jsonl*"])


# -- #13 item 8: --ldd-dir spelled as two arguments ----------------------------------


def test_ldd_dir_in_two_arguments_that_moves_the_rootdir_is_refused(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(
        test_build="""
        def test_build(ldd):
            ldd.observe("build_s", 10, predicted=10)
        """
    )
    store = tmp_path / "elsewhere" / "store"
    store.mkdir(parents=True)
    result = run(pytester, "--ldd", "--ldd-dir", str(store))
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [f"*pytest-ldd: --ldd-dir {store}: pytest took * for a test path*--ldd-dir={store}*"]
    )
    result = run(pytester, "--ldd", f"--ldd-dir={store}")
    assert result.ret == 0, result.stdout.str()
    assert len(read_jsonl(store / "metric_calibrations.jsonl")) == 1


def test_ldd_dir_in_two_arguments_is_fine_where_it_moves_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(
        test_build="""
        def test_build(ldd):
            ldd.observe("build_s", 10, predicted=10)
        """
    )
    result = run(pytester, "--ldd", "--ldd-dir", "store")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert len(read_jsonl(pytester.path / "store" / "metric_calibrations.jsonl")) == 1


# -- item 10: what a session that does not use pytest-ldd imports ----------------------

MODULES_AT_THE_END = """
import sys

def pytest_unconfigure():
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_ldd"))
    print("LOADED", " ".join(loaded))
"""

#: What loading the plugin may cost a session that does not use it.
CHEAP = {
    "pytest_ldd",
    "pytest_ldd.errors",
    # The real clocks, taken as the plugin loads (before a test can fake them).
    "pytest_ldd.model",
    "pytest_ldd.model.clock",
    "pytest_ldd.plugin",
    "pytest_ldd.plugin.hookspecs",
    "pytest_ldd.plugin.options",
    "pytest_ldd.plugin.session",
    "pytest_ldd.plugin.stash",
    "pytest_ldd.plugin.yield_tests",
}


def loaded_modules(result: pytest.RunResult) -> set[str]:
    for line in result.stdout.lines:
        if line.startswith("LOADED"):
            return set(line.split()[1:])
    raise AssertionError(result.stdout.str())


def test_a_session_that_does_not_use_the_plugin_imports_next_to_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(MODULES_AT_THE_END)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\naddopts = '-ra'\n")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert result.ret == 0
    assert loaded_modules(result) <= CHEAP


def test_a_session_that_uses_the_plugin_starts_it(pytester: pytest.Pytester) -> None:
    load_bearing_build(pytester)
    pytester.makeconftest(MODULES_AT_THE_END)
    pytester.makepyfile(test_plain="def test_slow(ldd):\n    ldd.observe('build_s', 250)\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])
    assert "pytest_ldd.calibration.registry" in loaded_modules(result)


# -- item 8: generator methods of unittest.TestCase ----------------------------------

UNITTEST_GENERATOR = """
import unittest
from pytest_ldd import Observation

class TestBuild(unittest.TestCase):
    def test_build(self):
        yield Observation("build_s", 100, predicted=100)
        print("AFTER THE YIELD")
        yield Observation("build_s", {second}, predicted=100)
"""


@SERIAL_AND_XDIST
def test_a_unittest_generator_method_runs_to_its_end(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_build=UNITTEST_GENERATOR.format(second=120))
    result = run(pytester, "--ldd", "-s", *workers)
    result.assert_outcomes(passed=1)
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert [p["raw_observed"] for p in pairs] == [100, 120]
    if not workers:
        result.stdout.fnmatch_lines(["*AFTER THE YIELD*"])


@SERIAL_AND_XDIST
def test_a_unittest_generator_method_is_gated(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(test_build=UNITTEST_GENERATOR.format(second=250))
    result = run(pytester, *workers)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])


# -- item 9: the off switch -----------------------------------------------------------

USES_EVERYTHING = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric("build_s", le=200)
def test_yields():
    yield Observation("build_s", 250)

def test_fixture(ldd):
    ldd.observe("build_s", 250)
    with ldd.gate("build_s"):
        assert False, "gated"
    assert ldd.is_load_bearing("build_s") is False

@pytest.fixture(scope="module")
def shared(ldd_session):
    ldd_session.observe("build_s", 250)

def test_shared(shared):
    pass
"""


@SERIAL_AND_XDIST
def test_ldd_off_keeps_a_project_runnable_and_touches_nothing(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    load_bearing_build(pytester)
    pytester.makepyfile(test_all=USES_EVERYTHING)
    before = snapshot(pytester.path / ".ldd")
    result = run(pytester, "--strict-markers", "--ldd", "--ldd-off", *workers)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    assert snapshot(pytester.path / ".ldd") == before
    # And without the switch the same project fails its load-bearing gates.
    assert run(pytester, "--strict-markers", *workers).ret == 1


# -- item 6: Hypothesis ----------------------------------------------------------------

GIVEN = """
import pytest
from hypothesis import given, settings, strategies as st
from pytest_ldd import Observation

@settings(database=None, max_examples=30)
@given(st.integers(0, 100))
def test_yields(x):
    yield Observation("build_s", x, predicted=x)

@settings(database=None, max_examples=30)
@given(x=st.integers(0, 100))
def test_fixture(ldd_session, x):
    ldd_session.observe("build_s", x, predicted=x)
"""

GIVEN_FAILING = """
from hypothesis import given, settings, strategies as st

@settings(database=None, max_examples=200)
@given(st.integers(0, 100))
def test_fails(ldd_session, x):
    ldd_session.observe("build_s", x, predicted=x)
    assert x < 50
"""


@SERIAL_AND_XDIST
def test_a_given_test_records_one_example_per_run(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_given=GIVEN)
    result = run(pytester, "--ldd", *workers)
    result.assert_outcomes(passed=2)
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert sorted(p["nodeid"] for p in pairs) == [
        "test_given.py::test_fixture",
        "test_given.py::test_yields",
    ]


@SERIAL_AND_XDIST
def test_a_failing_given_test_records_its_failing_example(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_given=GIVEN_FAILING)
    result = run(pytester, "--ldd", *workers)
    result.assert_outcomes(failed=1)
    observations = read_jsonl(pytester.path / ".ldd" / "observations.jsonl")
    # The shrunk failing example, once.
    assert [o["raw"] for o in observations] == [50]


# -- item 7: async generator tests ---------------------------------------------------


@SERIAL_AND_XDIST
def test_an_async_generator_test_is_refused_at_collection(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(
        test_async="""
        from pytest_ldd import Observation

        async def test_agen():
            yield Observation("build_s", 1)

        def test_plain():
            pass
        """
    )
    result = run(pytester, *workers)
    # A collection error: serially the session is interrupted, xdist reports it failed.
    assert result.ret == (1 if workers else 2)
    result.stdout.fnmatch_lines(
        ["*test_async.py::test_agen is an async generator: pytest-ldd runs generator tests*"]
    )
    assert "xfail" not in result.stdout.str()


# -- JUnit XML properties --------------------------------------------------------------


@SERIAL_AND_XDIST
def test_junit_properties_switch(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(
        BUILD_METRIC + "\n[tool.pytest.ini_options]\nldd_junit_properties = true\n"
    )
    pytester.makepyfile(
        test_build="""
        from pytest_ldd import Observation

        def test_fixture(ldd):
            ldd.observe("build_s", 120, predicted=110)

        def test_yields():
            yield Observation("build_s", 130)
        """
    )
    result = run(pytester, "--junitxml=report.xml", *workers)
    assert result.ret == 0
    import xml.etree.ElementTree as ET

    cases = ET.parse(pytester.path / "report.xml").getroot().iter("testcase")
    found = {
        case.get("name"): [(p.get("name"), p.get("value")) for p in case.iter("property")]
        for case in cases
    }
    assert found == {
        "test_fixture": [("ldd.build_s", "120"), ("ldd.build_s.predicted", "110")],
        "test_yields": [("ldd.build_s", "130")],
    }


def test_no_junit_properties_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_build="def test_fixture(ldd):\n    ldd.observe('build_s', 120)\n")
    assert run(pytester, "--junitxml=report.xml").ret == 0
    assert "<property" not in (pytester.path / "report.xml").read_text()


# -- a second store below the first ---------------------------------------------------


def test_a_new_store_below_an_existing_one_is_warned_about(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = "def test_fixture(ldd):\n    ldd.observe('build_s', 120, predicted=100)\n"
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_top=test)
    assert run(pytester, "--ldd").ret == 0
    sub = pytester.mkdir("sub")
    (sub / "test_sub.py").write_text(test)
    (sub / "pyproject.toml").write_text(BUILD_METRIC)  # its own rootdir, no pytest config
    monkeypatch.chdir(sub)
    result = run(pytester, "--ldd", "-W", "default")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [f"*LddWarning: pytest-ldd creates a new store {sub / '.ldd'} below the store*"]
    )
    # Only when it is new: the next session says nothing.
    result = run(pytester, "--ldd", "-W", "default")
    assert "creates a new store" not in result.stdout.str()


GIVEN_LDD = """
from hypothesis import given, settings, strategies as st

@settings(database=None, max_examples=20)
@given(x=st.integers(0, 100))
def test_ldd(ldd, x):
    ldd.observe("build_s", x, predicted=x)

@settings(database=None, max_examples=20)
@given(x=st.integers(0, 100))
def test_ldd_and_another(ldd, tmp_path, x):
    ldd.observe("build_s", x, predicted=x)
"""


def test_the_ldd_fixture_passes_the_function_scoped_fixture_health_check(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(BUILD_METRIC)
    pytester.makepyfile(test_given=GIVEN_LDD)
    result = run(pytester, "--ldd")
    # ldd alone is exempt (it is reset per example); another function-scoped
    # fixture still fails the check, naming that fixture.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FailedHealthCheck*test_ldd_and_another*function-scoped*"])
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert [p["nodeid"] for p in pairs] == ["test_given.py::test_ldd"]
