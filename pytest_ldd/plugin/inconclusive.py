"""An episode its checker could not grade makes its test an ERROR, not a failure or a pass.

A hidden-test verdict may be *inconclusive*: the grader failed, or met a limit of its
isolation, so nothing is known of the agent's work.  Reporting that as a failed test
would blame the agent; as a passed test it would hide the doubt.  pytest's own word for
"this could not be judged" is an error, so the phase that graded such an episode
reports one: the rest of the test still runs (a corpus test grades every episode), and
when the phase ends its report turns into an error whose text names the episodes.
A phase that failed for another reason keeps that failure.

The report carries :data:`INCONCLUSIVE_ATTR`, which xdist ships to the controller with
the rest of the report; :func:`teststatus` (the plugin module's
``pytest_report_teststatus``) counts it among the errors wherever the terminal is.
:class:`InconclusiveErrors` is registered (as ``ldd-inconclusive``) only once an
episode was inconclusive: a session without one does not pay for a per-phase hook.

pytest's JUnit XML writer (``--junitxml``) writes every failed call phase as a
``<failure>``; :class:`JUnitInconclusive`, registered (as ``ldd-junit-inconclusive``)
only with ``--junitxml``, makes it write such a phase as an ``<error>`` whose message
is the first line of the report, as the terminal shows it.  It goes through the
writer's per-test reporter; where a pytest lacks what it uses, the phase stays a
``<failure>`` (whose message still says "could not be judged").
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = [
    "INCONCLUSIVE_ATTR",
    "INCONCLUSIVE_PLUGIN",
    "JUNIT_PLUGIN",
    "InconclusiveErrors",
    "JUnitInconclusive",
    "teststatus",
]

INCONCLUSIVE_PLUGIN = "ldd-inconclusive"
JUNIT_PLUGIN = "ldd-junit-inconclusive"
#: The attribute of a test report whose phase graded an inconclusive episode.
INCONCLUSIVE_ATTR = "ldd_inconclusive"
# How many episodes the error names before it counts the rest.
_NAMED = 5


class InconclusiveErrors:
    """Turns the report of a phase that graded an inconclusive episode into an error."""

    def __init__(self, session: SessionState) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        recorder = self.session.live.get(item.nodeid)
        if recorder is None or not recorder.inconclusive:
            return report
        doubts, recorder.inconclusive = recorder.inconclusive, []
        if report.passed:
            report.outcome = "failed"
            report.longrepr = _message(doubts)
            setattr(report, INCONCLUSIVE_ATTR, True)
        return report


class JUnitInconclusive:
    """With ``--junitxml``: an inconclusive call phase is an ``<error>``, not a ``<failure>``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        reporter = None
        if getattr(report, INCONCLUSIVE_ATTR, False) and report.failed and report.when == "call":
            reporter = _junit_reporter(self.config, report)
        if reporter is None:
            return (yield)
        # The writer calls append_failure for a failed call phase: for this one report,
        # its reporter appends an error instead.
        reporter.append_failure = functools.partial(_append_error, reporter)
        try:
            return (yield)
        finally:
            del reporter.append_failure


def _junit_reporter(config: pytest.Config, report: pytest.TestReport) -> Any:
    """The JUnit writer's reporter of this test, or None (no writer, or not as known)."""
    try:
        from _pytest.junitxml import xml_key

        xml = config.stash.get(xml_key, None)
        reporter = None if xml is None else xml.node_reporter(report)
    except (ImportError, AttributeError):
        return None
    if not callable(getattr(reporter, "_add_simple", None)):
        return None
    return reporter


def _append_error(reporter: Any, report: pytest.TestReport) -> None:
    from _pytest.junitxml import bin_xml_escape

    text = str(report.longrepr)
    message = text.splitlines()[0] if text else "inconclusive"
    reporter._add_simple("error", bin_xml_escape(message), text)


def register_junit(config: pytest.Config) -> None:
    """Register :class:`JUnitInconclusive` where pytest writes JUnit XML."""
    if getattr(config.option, "xmlpath", None):
        manager = config.pluginmanager
        if manager.get_plugin(JUNIT_PLUGIN) is None:
            manager.register(JUnitInconclusive(config), JUNIT_PLUGIN)


def _message(doubts: list[str]) -> str:
    named = "\n".join(f"  {doubt}" for doubt in doubts[:_NAMED])
    more = f"\n  ... and {len(doubts) - _NAMED} more" if len(doubts) > _NAMED else ""
    episodes = "1 episode" if len(doubts) == 1 else f"{len(doubts)} episodes"
    return (
        f"pytest-ldd: {episodes} could not be judged (inconclusive: neither a pass nor a"
        f" failure of the agent; counted apart from the success rate):\n{named}{more}"
    )


def teststatus(report: Any) -> tuple[str, str, str] | None:
    """pytest's error status for a report of an inconclusive episode, else None."""
    if getattr(report, INCONCLUSIVE_ATTR, False) and report.failed:
        return "error", "E", "ERROR"
    return None


def register(session: SessionState, config: pytest.Config) -> None:
    """Register :class:`InconclusiveErrors` once (before the phase's report is made)."""
    manager = config.pluginmanager
    if manager.get_plugin(INCONCLUSIVE_PLUGIN) is None:
        manager.register(InconclusiveErrors(session), INCONCLUSIVE_PLUGIN)
