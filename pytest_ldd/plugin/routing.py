"""Each test's payload, taken to the session's ledger once the test is over.

One hook per report does the hand-over (:meth:`PayloadRoute.route`, called from the
session's ``pytest_runtest_logreport``): an xdist worker attaches the payload to the
teardown report before xdist sends it (the session's hook runs first), and the
controller's ledger writes it as the report arrives; in a serial run the payload
is taken from the test's recorder and written once the test's whole protocol is
over (:meth:`PayloadRoute.write_pending`, from the session's outermost
``pytest_runtest_protocol`` wrapper).

A test's records are one unit, written whole or not at all:

- the write happens after pytest-timeout cancelled the test's timer (its wrapper
  is inside pytest-ldd's), so neither its ``signal`` nor its ``thread`` method (which
  ends the process) can land between the observations and the pairs;
- the hand-over inside the timer's reach and every write hold ``SIGALRM`` and
  Ctrl-C back (:mod:`~pytest_ldd.plugin.held_signals`) until the unit is complete;
  a timeout that fired meanwhile then fails the test (its report becomes a failure
  naming the timeout), never the session.

Only the final attempt of a test counts, once.  An attempt that
pytest-rerunfailures runs again has a report whose outcome is ``"rerun"``: the
attempt records nothing and is not counted, and neither are the reports of that
attempt that follow it (rerunfailures logs an attempt's reports only once all its
phases ran).  A phase that cannot follow the rerun one starts the next attempt.
Under xdist a crashed worker's test that is run again has one ``"rerun"`` report
(``when`` is ``"???"``) and nothing follows it: its next attempt counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_ldd.errors import LddError
from pytest_ldd.plugin.held_signals import HeldSignals
from pytest_ldd.plugin.payload import Payload

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["PayloadRoute"]


#: Where each phase stands in an attempt; xdist's report of a crashed worker has none.
_PHASE_ORDER: Final = {"setup": 0, "call": 1, "teardown": 2}


class PayloadRoute:
    """Where one session's payloads go (see the module)."""

    __slots__ = ("_pending", "_retried", "serial", "session")

    def __init__(self, session: SessionState) -> None:
        self.session = session
        #: Whether this process runs the tests and writes (no xdist worker, no controller).
        self.serial = not session.is_worker and not session.config.pluginmanager.has_plugin(
            "dsession"
        )
        #: Per test whose current attempt pytest-rerunfailures runs again: the phase
        #: of its ``"rerun"`` report.
        self._retried: dict[str, int] = {}
        #: Serial run: the test's payloads (None: a test with nothing to write) and
        #: tests finished, written once its protocol is over.
        self._pending: list[tuple[str, Payload | None]] = []

    def route(self, report: pytest.TestReport) -> None:
        """Hand over what the test of ``report`` recorded; a timeout meanwhile fails it."""
        try:
            with HeldSignals():
                self._hand_over(report)
        except (KeyboardInterrupt, SystemExit, pytest.exit.Exception):
            raise
        except BaseException as exc:
            # A timeout (pytest-timeout's Failed, a handler's TimeoutError) that fired
            # in the hand-over: the test's failure, never the session's.
            outcome: str = report.outcome
            if outcome != "rerun":
                what = getattr(exc, "msg", None) or f"{type(exc).__name__}: {exc}"
                report.outcome = "failed"
                report.longrepr = (
                    f"{what} (while pytest-ldd handed over this test's records, "
                    "which were kept whole)"
                )

    def _retried_attempt(self, report: pytest.TestReport) -> bool:
        """Whether ``report`` belongs to an attempt that is run again (see the module)."""
        nodeid = report.nodeid
        # pytest types these as its own values; rerunfailures and xdist add others.
        outcome: str = report.outcome
        when: str = report.when
        phase = _PHASE_ORDER.get(when)
        if outcome == "rerun":
            if phase is not None and phase < 2:
                self._retried[nodeid] = phase  # this attempt's later reports follow
            else:
                self._retried.pop(nodeid, None)
            return True
        rerun_at = self._retried.get(nodeid) if self._retried else None
        if rerun_at is None:
            return False
        if phase is not None and phase > rerun_at:
            if phase == 2:
                del self._retried[nodeid]
            return True
        del self._retried[nodeid]  # this phase starts the next attempt
        return False

    def _hand_over(self, report: pytest.TestReport) -> None:
        session = self.session
        if not session.owns_session():
            return  # a forked child's reports: the parent records this session
        nodeid = report.nodeid
        retried = self._retried_attempt(report)
        ended = report.when == "teardown" or (
            # xdist's report of a crashed worker's test: no teardown report follows.
            report.when not in _PHASE_ORDER and not retried
        )
        payload: Payload | str | Mapping[str, Any] | None = None
        recorder = session.live.get(nodeid) if ended or retried else None
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
        if session.ledger is None:
            return
        if payload is None:
            # Popped: the terminal reporter keeps every report until the session
            # ends, and a payload it no longer needs is memory that grows with it.
            payload = report.__dict__.pop("ldd", None)
        if retried or not ended:
            return
        if self.serial:
            assert payload is None or isinstance(payload, Payload)
            self._pending.append((nodeid, payload))
        else:
            self._write(nodeid, payload)

    def write_pending(self) -> None:
        """Write what the tests finished since the last call handed over (serial run)."""
        while self._pending:
            nodeid, payload = self._pending.pop(0)
            with HeldSignals():
                self._write(nodeid, payload)

    def _write(self, nodeid: str, payload: Payload | str | Mapping[str, Any] | None) -> None:
        """Write one test's unit and count the test (the controller, or a serial run)."""
        session = self.session
        ledger = session.ledger
        assert ledger is not None
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
        ledger.count_test()
