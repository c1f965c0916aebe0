"""A monorepo run from its top: a metric another project declares is named as such.

``pytest --ldd a b`` takes ``a`` for the rootdir (the first project with a
configuration file) and reads only ``a``'s ``[tool.ldd]``; ``b``'s tests then observe
metrics the session does not know.  Where a ``pyproject.toml`` nearer the test than
the rootdir declares the metric, the failure says so and how to run each project on
its own.
"""

from __future__ import annotations

import pytest
from plugin_support import run

A_PROJECT = """
[tool.ldd.metrics.a_latency]
kind = "positive"
unit = "ms"
description = "latency of project a's endpoint"
"""

B_PROJECT = """
[tool.ldd.metrics.b_recall]
kind = "bounded"
description = "recall of project b's search"
"""

HINT = (
    "*unknown metric 'b_recall': declare it with @pytest.mark.metric(...) or "
    "[tool.ldd.metrics.b_recall]; b/pyproject.toml declares it, but this session reads the "
    "[tool.ldd] of its rootdir */a, which pytest chose for every project it was given: run "
    "each project on its own (pytest --ldd b)*"
).replace("[", "[[]")  # fnmatch: a bracket opens a character class

#: Ways b's test refers to its metric.
B_TESTS = {
    "observe": "def test_b(ldd):\n    ldd.observe('b_recall', 0.9, predicted=0.8)\n",
    "yield": (
        "from pytest_ldd import Observation\n\n"
        "def test_b():\n    yield Observation('b_recall', 0.9, predicted=0.8)\n"
    ),
    "state": "def test_b(ldd):\n    assert ldd.state('b_recall')\n",
    "gate": "def test_b(ldd):\n    with ldd.gate('b_recall'):\n        pass\n",
}


def monorepo(pytester: pytest.Pytester, b_test: str) -> None:
    top = pytester.path
    for name, config, test in (
        ("a", A_PROJECT, "def test_a(ldd):\n    ldd.observe('a_latency', 12.0)\n"),
        ("b", B_PROJECT, b_test),
    ):
        (top / name / "tests").mkdir(parents=True)
        (top / name / "pyproject.toml").write_text(config)
        (top / name / "tests" / f"test_{name}.py").write_text(test)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("how", sorted(B_TESTS))
def test_a_metric_of_another_project_is_named_with_the_way_out(
    pytester: pytest.Pytester, how: str, workers: list[str]
) -> None:
    monorepo(pytester, B_TESTS[how])
    result = run(pytester, "--ldd", "a", "b", *workers)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["rootdir: */a*"])
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([HINT])
    # Each project on its own: both pass.
    for project in ("a", "b"):
        alone = run(pytester, "--ldd", project, *workers)
        assert alone.ret == 0, alone.stdout.str()


def test_a_marker_referring_to_it_stops_the_session_with_the_hint(
    pytester: pytest.Pytester,
) -> None:
    monorepo(
        pytester,
        "import pytest\n\n@pytest.mark.metric('b_recall', ge=0.5)\ndef test_b(ldd):\n"
        "    ldd.observe('b_recall', 0.9)\n",
    )
    result = run(pytester, "--ldd", "a", "b")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*metric 'b_recall' is not declared*; b/pyproject.toml declares it, *(pytest --ldd b)"]
    )


@pytest.mark.parametrize(
    "b_config",
    [
        "[project]\nname = 'b'\n",  # declares no metric
        B_PROJECT.replace("b_recall", "b_precision"),  # declares another one
        "[tool.ldd]\nmetrics = 'b_recall'\n",  # not a table: no hint, no crash
    ],
    ids=["no metrics", "another metric", "odd table"],
)
def test_no_hint_where_no_nearer_project_declares_it(
    pytester: pytest.Pytester, b_config: str
) -> None:
    monorepo(pytester, B_TESTS["observe"])
    (pytester.path / "b" / "pyproject.toml").write_text(b_config)
    result = run(pytester, "--ldd", "a", "b")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*unknown metric 'b_recall': declare it with *"])
    assert "declares it" not in result.stdout.str()


def test_a_declaration_above_the_rootdir_is_not_nearer(pytester: pytest.Pytester) -> None:
    # The top's pyproject.toml holds the rootdir (a) too: not a nearer project's.
    monorepo(pytester, B_TESTS["observe"])
    (pytester.path / "b" / "pyproject.toml").unlink()
    (pytester.path / "pyproject.toml").write_text(B_PROJECT)
    result = run(pytester, "--ldd", "--rootdir=a", "a", "b")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["rootdir: */a", "*unknown metric 'b_recall'*"])
    assert "declares it" not in result.stdout.str()
