"""A recording session under the faults a fleet meets: hostile names, forked children,
conflicting declarations, histories at the edge of the float range, thousands of
metrics.  Each is a named error or a correct record, never a traceback or a second
copy of the session."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from plugin_support import metrics_doc, read_jsonl, run

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
    assert "\x1b[2J" not in output and "\x07" not in output and "\u202e" not in output
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


def test_the_cli_escapes_an_unknown_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_ldd import cli

    (tmp_path / "pyproject.toml").write_text(
        '[tool.ldd.metrics.acc]\nkind = "bounded"\ndescription = "share of answers right"\n'
    )
    for verb in (["metric", "show", HOSTILE], ["metric", "calibrate", "--name", HOSTILE,
                                                "--predicted", "0.5", "--observed", "0.5"]):
        assert cli.main([*verb, "--project", str(tmp_path)]) == 1
        captured = capsys.readouterr()
        _assert_escaped(captured.out + captured.err)
