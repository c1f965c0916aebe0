"""Each test's payload, taken to the session's ledger once the test is over.

One hook per report does it all (:meth:`PayloadRoute.route`, called from the
session's ``pytest_runtest_logreport``): in a serial run the ledger takes the
payload straight from the test's recorder; an xdist worker attaches it to the
teardown report before xdist sends it (the session's hook runs first) and the
controller's ledger takes it from there.

An attempt that pytest-rerunfailures will run again (its report's outcome is
``"rerun"``) records nothing and is not counted: only the final attempt of a test
counts, once.  rerunfailures runs all three phases of an attempt before it reports
any of them, so only the end of an attempt knows whether its values count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_ldd.errors import LddError

if TYPE_CHECKING:
    import pytest

    from pytest_ldd.plugin.payload import Payload
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["PayloadRoute"]


class PayloadRoute:
    """Where one session's payloads go (see the module)."""

    __slots__ = ("_retried", "session")

    def __init__(self, session: SessionState) -> None:
        self.session = session
        #: Tests whose current attempt pytest-rerunfailures runs again.
        self._retried: set[str] = set()

    def route(self, report: pytest.TestReport) -> None:
        """Hand over what the test of ``report`` recorded, with its teardown report."""
        session = self.session
        if not session.owns_session():
            return  # a forked child's reports: the parent records this session
        nodeid = report.nodeid
        retried = report.outcome == "rerun"  # type: ignore[comparison-overlap]
        if retried:
            self._retried.add(nodeid)
        elif self._retried and nodeid in self._retried:
            # The rest of an attempt that is run again (its teardown report).
            retried = True
            if report.when == "teardown":
                self._retried.discard(nodeid)
        payload: Payload | str | Mapping[str, Any] | None = None
        recorder = session.live.get(nodeid) if report.when == "teardown" or retried else None
        if recorder is not None:
            # Its recorder is garbage now, not something kept until the session ends.
            recorder.closed = True
            del session.live[nodeid]
            taken = recorder.take_payload()
            if taken is not None and not retried and session.is_worker:
                # As one string: execnet's serializer is paid per object.
                try:
                    report.ldd = taken.encode()  # type: ignore[attr-defined]
                except (TypeError, ValueError):
                    # Not JSON: let xdist's own serializer carry it (and say why not).
                    report.ldd = taken.to_wire()  # type: ignore[attr-defined]
                return
            payload = None if retried else taken
        ledger = session.ledger
        if ledger is None:
            return
        if payload is None:
            # Popped: the terminal reporter keeps every report until the session
            # ends, and a payload it no longer needs is memory that grows with it.
            payload = report.__dict__.pop("ldd", None)
        if retried:
            return
        if payload is not None and session.error is None:
            try:
                with session.warnings.kept():
                    ledger.consume(payload)
            except LddError as exc:
                # Raising here would be an INTERNALERROR (and, under xdist, kill the
                # controller's loop); the session stops cleanly at the end instead.
                session.error = f"{nodeid}: {exc}"
        elif payload is not None:
            # After an error nothing more is written; the error says how much.
            ledger.count_unrecorded(payload)
        if report.when == "teardown":
            ledger.count_test()
