"""``--ldd-dir DIR`` as two arguments, wherever pytest's arguments come from.

pytest chooses its rootdir from the command line and ``PYTEST_ADDOPTS`` (tox,
CI settings) before plugins load, taking ``DIR`` for a test path: where that moves
the rootdir, ``[tool.pytest.ini_options]`` and ``[tool.ldd]`` go unread, so the
session stops with exit status 4 and a line naming where the argument was given.
The ini file's ``addopts`` are read after the rootdir is chosen: a separate value
there is harmless, and works.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_support import read_jsonl, run

METRIC = """
[tool.ldd.metrics.build_s]
kind = "positive"
unit = "s"
normalize_scale = 1000
description = "wall time of the build step"
"""

TEST = """
def test_build(ldd):
    ldd.observe("build_s", 10, predicted=10)
"""


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """An existing folder outside the project (pytest takes it for a test path)."""
    store = tmp_path / "elsewhere" / "store"
    store.mkdir(parents=True)
    return store


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(test_build=TEST)
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_pytest_addopts_that_moves_the_rootdir_is_refused(
    project: pytest.Pytester, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--ldd --ldd-dir {elsewhere}")
    result = run(project, *workers)
    assert result.ret == 4, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            f"ERROR: pytest-ldd: --ldd-dir {elsewhere} (in PYTEST_ADDOPTS): pytest took "
            f"'{elsewhere}' for a test path when it chose its rootdir*"
            f"write --ldd-dir={elsewhere} (one argument)"
        ]
    )
    assert not any(elsewhere.iterdir())
    # The one-argument spelling records where it says.
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--ldd --ldd-dir={elsewhere}")
    result = run(project, *workers)
    assert result.ret == 0, result.stdout.str()
    assert len(read_jsonl(elsewhere / "metric_calibrations.jsonl")) == 1


@pytest.mark.parametrize("option", ["--ldd-report", "--ldd-html"])
def test_a_report_path_from_an_earlier_run_in_pytest_addopts(
    project: pytest.Pytester, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    # The report of the last run exists, so pytest can take it for a test path.
    report = elsewhere / "report.out"
    report.write_text("last run\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{option} {report}")
    result = run(project, "--ldd")
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"*pytest-ldd: {option} {report} (in PYTEST_ADDOPTS)*"])


def test_a_separate_value_in_pytest_addopts_that_moves_nothing_is_fine(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--ldd --ldd-dir store")
    result = run(project)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert len(read_jsonl(project.path / "store" / "metric_calibrations.jsonl")) == 1


def test_the_command_line_is_named_when_it_moves_the_rootdir(
    project: pytest.Pytester, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--ldd-summary full")
    result = run(project, "--ldd", "--ldd-dir", str(elsewhere))
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: pytest-ldd: --ldd-dir {elsewhere}: pytest took *"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_ini_addopts_with_a_separate_value_work(
    pytester: pytest.Pytester, elsewhere: Path, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(
        METRIC + f'\n[tool.pytest.ini_options]\naddopts = "--ldd --ldd-dir {elsewhere}"\n'
    )
    pytester.makepyfile(test_build=TEST)
    result = run(pytester, *workers)
    # [tool.ldd] was read (the metric is known) and the records went to the folder.
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert len(read_jsonl(elsewhere / "metric_calibrations.jsonl")) == 1
    assert not (pytester.path / ".ldd").exists()
