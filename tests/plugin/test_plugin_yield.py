"""Generator tests: collection, the yield protocol, fixtures, parametrize, classes."""

from __future__ import annotations

import pytest
from plugin_support import read_jsonl, run

SCORE = '@pytest.mark.metric("score", kind="bounded", description="share of cases solved")\n'


def test_yield_tests_with_parametrize_fixtures_classes_and_k(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_gen=f"""
        import pytest
        from pytest_ldd import Observation

        @pytest.fixture
        def resource():
            yield {{"value": 0.25}}

        {SCORE}
        @pytest.mark.parametrize("x", [0.1, 0.2])
        def test_param(x, resource):
            yield Observation("score", x + resource["value"])

        class TestGroup:
            {SCORE.strip()}
            def test_method(self, resource):
                yield resource["value"]

            @staticmethod
            {SCORE.strip()}
            def test_static():
                yield 0.5

        {SCORE}
        @pytest.mark.slow
        def test_marked():
            yield 0.75
        """
    )
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow tests\n")
    result = run(pytester, "--ldd", "-v")
    result.assert_outcomes(passed=5)
    observations = read_jsonl(pytester.path / ".ldd" / "observations.jsonl")
    assert sorted(o["raw"] for o in observations) == [0.25, 0.35, 0.45, 0.5, 0.75]
    assert {o["nodeid"] for o in observations} == {
        "test_gen.py::test_param[0.1]",
        "test_gen.py::test_param[0.2]",
        "test_gen.py::TestGroup::test_method",
        "test_gen.py::TestGroup::test_static",
        "test_gen.py::test_marked",
    }
    result = run(pytester, "-k", "param", "-m", "not slow")
    result.assert_outcomes(passed=2, deselected=3)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [("'text'", "str"), ("{'a': 1}", "dict"), ("None", "NoneType")],
)
def test_yielding_anything_else_fails_naming_the_type(
    pytester: pytest.Pytester, value: str, type_name: str
) -> None:
    pytester.makepyfile(
        test_bad=f"""
        import pytest

        {SCORE}
        def test_bad():
            yield {value}
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*test_bad.py::test_bad yielded a {type_name}*"])


def test_bare_number_needs_exactly_one_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bare="""
        def test_bare():
            yield 0.5
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*yielded a bare number (0.5) but has 0 metric markers*"])


def test_raising_after_yielding_keeps_the_observations(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_raise=f"""
        import pytest

        {SCORE}
        def test_raise():
            yield 0.5
            raise RuntimeError("boom")
        """
    )
    result = run(pytester, "--ldd")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: boom*"])
    observations = read_jsonl(pytester.path / ".ldd" / "observations.jsonl")
    assert [o["raw"] for o in observations] == [0.5]


def test_unknown_metric_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_unknown="""
        from pytest_ldd import Observation

        def test_unknown():
            yield Observation("x", 1.0)
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*unknown metric 'x': declare it with @pytest.mark.metric(...) "
            "or [[]tool.ldd.metrics.x[]]*"
        ]
    )


def test_invalid_observation_fails_the_test_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_invalid=f"""
        import pytest

        {SCORE}
        def test_invalid():
            yield 1.5
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*metric 'score'*1.5*"])


def test_ldd_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fixture=f"""
        import pytest

        {SCORE}
        def test_observe(ldd):
            ldd.observe("score", 0.5, predicted=0.5)
            assert ldd.state("score").state == "insufficient_data"
            assert ldd.is_load_bearing("score") is False
            with ldd.gate("score"):
                assert 0.5 > 0.9, "score too low"
            # the advisory gate swallowed the assertion: we get here
            print("AFTER GATE")
        """
    )
    result = run(pytester, "--ldd", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*AFTER GATE*"])
    result.stdout.fnmatch_lines(["*ldd advisory breach: score: score too low*"])
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    assert [(p["predicted"], p["observed"]) for p in pairs] == [(0.5, 0.5)]


def test_ldd_gate_enforced_once_load_bearing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_gate=f"""
        import pytest

        {SCORE}
        def test_gate(ldd):
            ldd.observe("score", 0.5, predicted=0.5)
            with ldd.gate("score"):
                assert 0.5 > 0.9, "score too low"
        """
    )
    for _ in range(5):
        assert run(pytester, "--ldd").ret == 0
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: score too low*"])


def test_history_mean_predictor_uses_earlier_sessions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_pred="""
        import os
        import pytest

        @pytest.mark.metric(
            "build_seconds", kind="positive", unit="s", normalize_scale=100,
            description="wall time of the build step", predictor="history_mean",
        )
        def test_build():
            yield float(os.environ["SECONDS_TAKEN"])
        """
    )
    with pytest.MonkeyPatch.context() as mp:
        for seconds in ("10", "20", "30"):
            mp.setenv("SECONDS_TAKEN", seconds)
            assert run(pytester, "--ldd").ret == 0
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    # No history on the first run: no pair.  Then the mean of the earlier values.
    assert [(p["raw_predicted"], p["raw_observed"]) for p in pairs] == [(10.0, 20.0), (15.0, 30.0)]


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
        def test_plain():
            assert True
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:ldd", "--ldd")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*unrecognized arguments: --ldd*"])
