"""What a session shows and writes: the ``ldd`` terminal section, the JSON and HTML reports.

The reports (``--ldd-report``, ``--ldd-html``, and the Markdown summary of
``--ldd-summary-md`` or GitHub's ``$GITHUB_STEP_SUMMARY``) are written at
``pytest_sessionfinish`` from the session document; a report that cannot be built
or written, and a warning the filters made an error, end the session with exit
status 4 and a line in the ``ldd`` section, never an INTERNALERROR.  The section
itself (``--ldd-summary``) is the session document rendered as text, every line
made safe for the terminal.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_ldd.errors import LddError
from pytest_ldd.plugin.options import HTML_OPTION, REPORT_OPTION, SUMMARY_MD_OPTION

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["GITHUB_SUMMARY_ENV", "shown", "terminal_summary", "write_reports"]

#: The file GitHub Actions shows as the job summary, one per step.
GITHUB_SUMMARY_ENV: Final = "GITHUB_STEP_SUMMARY"


def shown(error: object) -> str:
    """``error``'s text as a message may show it: secrets masked, controls escaped."""
    from pytest_ldd.report.terminal import printable
    from pytest_ldd.store.location import masked

    return printable(masked(str(error)))


def write_reports(ldd: SessionState, session: pytest.Session) -> None:
    """Write the session's JSON and HTML reports, as the options ask."""
    config = ldd.config
    if ldd.error is not None and ldd.document is None and ldd.ledger is not None:
        # The test loop stopped early (-x, Ctrl-C) and the end of the session
        # failed: said here, since no usage error can replace the interruption.
        ldd.end_errors.append(f"pytest-ldd: {ldd.error}")
    if ldd.document is None or ldd.ctx is None:
        return
    json_path = config.getoption("ldd_report")
    html_path = config.getoption("ldd_html")
    if json_path or html_path:
        _write_files(ldd, session, json_path, html_path)
    _append_job_summary(ldd, session)
    for problem in ldd.warnings.errors:
        _fail(ldd, session, problem)
    ldd.warnings.errors.clear()


def _write_files(
    ldd: SessionState, session: pytest.Session, json_path: str | None, html_path: str | None
) -> None:
    """The JSON and HTML reports (``--ldd-report``, ``--ldd-html``)."""
    from pytest_ldd.report import document as report

    assert ldd.ctx is not None
    assert ldd.document is not None
    with ldd.warnings.kept():
        # The page reads long logs as an excerpt (report.HTML_LOG_BUDGET); the
        # JSON document holds every line.
        targets = (
            (REPORT_OPTION, json_path, report.write_json, None),
            (HTML_OPTION, html_path, report.write_html, report.HTML_LOG_BUDGET),
        )
        for option, name, write, budget in targets:
            if not name:
                continue
            try:
                doc = report.build_report(ldd.ctx.registry, session=ldd.document, budget=budget)
            except LddError as exc:
                _fail(ldd, session, f"cannot build the report: {exc}")
                return
            except Exception as exc:  # never an INTERNALERROR
                _fail(ldd, session, f"cannot build the report: {type(exc).__name__}: {exc}")
                return
            target = Path(ldd.config.invocation_params.dir, name)
            try:
                write(target, doc)
            except (OSError, LddError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                _fail(ldd, session, f"{option}: cannot write {target}: {reason}")


def _shows_section(ldd: SessionState, doc: dict[str, Any]) -> bool:
    """Whether the ``ldd`` section is shown (``--ldd-summary``; see the option)."""
    mode = ldd.config.getoption("ldd_summary")
    return mode != "none" and (
        mode == "full" or bool(doc["metrics"] or doc["corpus"] or ldd.recording)
    )


def _append_job_summary(ldd: SessionState, session: pytest.Session) -> None:
    """Append the session as Markdown to ``--ldd-summary-md``, else to GitHub's job
    summary (``$GITHUB_STEP_SUMMARY``) when the ``ldd`` section is shown."""
    config, doc = ldd.config, ldd.document
    if doc is None:
        return
    name = config.getoption("ldd_summary_md")
    where = SUMMARY_MD_OPTION
    if not name:
        name = os.environ.get(GITHUB_SUMMARY_ENV)
        where = f"${GITHUB_SUMMARY_ENV}"
        if not name or not _shows_section(ldd, doc):
            return
    from pytest_ldd.report.github import job_summary

    reports = [
        (what, str(path))
        for what, path in (
            ("JSON report", config.getoption("ldd_report")),
            ("HTML report", config.getoption("ldd_html")),
        )
        if path
    ]
    text = job_summary(doc, reports=reports)
    target = Path(config.invocation_params.dir, name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Appended, as GitHub asks of every step that writes its job summary.
        with target.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        _fail(ldd, session, f"{where}: cannot write {target}: {exc.strerror or exc}")


def _fail(ldd: SessionState, session: pytest.Session, message: str) -> None:
    """A named error after the test loop: exit status 4, said in the summary."""
    ldd.end_errors.append(f"pytest-ldd: {message}")
    session.exitstatus = pytest.ExitCode.USAGE_ERROR


def terminal_summary(ldd: SessionState, terminalreporter: Any) -> None:
    """The ``ldd`` section of the terminal summary, and the errors of the session end."""
    from pytest_ldd.report.terminal import printable

    mode = ldd.config.getoption("ldd_summary")
    doc = ldd.document
    if doc is not None and _shows_section(ldd, doc):
        from pytest_ldd.report.text import render_terminal

        terminalreporter.write_sep("=", "ldd")
        failures = set(ldd.ledger.corpus_failures if ldd.ledger is not None else ())
        verbose = ldd.config.get_verbosity() > 0
        for text in render_terminal(doc, verbose=verbose):
            line = printable(text)  # units and descriptions never steer the terminal
            if text in failures:
                terminalreporter.write_line(line, red=True, bold=True)
            else:
                terminalreporter.write_line(line)
    if ldd.end_errors:
        if doc is None or mode == "none":
            terminalreporter.write_sep("=", "ldd")
        for text in ldd.end_errors:
            terminalreporter.write_line(shown(text), red=True, bold=True)
