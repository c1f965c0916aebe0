"""A session on GitHub Actions: the job summary ($GITHUB_STEP_SUMMARY, --ldd-summary-md)
and the annotations of its gate failures and breaches.

The summary is rendered as GitHub renders Markdown (markdown-it-py, GFM tables) and
read back cell by cell; the annotations are parsed as the runner parses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from github_support import commands, render
from plugin_support import read_jsonl, run

PROJECT = """
[tool.pytest.ini_options]
xfail_strict = true

[tool.ldd.metrics.latency]
kind = "positive"
unit = "ms"
normalize_scale = 1000
description = "response latency"
le = 500

[tool.ldd.metrics.score]
kind = "bounded"
description = "share of checks passed"
ge = 0.5
"""

TESTS = """
import pytest
from pytest_ldd import Observation

def test_latency():
    yield Observation("latency", 512, predicted=510)

@pytest.mark.parametrize("case", ["a|b`c <i>"])
def test_score(case):
    yield Observation("score", 0.25)
"""

SCORE_ID = "test_ci.py::test_score[a|b`c <i>]"


def line_of(source: Path, text: str) -> str:
    """The 1-based line of ``source`` that starts with ``text``.

    pytest's line of a test, which the annotation points at, is where its definition
    starts: its first decorator, if any.
    """
    lines = source.read_text().splitlines()
    return str(next(i for i, line in enumerate(lines, 1) if line.startswith(text)))


def promoted(pytester: pytest.Pytester) -> Path:
    """The project, with ``latency`` load-bearing after five recorded sessions."""
    pytester.makepyprojecttoml(PROJECT)
    source = pytester.makepyfile(test_ci=TESTS)
    for _ in range(5):
        assert run(pytester, "--ldd").ret == 0
    return source


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_summary_and_annotations_on_github_actions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    source = promoted(pytester)
    summary = pytester.path / "step_summary.md"
    summary.write_text("# An earlier step's summary\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    (pytester.path / ".git").mkdir()  # the repository root: the project's folder

    result = run(pytester, "--ldd", "--ldd-html=out/ldd.html", *workers)
    assert result.ret == 1, result.stdout.str()

    text = summary.read_text()
    assert text.startswith("# An earlier step's summary\n## pytest-ldd\n")  # appended
    page = render(text)
    assert page.other_tags == []  # the test id's <i> stayed text
    metrics_table, breaches_table = page.tables
    assert [row[:4] for row in metrics_table] == [
        ["metric", "kind", "v", "state"],
        ["latency", "positive", "1", "load_bearing"],
        ["score", "bounded", "1", "insufficient_data"],
    ]
    assert breaches_table == [
        ["outcome", "test", "metric", "value", "bound"],
        ["gate failed", "test_ci.py::test_latency", "latency", "512 ms", "le 500"],
        ["advisory breach", SCORE_ID, "score", "0.25 rate", "ge 0.5"],
    ]
    assert page.items == [
        f"Store: {pytester.path / '.ldd'}",
        "HTML report: out/ldd.html",
    ]

    assert commands(result.stdout.str()) == [
        (
            "error",
            {
                "file": "test_ci.py",
                "line": line_of(source, "def test_latency"),
                "title": "pytest-ldd: gate failed",
            },
            "latency = 512 ms, limit le 500 (test_ci.py::test_latency)",
        ),
        (
            "warning",
            {
                "file": "test_ci.py",
                "line": line_of(source, "@pytest.mark.parametrize"),
                "title": "pytest-ldd: advisory breach",
            },
            f"score = 0.25 rate, limit ge 0.5 ({SCORE_ID})",
        ),
    ]


def test_the_annotated_file_is_relative_to_the_repository_root(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repository whose project lives in a folder: pytest's rootdir is that folder.
    (pytester.path / ".git").mkdir()
    project = pytester.mkdir("services") / "api"
    project.mkdir()
    (project / "pyproject.toml").write_text(PROJECT)
    source = project / "test_ci.py"
    source.write_text(TESTS)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run(pytester, "services/api")
    assert result.ret == 0, result.stdout.str()
    assert commands(result.stdout.str()) == [
        (
            "warning",
            {
                "file": "services/api/test_ci.py",
                "line": line_of(source, "def test_latency"),
                "title": "pytest-ldd: advisory breach",
            },
            "latency = 512 ms, limit le 500 (test_ci.py::test_latency)",
        ),
        (
            "warning",
            {
                "file": "services/api/test_ci.py",
                "line": line_of(source, "@pytest.mark.parametrize"),
                "title": "pytest-ldd: advisory breach",
            },
            # Test ids are the rootdir's (services/api); the file is the repository's.
            f"score = 0.25 rate, limit ge 0.5 ({SCORE_ID})",
        )
    ]


def test_the_option_writes_the_summary_anywhere(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_ci=TESTS)
    for _ in range(2):
        result = run(pytester, "--ldd-summary-md=out/summary.md")
        assert result.ret == 0, result.stdout.str()
    # Not on GitHub Actions: no workflow command.
    assert commands(result.stdout.str()) == []
    text = (pytester.path / "out" / "summary.md").read_text()
    assert text.count("## pytest-ldd") == 2  # each session appends its section
    page = render(text)
    assert "Not recording (run with --ldd to log calibration pairs)." in page.html
    assert page.tables[1][1:] == [
        ["advisory breach", "test_ci.py::test_latency", "latency", "512 ms", "le 500"],
        ["advisory breach", SCORE_ID, "score", "0.25 rate", "ge 0.5"],
    ]


def test_the_option_wins_over_the_step_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_ci=TESTS)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step.md"))
    assert run(pytester, "--ldd-summary-md=mine.md").ret == 0
    assert (pytester.path / "mine.md").read_text().startswith("## pytest-ldd\n")
    assert not (pytester.path / "step.md").exists()


@pytest.mark.parametrize("how", ["option", "variable"])
def test_a_summary_that_cannot_be_written_is_a_named_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_ci=TESTS)
    folder = pytester.mkdir("a_folder")
    if how == "option":
        args, named = ["--ldd-summary-md=a_folder"], "--ldd-summary-md"
    else:
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(folder))
        args, named = [], "$GITHUB_STEP_SUMMARY"
    result = run(pytester, "--ldd", *args)
    assert result.ret == 4, result.stdout.str()
    result.stdout.fnmatch_lines([f"pytest-ldd: {named}: cannot write {folder}: Is a directory"])
    assert "INTERNALERROR" not in result.stdout.str()
    # The session's records were kept.
    (record,) = read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")
    assert record["counts"]["tests"] == 2


@pytest.mark.parametrize("case", ["unused", "summary none"])
def test_no_summary_where_the_section_is_not_shown(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    summary = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    if case == "unused":
        # A session that does not use pytest-ldd adds nothing to the job's page.
        pytester.makepyfile(test_plain="def test_x():\n    pass\n")
        result = run(pytester)
    else:
        pytester.makepyprojecttoml(PROJECT)
        pytester.makepyfile(test_ci=TESTS)
        result = run(pytester, "--ldd-summary=none")
    assert result.ret == 0, result.stdout.str()
    assert not summary.exists()
    if case == "summary none":
        # The annotations do not depend on the terminal section.
        assert [c[0] for c in commands(result.stdout.str())] == ["warning", "warning"]
