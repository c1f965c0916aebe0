"""Where pytest-ldd keeps its state in pytest: the stash keys, and what the session offers.

Per-run state lives in one session object in the config's stash, and what a test's
markers declare in the item's stash, never in private attributes of pytest's
objects.  The session's jobs (start-up, routing, the end, the reports, the
fixtures) see it as a :class:`SessionState`: they never import the session module,
which imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from pytest_ldd.model.gates import Bound
    from pytest_ldd.plugin.held_warnings import HeldWarnings
    from pytest_ldd.plugin.ledger import SessionLedger
    from pytest_ldd.plugin.markers import TestPlan
    from pytest_ldd.plugin.recorder import RunContext, TestRecorder

__all__ = ["PLAN", "SESSION", "YIELD_TESTS", "SessionState"]


class SessionState(Protocol):
    """What one session of pytest-ldd holds (:class:`~pytest_ldd.plugin.session.LddSession`)."""

    config: pytest.Config
    #: ``--co``, ``--ldd`` (and not off), ``--ldd-off``, an xdist worker.
    collect_only: bool
    recording: bool
    off: bool
    is_worker: bool
    #: ``ldd_junit_properties``.
    junit_properties: bool
    ctx: RunContext | None
    ledger: SessionLedger | None
    document: dict[str, Any] | None
    corpus_bounds: dict[str, tuple[Bound, ...]]
    error: str | None
    usage_error: str | None
    end_errors: list[str]
    live: dict[str, TestRecorder]

    @property
    def warnings(self) -> HeldWarnings:
        """The warnings of store work held back inside hooks."""
        ...

    def owns_session(self) -> bool:
        """Whether this process started the session (a forked child never ends it)."""
        ...

    def start_session(self) -> None:
        """At session start: check the command line; start now when that is sure."""
        ...

    def collected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """After collection: start if a test uses pytest-ldd; plan each marked test."""
        ...

    def recorder_for(self, item: pytest.Item) -> TestRecorder:
        """The recorder of ``item``, created on first use."""
        ...

    def write_pending(self) -> None:
        """Write the records handed over and not written yet (a serial run's last test)."""
        ...


#: The session object of a pytest session (the config's stash).
SESSION: pytest.StashKey[SessionState] = pytest.StashKey()

#: A marked test's plan (the item's stash).
PLAN: pytest.StashKey[TestPlan] = pytest.StashKey()

#: Whether collection made a yield test (the config's stash).
YIELD_TESTS: pytest.StashKey[bool] = pytest.StashKey()
