"""Where other tools show a run: GitHub Actions annotations, pytest-html, pytest-json-report.

Each is a small plugin registered beside the session, in the process that writes
(a serial run, the xdist controller), and only when its tool is there:

- :class:`GithubAnnotations` under GitHub Actions (``GITHUB_ACTIONS=true``): once
  the ``ldd`` section is printed, one ``::error`` line per failed load-bearing gate
  and one ``::warning`` per advisory breach, pointing at the test's file (relative
  to the repository root) and line.  The job summary is a report
  (:mod:`~pytest_ldd.plugin.reports`).
- :class:`ReportPluginHooks` when pytest-html or pytest-json-report is loaded:
  pytest-html's report gets an "ldd" section (``pytest_html_results_summary``),
  pytest-json-report's document the session document under ``"ldd"``
  (``pytest_json_modifyreport``).  Both hooks are optional: neither plugin is a
  dependency.  Both run at ``pytest_sessionfinish``, after the test loop's end built
  the session document.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = [
    "ANNOTATIONS_PLUGIN",
    "JSON_REPORT_KEY",
    "REPORT_PLUGINS_PLUGIN",
    "GithubAnnotations",
    "ReportPluginHooks",
    "register_integrations",
]

ANNOTATIONS_PLUGIN: Final = "ldd-annotations"
REPORT_PLUGINS_PLUGIN: Final = "ldd-report-plugins"
#: The key of the session document in pytest-json-report's document.
JSON_REPORT_KEY: Final = "ldd"


def register_integrations(ldd: SessionState) -> None:
    """Register the plugins of the tools this run has (the writing process only)."""
    manager = ldd.config.pluginmanager
    if os.environ.get("GITHUB_ACTIONS") == "true":
        manager.register(GithubAnnotations(ldd), ANNOTATIONS_PLUGIN)
    if manager.has_plugin("html") or manager.has_plugin("pytest_jsonreport"):
        manager.register(ReportPluginHooks(ldd), REPORT_PLUGINS_PLUGIN)


class GithubAnnotations:
    """Workflow commands for the breaches of a session (see the module)."""

    __slots__ = ("_locations", "ldd")

    def __init__(self, ldd: SessionState) -> None:
        self.ldd = ldd
        #: Per test id: its file relative to the rootdir and its 0-based line.
        self._locations: dict[str, tuple[str, int | None]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The reports carry the location to the xdist controller, which has no items.
        if report.nodeid not in self._locations and report.location:
            path, line, _ = report.location
            self._locations[report.nodeid] = (path, line)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        doc = self.ldd.document
        if doc is None:
            return
        from pytest_ldd.plugin.vcs import work_tree_root
        from pytest_ldd.report.github import annotation_commands

        rootdir = self.ldd.config.rootpath
        top = work_tree_root(rootdir) or Path(os.environ.get("GITHUB_WORKSPACE") or rootdir)
        locations: dict[str, tuple[str, int | None]] = {}
        for nodeid, (path, line) in self._locations.items():
            relative = os.path.relpath(rootdir / path, top).replace(os.sep, "/")
            locations[nodeid] = (relative, None if line is None else line + 1)
        for command in annotation_commands(doc, locations):
            terminalreporter.write_line(command)


class ReportPluginHooks:
    """The session in pytest-html's report and pytest-json-report's document."""

    __slots__ = ("ldd",)

    def __init__(self, ldd: SessionState) -> None:
        self.ldd = ldd

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: Any
    ) -> None:
        doc = self.ldd.document
        if doc is None:
            return
        from pytest_ldd.report.html import session_fragment

        postfix.append(session_fragment(doc))

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        if self.ldd.document is not None:
            json_report[JSON_REPORT_KEY] = self.ldd.document
