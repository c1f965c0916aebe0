"""One pytest session of pytest-ldd: :class:`LddSession`, started only when it is used.

A session object is made for every pytest session (``pytest_configure``); it starts
(opens the store and the registry, registers itself as the plugin ``ldd-session``
with its per-session hooks) only when the session records, configures pytest-ldd, is
an xdist controller, or collected a test that uses it: most sessions on a machine
with pytest-ldd installed never import its store, registry and metric modules
(docs/performance.md).

It coordinates the jobs, each in a module of its own: starting the run
(:mod:`~pytest_ldd.plugin.startup`), the ``metric`` markers
(:mod:`~pytest_ldd.plugin.markers`), taking each test's payload to the ledger
(:mod:`~pytest_ldd.plugin.routing`), holding back warnings of store work inside hooks
(:mod:`~pytest_ldd.plugin.held_warnings`), ending the session
(:mod:`~pytest_ldd.plugin.ending`), and the reports (:mod:`~pytest_ldd.plugin.reports`).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_ldd.errors import LddError

# Imported as pytest loads the plugin: the clocks are taken before any test can fake them.
from pytest_ldd.model import clock

if TYPE_CHECKING:
    from pytest_ldd.model.gates import Bound
    from pytest_ldd.plugin.held_warnings import HeldWarnings
    from pytest_ldd.plugin.ledger import SessionLedger
    from pytest_ldd.plugin.markers import Declarations, TestPlan
    from pytest_ldd.plugin.recorder import RunContext, TestRecorder
    from pytest_ldd.plugin.routing import PayloadRoute
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["SESSION_PLUGIN", "LddSession", "usage_line"]

SESSION_PLUGIN: Final = "ldd-session"


def usage_line(error: object) -> str:
    """The one line of a usage error (exit status 4), shown safely."""
    from pytest_ldd.plugin.reports import shown

    return f"pytest-ldd: {shown(error)}"


class LddSession:
    """Per-run state of pytest-ldd, registered as the plugin ``ldd-session`` once started."""

    #: What :meth:`recorder_for` builds a recorder with, once imported.
    _recorder_parts: tuple[type[TestRecorder], pytest.StashKey[TestPlan], TestPlan] | None = None

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: The process that started the session: the only one that records and ends it.
        self.pid = os.getpid()
        #: ``--co`` writes nothing, whatever ``--ldd`` says.
        self.collect_only = bool(config.getoption("collectonly", False))
        #: ``ldd_junit_properties``: observations become JUnit XML properties.
        self.junit_properties = bool(config.getini("ldd_junit_properties"))
        #: ``--ldd-off``: markers, fixtures and yield tests work; nothing else happens.
        self.off = bool(config.getoption("ldd_off"))
        self.recording: bool = (
            bool(config.getoption("ldd_record")) and not self.collect_only and not self.off
        )
        self.is_worker = hasattr(config, "workerinput")
        self.ctx: RunContext | None = None
        self.ledger: SessionLedger | None = None
        self.document: dict[str, Any] | None = None
        self.corpus_bounds: dict[str, tuple[Bound, ...]] = {}
        self.error: str | None = None
        self.usage_error: str | None = None
        #: The recorders of the tests running or about to report, by node id.
        self.live: dict[str, TestRecorder] = {}
        #: When the session started (the real wall clock), formatted once it is needed.
        self.started: float | None = None
        #: Errors of the session end, shown in the summary.
        self.end_errors: list[str] = []
        self._started = False
        self._declarations: Declarations | None = None
        self._route: PayloadRoute | None = None
        self._warnings: HeldWarnings | None = None

    def owns_session(self) -> bool:
        """Whether this process started the session (see :attr:`pid`).

        A test that forks and whose child returns into pytest instead of exiting
        leaves a second process running the rest of the session: it records
        nothing, and never ends the session, so no pair is stored twice.
        """
        return os.getpid() == self.pid

    @property
    def warnings(self) -> HeldWarnings:
        """The warnings of store work held back inside hooks (and those made errors)."""
        if self._warnings is None:
            from pytest_ldd.plugin.held_warnings import HeldWarnings

            self._warnings = HeldWarnings(self.config)
        return self._warnings

    # -- start ---------------------------------------------------------------------

    def start_session(self) -> None:
        """At session start: check the command line; start now when that is sure."""
        from pytest_ldd.plugin.options import check_value_spelling, configures_ldd

        check_value_spelling(self.config)
        self.started = clock.now()
        # An xdist controller collects nothing, so it starts now.  A project that
        # configures pytest-ldd ([tool.ldd]) uses it: it starts now too, so that a
        # mistake there is reported whatever the tests do.
        if (
            self.recording
            or self.config.getoption("ldd_summary") == "full"
            or self.config.pluginmanager.has_plugin("dsession")
            or configures_ldd(self.config.rootpath)
        ):
            self.ensure_started()

    def ensure_started(self) -> None:
        """Open the store and the registry, once; a usage error names what is wrong."""
        if self._started or self.off:
            return
        self._started = True
        self.config.pluginmanager.register(self, SESSION_PLUGIN)
        from pytest_ldd.plugin.routing import PayloadRoute
        from pytest_ldd.plugin.startup import start_run

        self._route = PayloadRoute(self)
        try:
            with self.warnings.kept():
                self.ctx, self.corpus_bounds = start_run(
                    self.config, recording=self.recording, is_worker=self.is_worker
                )
        except LddError as exc:
            raise pytest.UsageError(usage_line(exc)) from None
        if not self.is_worker:
            from pytest_ldd.plugin.integrations import register_integrations
            from pytest_ldd.plugin.ledger import SessionLedger

            register_integrations(self)

            started_at = clock.utc_timestamp(self.started)
            self.ledger = SessionLedger(self.ctx, started_at=started_at)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Hand the session id and start states to each xdist worker."""
        if self.ctx is None:
            return
        from pytest_ldd.plugin.startup import worker_input

        node.workerinput["ldd"] = worker_input(self.ctx)

    # -- collection ------------------------------------------------------------------

    def collected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """After collection: start if a test uses pytest-ldd; plan each marked test."""
        from pytest_ldd.plugin.options import FIXTURES
        from pytest_ldd.plugin.stash import YIELD_TESTS
        from pytest_ldd.plugin.yield_tests import YIELD_PLUGIN, YieldTests, is_unittest_generator

        manager = config.pluginmanager
        if any(is_unittest_generator(item) for item in items):
            config.stash[YIELD_TESTS] = True
        self._watch_hypothesis(config, items)
        if config.stash.get(YIELD_TESTS, False) and not manager.has_plugin(YIELD_PLUGIN):
            manager.register(YieldTests(), YIELD_PLUGIN)
        if self.off:
            return
        try:
            marked = [(item, list(item.iter_markers("metric"))) for item in items]
            marked = [(item, markers) for item, markers in marked if markers]
            if self.ctx is None and (
                marked
                or config.stash.get(YIELD_TESTS, False)
                or any(FIXTURES & set(getattr(item, "fixturenames", ())) for item in items)
            ):
                self.ensure_started()
            if self.ctx is None:
                return
            gated = bool(self.ctx.config_bounds) | self._plan(marked)
        except pytest.UsageError as exc:
            # A marker's name or keywords are the test's, shown as written: escaped.
            from pytest_ldd.plugin.reports import shown

            exc = pytest.UsageError(shown(exc))
            if not self.is_worker:
                raise exc from None
            # A usage error raised inside an xdist worker crashes the worker; instead it
            # runs nothing and hands the message to the controller, which stops the
            # session with exit status 4 like a serial run.
            workeroutput: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            workeroutput["ldd_usage_error"] = str(exc)
            items.clear()
            return
        from pytest_ldd.plugin.phases import GATES_PLUGIN, GateFailures

        if gated and not manager.has_plugin(GATES_PLUGIN):
            manager.register(GateFailures(self), GATES_PLUGIN)

    def _watch_hypothesis(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        # Asked of every item: a plain attribute check before any import.
        if not any(hasattr(getattr(item, "obj", None), "hypothesis") for item in items):
            return
        from pytest_ldd.plugin.hypothesis_examples import (
            HYPOTHESIS_PLUGIN,
            HypothesisExamples,
            is_hypothesis_test,
            is_hypothesis_yield_test,
        )
        from pytest_ldd.plugin.stash import YIELD_TESTS

        hypothesis_tests = [item for item in items if is_hypothesis_test(item)]
        if any(is_hypothesis_yield_test(item) for item in hypothesis_tests):
            config.stash[YIELD_TESTS] = True
        manager = config.pluginmanager
        if hypothesis_tests and not manager.has_plugin(HYPOTHESIS_PLUGIN):
            manager.register(HypothesisExamples(), HYPOTHESIS_PLUGIN)

    def _plan(self, marked: list[tuple[pytest.Item, list[pytest.Mark]]]) -> bool:
        """Declare the markers' metrics and plan each marked test; whether any has bounds."""
        if not marked:
            return False
        from pytest_ldd.plugin.markers import Declarations
        from pytest_ldd.plugin.stash import PLAN

        assert self.ctx is not None
        if self._declarations is None:
            self._declarations = Declarations(self.ctx.registry, self.ctx.declared)
        declarations = self._declarations
        declarations.declare_all(marked)
        gated = False
        for item, markers in marked:
            plan = item.stash[PLAN] = declarations.plan(item, markers)
            gated = gated or bool(plan.bounds)
        return gated

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Collect a usage error found by an xdist worker."""
        message = getattr(node, "workeroutput", {}).get("ldd_usage_error")
        if message and self.usage_error is None:
            self.usage_error = message

    # -- running -----------------------------------------------------------------------

    def recorder_for(self, item: pytest.Item) -> TestRecorder:
        """The recorder of ``item``, created on first use."""
        recorder = self.live.get(item.nodeid)
        if recorder is not None:
            return recorder
        self.ensure_started()
        if self.ctx is None:
            raise pytest.UsageError("pytest-ldd is not active in this session")
        # Imported once per session, not once per test (the plugin module must not
        # import them: a session that does not use pytest-ldd never pays for them).
        recorder_type, plan_key, no_plan = self._recorder_parts or _recorder_parts()
        self._recorder_parts = (recorder_type, plan_key, no_plan)
        plan = item.stash.get(plan_key, None) or no_plan
        group = getattr(item, "originalname", None) or item.name
        module = item.nodeid.split("::", 1)[0]
        recorder = recorder_type(
            self.ctx,
            item.nodeid,
            bounds=plan.bounds,
            predictors=plan.predictors,
            check=plan.check,
            group=f"{module}::{group}",
        )
        self.live[item.nodeid] = recorder
        return recorder

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Hand over what the test recorded, with its teardown report (tryfirst: an
        xdist worker attaches it to the report before xdist sends it)."""
        assert self._route is not None
        self._route.route(report)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        """Write the test's records once its whole protocol is over (serial run).

        Outermost (tryfirst): pytest-timeout's wrapper, inside this one, has cancelled
        the test's timer by then, and pytest-rerunfailures has run every attempt.
        """
        try:
            return (yield)
        finally:
            self.write_pending()

    def write_pending(self) -> None:
        """Write the records handed over and not written yet (a serial run's last test)."""
        route = self._route
        if route is not None and route.serial:
            route.write_pending()

    # -- end -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        from pytest_ldd.plugin.ending import end_session

        try:
            result = yield
        except BaseException:
            # -x, --sw, Ctrl-C, session.shouldstop: the test loop stops early, and
            # the session still ends: what was recorded is counted and reported, and
            # its session record says it was interrupted.
            end_session(self, session, interrupted=True)
            raise
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        end_session(self, session, interrupted=bool(session.shouldstop or session.shouldfail))
        if self.error is not None:
            unrecorded = self.ledger.unrecorded_text() if self.ledger is not None else ""
            raise pytest.UsageError(usage_line(self.error + unrecorded))
        if self.warnings.errors and not self.is_worker:
            # (A worker reads the store the controller reads, and warns alike.)
            raise pytest.UsageError(usage_line("; ".join(self.warnings.errors)))
        return result

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_ldd.plugin.reports import write_reports

        if self.owns_session():
            write_reports(self, session)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_ldd.plugin.reports import terminal_summary

        terminal_summary(self, terminalreporter)


if TYPE_CHECKING:

    def _is_a_session_state(session: LddSession) -> SessionState:
        # The type checker proves here that the session offers what its jobs use.
        return session


def _recorder_parts() -> tuple[type[TestRecorder], pytest.StashKey[TestPlan], TestPlan]:
    from pytest_ldd.plugin.markers import NO_PLAN
    from pytest_ldd.plugin.recorder import TestRecorder
    from pytest_ldd.plugin.stash import PLAN

    return TestRecorder, PLAN, NO_PLAN
