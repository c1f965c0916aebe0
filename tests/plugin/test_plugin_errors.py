"""Usage errors stop the run with exit status 4 and one clear line; never INTERNALERROR."""

from __future__ import annotations

import pytest
from plugin_support import PROJECT_ARGS, run, snapshot

TEST_TEMPLATE = """
import pytest

@pytest.mark.metric({marker})
def test_it():
    yield 0.5
"""


def check_usage_error(
    result: pytest.RunResult, message: str, *, before_tests: bool = True
) -> None:
    __tracebackhide__ = True
    assert result.ret == 4, result.stdout.str() + result.stderr.str()
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert message in output, output
    if before_tests:
        assert "passed" not in result.stdout.str()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            '"score", kind="bounded", description="share solved", colour="red"',
            "test_it.py::test_it: unknown keyword 'colour' in @pytest.mark.metric('score')",
        ),
        (
            '"score", kind="boundless", description="share solved"',
            "test_it.py::test_it: keyword 'kind' must be one of bounded, positive, signed "
            "(got 'boundless')",
        ),
        (
            '"score", kind="bounded", description="share solved", le="high"',
            "gate 'le' must be a number (got 'high')",
        ),
        (
            '"score", kind="bounded", description="the score I want"',
            "i want",
        ),
        (
            '"nobody"',
            "test_it.py::test_it: metric 'nobody' is not declared",
        ),
        (
            '"score", kind="bounded", description="share solved", predictor="oracle"',
            "keyword 'predictor' of @pytest.mark.metric('score') must be 'history_mean' "
            "(got 'oracle')",
        ),
        ("", "@pytest.mark.metric takes exactly one positional argument"),
    ],
)
def test_bad_marker(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(test_it=TEST_TEMPLATE.format(marker=marker))
    check_usage_error(run(pytester), message)


def test_marker_contradicting_the_registered_spec(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.ldd.metrics.latency]
        kind = "positive"
        unit = "ms"
        description = "response latency"
        """
    )
    pytester.makepyfile(test_it=TEST_TEMPLATE.format(marker='"latency", unit="s"'))
    check_usage_error(
        run(pytester),
        "test_it.py::test_it: keyword 'unit' of @pytest.mark.metric('latency') contradicts",
    )


def test_marker_redeclaring_with_a_different_spec(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=TEST_TEMPLATE.format(marker='"score", kind="bounded", description="share solved"')
    )
    assert run(pytester, "--ldd").ret == 0
    before = snapshot(pytester.path / ".ldd")
    pytester.makepyfile(
        test_it=TEST_TEMPLATE.format(marker='"score", kind="bounded", description="other text"')
    )
    check_usage_error(run(pytester, "--ldd"), "'description'")
    assert snapshot(pytester.path / ".ldd") == before


def test_unknown_config_key(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.ldd.calibration]
        max_mea = 0.1
        """
    )
    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    check_usage_error(run(pytester), "max_mea")


def test_corrupt_store(pytester: pytest.Pytester) -> None:
    ldd_dir = pytester.path / ".ldd"
    ldd_dir.mkdir()
    (ldd_dir / "metrics.json").write_text("{not json")
    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    before = snapshot(ldd_dir)
    check_usage_error(run(pytester, "--ldd"), "metrics.json")
    assert snapshot(ldd_dir) == before


def test_corrupt_store_in_a_subprocess_prints_one_line(pytester: pytest.Pytester) -> None:
    ldd_dir = pytester.path / ".ldd"
    ldd_dir.mkdir()
    (ldd_dir / "metrics.json").write_text("[]")
    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    result = pytester.runpytest_subprocess(*PROJECT_ARGS, "--ldd")
    assert result.ret == 4
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, errors
    assert errors[0].startswith("ERROR: pytest-ldd:")
    assert "metrics.json" in errors[0]


def test_bad_marker_under_xdist_is_a_usage_error_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=TEST_TEMPLATE.format(
            marker='"score", kind="bounded", description="share solved", colour="red"'
        )
    )
    check_usage_error(
        run(pytester, "-n", "2"),
        "test_it.py::test_it: unknown keyword 'colour' in @pytest.mark.metric('score')",
    )


def test_store_corrupted_during_the_session_stops_cleanly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it="""
        import pathlib
        import pytest

        @pytest.mark.metric("score", kind="bounded", description="share solved")
        def test_a():
            yield 0.5

        def test_corrupt():
            pathlib.Path(".ldd", "metrics.json").write_text("{broken")
        """
    )
    result = run(pytester, "--ldd")
    check_usage_error(result, "metrics.json is not valid JSON", before_tests=False)


def test_corpus_gate_on_an_unknown_aggregate(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.ldd.gates]
        task_sucess = {ge = 0.8}
        """
    )
    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    check_usage_error(
        run(pytester),
        "[tool.ldd.gates] task_sucess: corpus gates apply to the session aggregates "
        "task_success, cost_per_success (got 'task_sucess')",
    )


def test_gate_errors_name_the_test_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=TEST_TEMPLATE.format(
            marker='"score", kind="bounded", description="share solved", le="high"'
        )
    )
    result = run(pytester)
    check_usage_error(result, "test_it.py::test_it: metric 'score': gate 'le' must be a number")
    assert (result.stdout.str() + result.stderr.str()).count("test_it.py::test_it") == 1


def test_an_invalid_observation_is_reported_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.metric("score", kind="bounded", description="share solved")
        def test_it(ldd):
            ldd.observe("score", 1.5)
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    assert "During handling of the above exception" not in result.stdout.str()


def test_corrupt_histogram_in_the_store_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=TEST_TEMPLATE.format(marker='"score", kind="bounded", description="share solved"')
    )
    pytester.makepyfile(
        test_pairs="""
        from pytest_ldd import Observation

        def test_pair():
            yield Observation("score", 0.5, predicted=0.5)
        """
    )
    assert run(pytester, "--ldd").ret == 0
    metrics = pytester.path / ".ldd" / "metrics.json"
    text = metrics.read_text()
    assert '"dense"' in text
    start = text.index('"dense": "') + len('"dense": "')
    metrics.write_text(text[:start] + "AAAA" + text[text.index('"', start) :])
    before = snapshot(pytester.path / ".ldd")
    check_usage_error(run(pytester), "metrics.json")
    assert snapshot(pytester.path / ".ldd") == before
