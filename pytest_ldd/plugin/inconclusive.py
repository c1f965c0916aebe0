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
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["INCONCLUSIVE_ATTR", "INCONCLUSIVE_PLUGIN", "InconclusiveErrors", "teststatus"]

INCONCLUSIVE_PLUGIN = "ldd-inconclusive"
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
