"""The ``ldd`` and ``ldd_session`` fixtures: what a test records through.

``ldd`` belongs to one test and records into that test's recorder; used after its
test ended it says so (instead of recording into a test that never reports again).
``ldd_session`` serves fixtures of any scope: each observation belongs to the test
running when it is made.  Under ``--ldd-off`` both accept every call and keep
nothing.  The fixture functions themselves stand in the plugin module
(:mod:`pytest_ldd.plugin`); these are the objects they return.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ldd.errors import LddAdvisoryWarning, LddError, UnknownMetricError
from pytest_ldd.plugin.stash import PLAN, SESSION

if TYPE_CHECKING:
    from pytest_ldd.model.gates import Breach
    from pytest_ldd.model.statistics import MetricState
    from pytest_ldd.plugin.recorder import TestRecorder

__all__ = [
    "CURRENT_PLUGIN",
    "LddFixture",
    "fixture_for",
    "ldd_fixture",
    "ldd_session_fixture",
    "recorder_for",
    "warn_advisory",
]

CURRENT_PLUGIN = "ldd-current"


class LddFixture:
    """The ``ldd`` fixture: record observations and episodes, scope gates."""

    __slots__ = ("_item", "_observation_hook", "_test_recorder")

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._test_recorder: TestRecorder | None = None
        # item.ihook looks up the item's conftest files on every access: only when
        # someone implements the hook at all, and then once per test.
        everywhere = item.config.hook.pytest_ldd_observation
        self._observation_hook = (
            item.ihook.pytest_ldd_observation if everywhere.get_hookimpls() else None
        )

    @property
    def _recorder(self) -> TestRecorder:
        recorder = self._test_recorder
        if recorder is None:
            recorder = self._test_recorder = recorder_for(self._item)
        if recorder.closed:
            # Kept past its test (in a global, a wider-scoped fixture, a thread):
            # what it observed would belong to no test and be dropped.
            __tracebackhide__ = True
            pytest.fail(
                f"the ldd fixture of {self._item.nodeid} was used after that test "
                "ended: observe through the ldd fixture of the test that is running, "
                "or through ldd_session in fixtures of wider scope",
                pytrace=False,
            )
        return recorder

    def observe(self, name: str, observed: Any, predicted: Any = None) -> None:
        """Record one raw observed value of ``name``, with an optional raw prediction."""
        __tracebackhide__ = True
        problem: str | None = None
        try:
            breaches = self._recorder.observe(name, observed, predicted)
        except UnknownMetricError as exc:
            problem = self._unknown(exc.name or name, str(exc))
        except LddError as exc:
            problem = str(exc)
        if problem is not None:
            # Failing outside the except block keeps the message from being shown twice.
            pytest.fail(problem, pytrace=False)
        if self._item.config.stash[SESSION].junit_properties:
            properties = self._item.user_properties
            properties.append((f"ldd.{name}", observed))
            if predicted is not None:
                properties.append((f"ldd.{name}.predicted", predicted))
        hook = self._observation_hook
        if hook is not None:
            from pytest_ldd.model.observation import Observation

            hook(item=self._item, observation=Observation(name, observed, predicted))
        if breaches:
            warn_advisory(self._item, breaches)

    def episode(self, episode: Any, gold: Any = None) -> dict[str, Any]:
        """Grade an agent episode; its success and dollars become observations.

        Returns the scores by metric name.  A failed episode does not fail the
        test by itself: gates decide.  An episode the checker could not grade
        (inconclusive) makes the running phase an error once it ends.
        """
        __tracebackhide__ = True
        problem: str | None = None
        try:
            scores, breaches = self._recorder.episode(episode, gold)
        except LddError as exc:
            problem = f"{getattr(episode, 'task_id', episode)!r}: {exc}"
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        doubt = scores["task_success"].inconclusive
        # An inconclusive episode's scores observed nothing: no property, no observation.
        if self._item.config.stash[SESSION].junit_properties and not doubt:
            for name, score in scores.items():
                self._item.user_properties.append((f"ldd.{name}", score.value))
        if self._observation_hook is not None and not doubt:
            from pytest_ldd.model.observation import Observation

            for name, score in scores.items():
                self._observation_hook(item=self._item, observation=Observation(name, score.value))
        warn_advisory(self._item, breaches)
        if doubt:
            from pytest_ldd.plugin.inconclusive import register

            # The phase goes on (a corpus test grades every episode); its report
            # becomes an error when it ends.
            register(self._item.config.stash[SESSION], self._item.config)
        self._item.ihook.pytest_ldd_episode(
            item=self._item, episode=episode, gold=gold, scores=scores
        )
        return scores

    @contextmanager
    def gate(self, name: str) -> Iterator[None]:
        """Enforce the assertions inside only if ``name`` is load-bearing.

        For an advisory metric a failed assertion is caught and reported as an
        advisory breach; the test goes on.
        """
        __tracebackhide__ = True
        recorder = self._recorder
        if name not in recorder.ctx.registry:
            from pytest_ldd.plugin.recorder import unknown_metric_message

            pytest.fail(self._unknown(name, unknown_metric_message(name)), pytrace=False)
        try:
            yield
        except AssertionError as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "assertion failed"
            breach = recorder.gate_breach(name, detail)
            if breach.enforced:
                raise
            warn_advisory(self._item, [breach])

    def state(self, name: str) -> MetricState:
        """The state of ``name`` at session start (the one its gates use)."""
        __tracebackhide__ = True
        ctx = self._recorder.ctx
        state = ctx.start_state(name)
        if state is not None:
            return state
        if name not in ctx.registry:
            from pytest_ldd.plugin.recorder import unknown_metric_message

            pytest.fail(self._unknown(name, unknown_metric_message(name)), pytrace=False)
        return ctx.registry.state(name)

    def _unknown(self, name: str, message: str) -> str:
        """``message`` about an unknown metric, with where a nearer project declares it."""
        from pytest_ldd.plugin.recorder import nearer_declaration

        config = self._item.config
        return message + nearer_declaration(
            name, Path(self._item.path), config.rootpath, config.invocation_params.dir
        )

    def is_load_bearing(self, name: str) -> bool:
        """Whether ``name`` was load-bearing at session start."""
        return self.state(name).is_load_bearing

    def take_yielded(self, value: Any) -> None:
        """Record one value a yield test yielded (what ``yield value`` does in a test)."""
        __tracebackhide__ = True
        from pytest_ldd.model.observation import Observation

        if type(value) is Observation:
            self.observe(value.name, value.observed, value.predicted)
            return
        from pytest_ldd.agents import Episode

        if isinstance(value, Episode):
            self.episode(value)
        elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Episode):
            self.episode(value[0], value[1])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            names = self._item.stash[PLAN].names if PLAN in self._item.stash else ()
            if len(names) != 1:
                pytest.fail(
                    f"{self._item.nodeid} yielded a bare number ({value!r}) but has "
                    f"{len(names)} metric markers: yield Observation(name, value) "
                    "unless the test has exactly one @pytest.mark.metric",
                    pytrace=False,
                )
            self.observe(names[0], value)
        else:
            pytest.fail(
                f"{self._item.nodeid} yielded a {type(value).__name__} ({value!r:.60}): a "
                "pytest-ldd test may yield an Observation, an Episode, an (Episode, gold) "
                "tuple, or a number when it has exactly one @pytest.mark.metric",
                pytrace=False,
            )


class _SharedLddFixture(LddFixture):
    """The ``ldd_session`` fixture: records into whichever test is running."""

    __slots__ = ("_tracker",)

    def __init__(self, item: pytest.Item, tracker: _CurrentTest) -> None:
        super().__init__(item)
        self._tracker = tracker

    @property
    def _recorder(self) -> TestRecorder:
        item = self._tracker.item
        if item is None:
            __tracebackhide__ = True
            pytest.fail(
                "ldd_session was used while no test was running: an observation "
                "belongs to a test (make it in a fixture's setup or teardown, or in a test)",
                pytrace=False,
            )
        if item is not self._item:
            self._item = item
            self._test_recorder = None
            everywhere = item.config.hook.pytest_ldd_observation
            self._observation_hook = (
                item.ihook.pytest_ldd_observation if everywhere.get_hookimpls() else None
            )
        recorder = self._test_recorder
        if recorder is None or recorder.closed:
            recorder = self._test_recorder = recorder_for(item)
        return recorder


class _OffFixture(LddFixture):
    """The ``ldd`` fixture under ``--ldd-off``: every call is accepted, nothing is kept."""

    __slots__ = ()

    @property
    def _recorder(self) -> TestRecorder:
        __tracebackhide__ = True
        pytest.fail("pytest-ldd is off in this session (--ldd-off)", pytrace=False)

    def observe(self, name: str, observed: Any, predicted: Any = None) -> None:
        """Accept and drop one value."""

    def episode(self, episode: Any, gold: Any = None) -> dict[str, Any]:
        """Accept and drop one episode; no scores."""
        return {}

    @contextmanager
    def gate(self, name: str) -> Iterator[None]:
        """Gates are off: a failed assertion inside is dropped."""
        with suppress(AssertionError):
            yield

    def is_load_bearing(self, name: str) -> bool:
        """Nothing is load-bearing while pytest-ldd is off."""
        return False

    def take_yielded(self, value: Any) -> None:
        """Accept and drop one yielded value."""


class _CurrentTest:
    """Which test is running (registered as ``ldd-current`` on ldd_session's first use).

    Per-test hooks cost every test of the session: only a session that asks for
    ``ldd_session`` pays for these.
    """

    def __init__(self, item: pytest.Item | None) -> None:
        self.item = item

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.item = item

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.item = None


def ldd_fixture(request: pytest.FixtureRequest) -> LddFixture:
    """The value of the ``ldd`` fixture for the requesting test."""
    if request.config.stash[SESSION].off:
        return _OffFixture(request.node)
    fixture = LddFixture(request.node)
    # Bound to its test now: used after the test ended, it says so instead of
    # recording into a test that will never report again.
    fixture._test_recorder = recorder_for(request.node)
    return fixture


def ldd_session_fixture(request: pytest.FixtureRequest) -> LddFixture:
    """The value of the ``ldd_session`` fixture (one per session)."""
    if request.config.stash[SESSION].off:
        return _OffFixture(request.node)
    manager = request.config.pluginmanager
    tracker = manager.get_plugin(CURRENT_PLUGIN)
    if tracker is None:
        # The test that first asks for it is already past pytest_runtest_setup.
        tracker = _CurrentTest(getattr(request, "_pyfuncitem", None))
        manager.register(tracker, CURRENT_PLUGIN)
    assert isinstance(tracker, _CurrentTest)
    item = tracker.item
    if item is None:
        raise pytest.UsageError("pytest-ldd: ldd_session was requested outside a test")
    return _SharedLddFixture(item, tracker)


def fixture_for(item: pytest.Item) -> LddFixture:
    """A fixture object recording into ``item`` (what a yield test's values go through)."""
    if item.config.stash[SESSION].off:
        return _OffFixture(item)
    return LddFixture(item)


def recorder_for(item: pytest.Item) -> TestRecorder:
    """The recorder of ``item``, created on first use."""
    return item.config.stash[SESSION].recorder_for(item)


def warn_advisory(item: pytest.Item, breaches: list[Breach]) -> None:
    """Warn of each advisory breach (``LddAdvisoryWarning``), never raising it."""
    advisory = [b for b in breaches if not b.enforced]
    if not advisory:
        return
    # Advisory means "never fails": a project's `filterwarnings = error` must not turn
    # this warning into a failure, so it is always shown, never raised.
    with warnings.catch_warnings():
        warnings.simplefilter("always", LddAdvisoryWarning)
        for breach in advisory:
            item.warn(LddAdvisoryWarning(breach.message))
