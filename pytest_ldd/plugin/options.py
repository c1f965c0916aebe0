"""What pytest-ldd adds to pytest: command-line options, an ini setting, a marker, fixtures.

The option names are module constants that tests and other plugins import.  Values
of options are read by the session (:mod:`pytest_ldd.plugin.session`); the one
mistake pytest makes before any plugin loads (a value in a separate argument taken
for a test path) is caught here (:func:`check_value_spelling`).
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

import pytest

__all__ = [
    "FIXTURES",
    "HTML_OPTION",
    "JUNIT_INI",
    "LDD_DIR_OPTION",
    "LDD_STORE_OPTION",
    "MARKER_LINE",
    "OFF_OPTION",
    "RECORD_OPTION",
    "REPORT_OPTION",
    "SUMMARY_MD_OPTION",
    "SUMMARY_OPTION",
    "add_options",
    "check_value_spelling",
    "configures_ldd",
]

#: Option names, importable by tests and other plugins.
RECORD_OPTION = "--ldd"
LDD_DIR_OPTION = "--ldd-dir"
LDD_STORE_OPTION = "--ldd-store"
REPORT_OPTION = "--ldd-report"
HTML_OPTION = "--ldd-html"
SUMMARY_OPTION = "--ldd-summary"
SUMMARY_MD_OPTION = "--ldd-summary-md"
OFF_OPTION = "--ldd-off"
JUNIT_INI = "ldd_junit_properties"

#: The ``metric`` marker as ``pytest --markers`` lists it.
MARKER_LINE = (
    "metric(name, *, kind=None, unit=None, description=None, version=1, "
    "normalize_scale=None, le=None, lt=None, ge=None, gt=None, predictor=None, "
    "check=None): declare a pytest-ldd metric for this test, with optional gates "
    "on every observed value (enforced once the metric is load-bearing)."
)

#: The fixtures that make a test use pytest-ldd.
FIXTURES = frozenset({"ldd", "ldd_session"})

#: Options that take a value; pytest reads a value given as a separate argument as
#: a test path when it chooses the rootdir (before any plugin's options are known).
_VALUE_OPTIONS = (LDD_DIR_OPTION, REPORT_OPTION, HTML_OPTION, SUMMARY_OPTION, SUMMARY_MD_OPTION)


def add_options(parser: pytest.Parser) -> None:
    """The ``ldd`` option group and the ``ldd_junit_properties`` ini setting."""
    group = parser.getgroup("ldd", "calibrated metrics (pytest-ldd)")
    group.addoption(
        RECORD_OPTION,
        action="store_true",
        dest="ldd_record",
        default=False,
        help=(
            "Record this session: append observations and calibration pairs to the "
            ".ldd/ folder and re-evaluate each metric's state at the end. Without it "
            "nothing under .ldd/ is created or changed; gates still apply."
        ),
    )
    group.addoption(
        LDD_DIR_OPTION,
        dest="ldd_dir",
        metavar="DIR",
        default=None,
        help="The .ldd folder to use (default: <rootdir>/.ldd, or [tool.ldd] dir).",
    )
    group.addoption(
        OFF_OPTION,
        action="store_true",
        dest="ldd_off",
        default=False,
        help=(
            "Switch pytest-ldd off for this session but keep the project runnable: the "
            "metric marker, the ldd fixtures and yield tests still work, and nothing is "
            "recorded, gated or read from .ldd/ (unlike -p no:ldd). Wins over --ldd."
        ),
    )
    group.addoption(
        LDD_STORE_OPTION,
        dest="ldd_store",
        metavar="URL",
        default=None,
        help="The store to use: a postgresql:// URL or a folder (above $LDD_STORE and "
        "[tool.ldd] store; a database store needs [tool.ldd] project).",
    )
    group.addoption(
        REPORT_OPTION,
        dest="ldd_report",
        metavar="FILE.json",
        default=None,
        help="Write this session's metrics report as JSON to FILE.json.",
    )
    group.addoption(
        HTML_OPTION,
        dest="ldd_html",
        metavar="FILE.html",
        default=None,
        help="Write a self-contained HTML report with calibration plots to FILE.html.",
    )
    group.addoption(
        SUMMARY_OPTION,
        dest="ldd_summary",
        choices=("auto", "full", "none"),
        default="auto",
        help=(
            "The 'ldd' terminal section: 'auto' shows it when a metric was touched, an "
            "episode graded, or the session records; 'full' always; 'none' never."
        ),
    )
    group.addoption(
        SUMMARY_MD_OPTION,
        dest="ldd_summary_md",
        metavar="FILE.md",
        default=None,
        help=(
            "Append this session's summary as Markdown to FILE.md (GitHub Actions: "
            "$GITHUB_STEP_SUMMARY, used when this option is not given)."
        ),
    )

    parser.addini(
        JUNIT_INI,
        type="bool",
        default=False,
        help=(
            "Record every observation as <property> elements of its test in JUnit XML "
            "(--junitxml): ldd.NAME = observed value, ldd.NAME.predicted = prediction."
        ),
    )


def configures_ldd(rootpath: Path) -> bool:
    """Whether the rootdir's pyproject.toml has a ``[tool.ldd...]`` table (no TOML parse)."""
    try:
        text = (rootpath / "pyproject.toml").read_bytes()
    except OSError:
        return False
    return b"[tool.ldd" in text or b"tool.ldd." in text


def _argument_sources(config: pytest.Config) -> list[tuple[str, list[str]]]:
    """The arguments pytest chose its rootdir from, by where they were given."""
    import shlex

    sources = []
    env = os.environ.get("PYTEST_ADDOPTS", "")
    if env.strip():
        with suppress(ValueError):  # pytest itself refused it already
            sources.append(("PYTEST_ADDOPTS", shlex.split(env)))
    sources.append(("", [str(a) for a in config.invocation_params.args]))
    return sources


def check_value_spelling(config: pytest.Config) -> None:
    """Refuse ``--ldd-dir DIR`` (two arguments) where it moved pytest's rootdir.

    pytest chooses its rootdir and ini file from the command line and
    ``PYTEST_ADDOPTS`` before it loads plugins, so the value of ``--ldd-dir
    /abs/path`` is taken for a test path; when that path exists the rootdir (and with
    it ``[tool.pytest.ini_options]`` and ``[tool.ldd]``) can move.  The one argument
    spelling, ``--ldd-dir=/abs/path``, is always right.  The ``addopts`` of the ini
    file are read once the rootdir is chosen, so a separate value there is harmless.
    """
    separated = [
        (where, args[i], args[i + 1])
        for where, args in _argument_sources(config)
        for i in range(len(args) - 1)
        if args[i] in _VALUE_OPTIONS and not args[i + 1].startswith("-")
    ]
    if not separated:
        return
    from _pytest.config.findpaths import determine_setup

    known = config.known_args_namespace
    try:

        def setup(paths: list[str]) -> tuple[Path, Path | None]:
            found = determine_setup(
                inifile=known.inifilename,
                override_ini=known.override_ini,
                args=paths,
                rootdir_cmd_arg=known.rootdir or None,
                invocation_dir=config.invocation_params.dir,
            )
            return found[0], found[1]

        paths = [str(p) for p in known.file_or_dir]
        intended = setup(paths)
        chosen = setup(paths + [value for _, _, value in separated])
        if chosen == intended:
            return
        # Named: the first value that moves the rootdir by itself (else the first).
        where, option, value = next(
            (given for given in separated if setup([*paths, given[2]]) != intended),
            separated[0],
        )
    except Exception:  # another pytest's private API: nothing to tell
        return
    given = f" (in {where})" if where else ""
    raise pytest.UsageError(
        f"pytest-ldd: {option} {value}{given}: pytest took {value!r} for a test path when "
        f"it chose its rootdir ({chosen[0]} instead of {intended[0]}), because it reads "
        f"its arguments before plugins load; write {option}={value} (one argument)"
    )
