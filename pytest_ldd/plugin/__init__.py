"""The pytest plugin: hooks only, translating between pytest and the pure modules.

Loaded through the ``pytest11`` entry point ``ldd``; ``-p no:ldd`` turns it off.
Heavy imports happen inside hooks, so loading the plugin costs next to nothing.
"""

from __future__ import annotations

import functools
import inspect
import time
import unittest
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ldd.errors import LddAdvisoryWarning, LddError

if TYPE_CHECKING:
    from pytest_ldd.model.gates import Bound
    from pytest_ldd.model.statistics import MetricState
    from pytest_ldd.plugin.recording import Breach, RunContext, SessionLedger, TestRecorder

__all__ = [
    "HTML_OPTION",
    "JUNIT_INI",
    "LDD_DIR_OPTION",
    "OFF_OPTION",
    "RECORD_OPTION",
    "REPORT_OPTION",
    "SUMMARY_OPTION",
    "LddFixture",
]

#: Option names, importable by tests and other plugins.
RECORD_OPTION = "--ldd"
LDD_DIR_OPTION = "--ldd-dir"
LDD_STORE_OPTION = "--ldd-store"
REPORT_OPTION = "--ldd-report"
HTML_OPTION = "--ldd-html"
SUMMARY_OPTION = "--ldd-summary"
OFF_OPTION = "--ldd-off"
JUNIT_INI = "ldd_junit_properties"

MARKER_KEYWORDS = (
    "kind",
    "unit",
    "description",
    "version",
    "normalize_scale",
    "le",
    "lt",
    "ge",
    "gt",
    "predictor",
    "check",
)
_SPEC_KEYWORDS = ("kind", "unit", "description", "version", "normalize_scale")

MARKER_LINE = (
    "metric(name, *, kind=None, unit=None, description=None, version=1, "
    "normalize_scale=None, le=None, lt=None, ge=None, gt=None, predictor=None, "
    "check=None): declare a pytest-ldd metric for this test, with optional gates "
    "on every observed value (enforced once the metric is load-bearing)."
)


class _TestPlan:
    """What a test's ``metric`` markers declare.

    A plain slotted class: building a dataclass costs the import of this module,
    which every pytest session pays (docs/performance.md).
    """

    __slots__ = ("bounds", "check", "names", "predictors")

    def __init__(
        self,
        names: tuple[str, ...] = (),
        bounds: dict[str, tuple[Bound, ...]] | None = None,
        predictors: dict[str, str] | None = None,
        check: Any = None,
    ) -> None:
        self.names = names
        self.bounds: dict[str, tuple[Bound, ...]] = bounds if bounds is not None else {}
        self.predictors: dict[str, str] = predictors if predictors is not None else {}
        self.check = check


_NO_PLAN = _TestPlan()


_SESSION_KEY = pytest.StashKey["LddSession"]()
_YIELD_TESTS_KEY = pytest.StashKey[bool]()
_SESSION_PLUGIN = "ldd-session"
_YIELD_PLUGIN = "ldd-yield"
_GATES_PLUGIN = "ldd-gates"
_CURRENT_PLUGIN = "ldd-current"
_HYPOTHESIS = _HYPOTHESIS_PLUGIN = "ldd-hypothesis"
_PLAN_KEY = pytest.StashKey[_TestPlan]()
#: The fixtures that make a test use pytest-ldd.
_FIXTURES = frozenset({"ldd", "ldd_session"})


# -- registration ----------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
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

    parser.addini(
        JUNIT_INI,
        type="bool",
        default=False,
        help=(
            "Record every observation as <property> elements of its test in JUnit XML "
            "(--junitxml): ldd.NAME = observed value, ldd.NAME.predicted = prediction."
        ),
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_ldd.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_LINE)
    # Registered as a plugin (its per-session and per-test hooks) only once started:
    # a session that does not use pytest-ldd does not pay for them.
    config.stash[_SESSION_KEY] = LddSession(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION_KEY].start_session()


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    config.stash[_SESSION_KEY].collected(config, items)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_KEY in config.stash:
        del config.stash[_SESSION_KEY]
    for name in (_SESSION_PLUGIN, _YIELD_PLUGIN, _GATES_PLUGIN, _CURRENT_PLUGIN, _HYPOTHESIS):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


# -- yield tests -----------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> list[pytest.Function] | None:
    """Collect generator test functions, which pytest alone refuses."""
    func = getattr(obj, "__func__", obj)
    if inspect.isasyncgenfunction(func) and collector.istestfunction(obj, name):
        # pytest-asyncio marks an async generator test xfail and runs nothing: a
        # test whose observations silently vanish.  Refused, with what to do instead.
        msg = (
            f"{collector.nodeid}::{name} is an async generator: pytest-ldd runs "
            "generator tests, not async ones; write an async def test that observes "
            "through the ldd fixture (ldd.observe(...)) instead of yielding"
        )
        raise pytest.Collector.CollectError(msg)
    if not _is_generator_function(func) or not getattr(func, "__test__", True):
        return None
    if not collector.istestfunction(obj, name):
        return None
    # _genfunctions is how pytest itself turns a test function into items: it applies
    # parametrize, fixtures and marks, so yield tests behave like any other test.
    collector.config.stash[_YIELD_TESTS_KEY] = True
    return list(collector._genfunctions(name, func))


class _YieldTests:
    """Runs generator tests; registered (as ``ldd-yield``) once collection made one.

    Per-test hooks cost every test of the session: a project without yield tests
    does not pay for this one.
    """

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run a generator test, treating each yielded value as an observation."""
        testfunction = pyfuncitem.obj
        if not _is_generator_function(testfunction):
            return None
        funcargs = pyfuncitem.funcargs
        testargs = {arg: funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
        _run_yielded(pyfuncitem, testfunction(**testargs))
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """Run a generator method of a ``unittest.TestCase`` the same way.

        unittest calls the method and drops the generator it returns, so nothing
        after the first ``yield`` would run: the item gets a method that runs it.
        """
        if not isinstance(item, pytest.Function) or not _is_unittest_generator(item):
            return
        method = item.obj

        def run_generator_method() -> None:
            __tracebackhide__ = True
            _run_yielded(item, method())

        # pytest calls item.obj in place of the instance's method (its tracing hook
        # for --pdb --trace wraps it the same way).
        item.obj = run_generator_method


def _run_yielded(item: pytest.Item, generator: Generator[Any, None, None]) -> None:
    """Treat each value a yield test yields as an observation."""
    __tracebackhide__ = True
    fixture = _fixture_for(item)
    try:
        for value in generator:
            fixture._take_yielded(value)
    finally:
        generator.close()


class _HypothesisExamples:
    """Records one example per ``@given`` test run (registered as ``ldd-hypothesis``).

    Hypothesis calls the test body once per example, shrinking included; only the
    last example counts (the failing one when the test fails).  A body that is a
    generator (a yield test under ``@given``) is run by pytest-ldd.  Both go
    through ``test.hypothesis.inner_test``, the seam Hypothesis offers plugins.
    """

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        inner = getattr(handle, "inner_test", None)
        if handle is None or inner is None:
            return (yield)
        uses_ldd = (
            _is_generator_function(inner)
            or _PLAN_KEY in item.stash
            or _FIXTURES.intersection(getattr(item, "fixturenames", ()))
        )
        if not uses_ldd:
            return (yield)
        _exempt_the_ldd_fixture(item)
        handle.inner_test = _one_example_at_a_time(item, inner)
        try:
            return (yield)
        finally:
            handle.inner_test = inner


def _exempt_the_ldd_fixture(item: pytest.Item) -> None:
    """Let ``ldd`` pass Hypothesis' ``function_scoped_fixture`` health check.

    The check warns that a function-scoped fixture is not reset between examples.
    What ``ldd`` recorded is reset before each example (``_one_example_at_a_time``),
    so for a test whose only function-scoped fixture argument is ``ldd`` the check
    is suppressed for that test; with any other one it still runs, for that one.
    """
    if "ldd" not in getattr(item, "fixturenames", ()) or not isinstance(item, pytest.Function):
        return
    definitions = item._fixtureinfo.name2fixturedefs
    argnames = item._fixtureinfo.argnames
    function_scoped = {
        name
        for name in argnames
        if name in definitions and definitions[name][-1].scope == "function"
    }
    if function_scoped != {"ldd"}:
        return
    from hypothesis import HealthCheck, settings

    func = getattr(item.obj, "__func__", item.obj)
    current: Any = getattr(func, "_hypothesis_internal_use_settings", None) or settings()
    if HealthCheck.function_scoped_fixture in current.suppress_health_check:
        return
    func._hypothesis_internal_use_settings = settings(
        parent=current,
        suppress_health_check=[
            *current.suppress_health_check,
            HealthCheck.function_scoped_fixture,
        ],
    )


def _one_example_at_a_time(item: pytest.Item, inner: Callable[..., Any]) -> Callable[..., Any]:
    session = item.config.stash[_SESSION_KEY]
    is_generator = _is_generator_function(inner)
    first: list[tuple[Any, ...]] = []

    @functools.wraps(inner)
    def one_example(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if not session.off:
            recorder = session.live.get(item.nodeid) or _recorder_for(item)
            if first:
                recorder.restore(first[0])
            else:
                first.append(recorder.checkpoint())
        result = inner(*args, **kwargs)
        if is_generator:
            _run_yielded(item, result)
            return None
        return result

    return one_example


def _is_hypothesis_test(item: pytest.Item) -> bool:
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    return getattr(handle, "inner_test", None) is not None


def _is_hypothesis_yield_test(item: pytest.Item) -> bool:
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    return _is_generator_function(getattr(handle, "inner_test", None))


class _GateFailures:
    """Fails a test whose load-bearing gates it breached (registered as ``ldd-gates``).

    A value may be observed in any phase: in a fixture's setup, in the test (a
    function, a yield test, a ``unittest.TestCase`` method), or in a fixture's
    teardown.  Each phase is checked when it ends, so a breach fails the phase it
    happened in, the way pytest reports any other failure there (a teardown breach
    is an error in the teardown phase).

    Registered only when some gate bound can apply (``[tool.ldd.metrics]`` bounds
    or a marker's ``le``/``lt``/``ge``/``gt``): only then can a test collect failures.
    """

    def __init__(self, session: LddSession) -> None:
        self.session = session

    def _phase(self, item: pytest.Item) -> Generator[None, object, object]:
        try:
            result = yield
        except BaseException:
            # The phase failed already: that failure is the one shown (the breach
            # stays in the summary), and it is not carried into the next phase.
            self._take(item)
            raise
        failures = self._take(item)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
        return result

    def _take(self, item: pytest.Item) -> list[str]:
        recorder = self.session.live.get(item.nodeid)
        if recorder is None or not recorder.failures:
            return []
        failures, recorder.failures = recorder.failures, []
        return failures

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        return (yield from self._phase(item))


def _is_unittest_generator(item: pytest.Item) -> bool:
    cls = getattr(item, "cls", None)
    return (
        cls is not None
        and issubclass(cls, unittest.TestCase)
        and _is_generator_function(getattr(cls, item.name, None))
    )


def _is_generator_function(obj: object) -> bool:
    # Asked of every name in every test module and of every test run: a plain
    # function is answered from its code flags, anything else by inspect.
    if type(obj) is FunctionType:
        return bool(obj.__code__.co_flags & inspect.CO_GENERATOR)
    return inspect.isgeneratorfunction(obj)


# -- the fixture -----------------------------------------------------------------


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
            recorder = self._test_recorder = _recorder_for(self._item)
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
        except LddError as exc:
            problem = str(exc)
        if problem is not None:
            # Failing outside the except block keeps the message from being shown twice.
            pytest.fail(problem, pytrace=False)
        if self._item.config.stash[_SESSION_KEY].junit_properties:
            properties = self._item.user_properties
            properties.append((f"ldd.{name}", observed))
            if predicted is not None:
                properties.append((f"ldd.{name}.predicted", predicted))
        hook = self._observation_hook
        if hook is not None:
            from pytest_ldd.model.observation import Observation

            hook(item=self._item, observation=Observation(name, observed, predicted))
        if breaches:
            _warn_advisory(self._item, breaches)

    def episode(self, episode: Any, gold: Any = None) -> dict[str, Any]:
        """Grade an agent episode; its success and dollars become observations.

        Returns the scores by metric name.  A failed episode does not fail the
        test by itself: gates decide.
        """
        __tracebackhide__ = True
        problem: str | None = None
        try:
            scores, breaches = self._recorder.episode(episode, gold)
        except LddError as exc:
            problem = f"{getattr(episode, 'task_id', episode)!r}: {exc}"
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        if self._item.config.stash[_SESSION_KEY].junit_properties:
            for name, score in scores.items():
                self._item.user_properties.append((f"ldd.{name}", score.value))
        if self._observation_hook is not None:
            from pytest_ldd.model.observation import Observation

            for name, score in scores.items():
                self._observation_hook(item=self._item, observation=Observation(name, score.value))
        _warn_advisory(self._item, breaches)
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
            from pytest_ldd.plugin.recording import unknown_metric_message

            pytest.fail(unknown_metric_message(name), pytrace=False)
        try:
            yield
        except AssertionError as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "assertion failed"
            breach = recorder.gate_breach(name, detail)
            if breach.enforced:
                raise
            _warn_advisory(self._item, [breach])

    def state(self, name: str) -> MetricState:
        """The state of ``name`` at session start (the one its gates use)."""
        __tracebackhide__ = True
        ctx = self._recorder.ctx
        state = ctx.start_state(name)
        if state is not None:
            return state
        if name not in ctx.registry:
            from pytest_ldd.plugin.recording import unknown_metric_message

            pytest.fail(unknown_metric_message(name), pytrace=False)
        return ctx.registry.state(name)

    def is_load_bearing(self, name: str) -> bool:
        """Whether ``name`` was load-bearing at session start."""
        return self.state(name).is_load_bearing

    def _take_yielded(self, value: Any) -> None:
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
            names = self._item.stash[_PLAN_KEY].names if _PLAN_KEY in self._item.stash else ()
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
            recorder = self._test_recorder = _recorder_for(item)
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

    def _take_yielded(self, value: Any) -> None:
        pass


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


@pytest.fixture
def ldd(request: pytest.FixtureRequest) -> LddFixture:
    """Record metric observations and agent episodes from inside a test."""
    if request.config.stash[_SESSION_KEY].off:
        return _OffFixture(request.node)
    fixture = LddFixture(request.node)
    # Bound to its test now: used after the test ended, it says so instead of
    # recording into a test that will never report again.
    fixture._test_recorder = _recorder_for(request.node)
    return fixture


@pytest.fixture(scope="session")
def ldd_session(request: pytest.FixtureRequest) -> LddFixture:
    """The ``ldd`` fixture for fixtures of any scope (module, class, session).

    Each observation belongs to the test running when it is made: a load-bearing
    breach in a module fixture's teardown is an error in the teardown of the
    module's last test, as pytest reports that fixture's own teardown errors.
    """
    if request.config.stash[_SESSION_KEY].off:
        return _OffFixture(request.node)
    manager = request.config.pluginmanager
    tracker = manager.get_plugin(_CURRENT_PLUGIN)
    if tracker is None:
        # The test that first asks for it is already past pytest_runtest_setup.
        tracker = _CurrentTest(getattr(request, "_pyfuncitem", None))
        manager.register(tracker, _CURRENT_PLUGIN)
    assert isinstance(tracker, _CurrentTest)
    item = tracker.item
    if item is None:
        raise pytest.UsageError("pytest-ldd: ldd_session was requested outside a test")
    return _SharedLddFixture(item, tracker)


def _fixture_for(item: pytest.Item) -> LddFixture:
    if item.config.stash[_SESSION_KEY].off:
        return _OffFixture(item)
    return LddFixture(item)


def _recorder_for(item: pytest.Item) -> TestRecorder:
    session = item.config.stash[_SESSION_KEY]
    recorder = session.live.get(item.nodeid)
    if recorder is None:
        recorder = session.recorder_for(item)
    return recorder


def _warn_nested_store(ldd_dir: Path, rootpath: Path) -> None:
    """Warn before a session makes a new ``.ldd`` folder below an existing one.

    Without a pytest config file, pytest's rootdir is the folder pytest was run
    from: run from a subfolder, a project would start a second, empty store.
    """
    if ldd_dir.exists():
        return
    for parent in ldd_dir.resolve().parent.parents:
        above = parent / ".ldd"
        if (above / "metrics.json").is_file():
            from pytest_ldd.errors import LddWarning

            warnings.warn(
                LddWarning(
                    f"pytest-ldd creates a new store {ldd_dir} below the store {above}: "
                    f"pytest's rootdir is {rootpath}. Run pytest from the project folder, "
                    "give the project a pytest config (e.g. [tool.pytest.ini_options] in "
                    "pyproject.toml), or pass --ldd-dir=... to use the existing store"
                ),
                stacklevel=2,
            )
            return


def _warn_advisory(item: pytest.Item, breaches: list[Breach]) -> None:
    advisory = [b for b in breaches if not b.enforced]
    if not advisory:
        return
    # Advisory means "never fails": a project's `filterwarnings = error` must not turn
    # this warning into a failure, so it is always shown, never raised.
    with warnings.catch_warnings():
        warnings.simplefilter("always", LddAdvisoryWarning)
        for breach in advisory:
            item.warn(LddAdvisoryWarning(breach.message))


# -- the session -----------------------------------------------------------------


class LddSession:
    """Per-run state of pytest-ldd, registered as the plugin ``ldd-session``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: ``--co`` writes nothing, whatever ``--ldd`` says.
        self.collect_only = bool(config.getoption("collectonly", False))
        #: ``ldd_junit_properties``: observations become JUnit XML properties.
        self.junit_properties = bool(config.getini(JUNIT_INI))
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
        self._declared: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        #: The recorders of the tests running or about to report, by node id.
        self.live: dict[str, TestRecorder] = {}
        self._started = False
        self.started_at: str | None = None
        #: Tests whose current attempt pytest-rerunfailures runs again.
        self._retried: set[str] = set()
        #: Warnings the filters made errors (see ``_warnings_kept``).
        self.warning_errors: list[str] = []
        #: Errors of the session end, shown in the summary.
        self.end_errors: list[str] = []

    # -- start ---------------------------------------------------------------------

    def start_session(self) -> None:
        """At session start: check the command line; start now when that is sure."""
        _check_value_spelling(self.config)
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        # A session that does not record starts pytest-ldd only once collection shows
        # a test that uses it: most sessions on a machine with pytest-ldd installed
        # never import its store, registry and metric modules (docs/performance.md).
        # An xdist controller collects nothing, so it starts now.  A project that
        # configures pytest-ldd ([tool.ldd]) uses it: it starts now too, so that a
        # mistake there is reported whatever the tests do.
        if (
            self.recording
            or self.config.getoption("ldd_summary") == "full"
            or self.config.pluginmanager.has_plugin("dsession")
            or _configures_ldd(self.config.rootpath)
        ):
            self.ensure_started()

    def ensure_started(self) -> None:
        """Open the store and the registry, once; a usage error names what is wrong."""
        if self._started or self.off:
            return
        self._started = True
        self.config.pluginmanager.register(self, _SESSION_PLUGIN)
        try:
            with self._warnings_kept():
                self._start()
        except LddError as exc:
            raise pytest.UsageError(f"pytest-ldd: {exc}") from None

    def _start(self) -> None:
        from pytest_ldd.calibration.calibrator import Calibrator
        from pytest_ldd.config import load_config
        from pytest_ldd.errors import InvalidSpecError
        from pytest_ldd.model.corpus import CORPUS_METRICS
        from pytest_ldd.model.gates import parse_bounds
        from pytest_ldd.plugin.recording import RunContext, SessionLedger, new_session_id

        config = self.config
        rootpath = Path(config.rootpath)
        ldd_config = load_config(rootpath)
        option_dir = config.getoption("ldd_dir")
        option_store = config.getoption("ldd_store")
        ldd_dir = Path(config.invocation_params.dir, option_dir) if option_dir else None
        store = ldd_config.open_store(option=option_store or None, ldd_dir=ldd_dir)
        folder = getattr(store, "ldd_dir", None)
        if self.recording and not self.is_worker and folder is not None:
            _warn_nested_store(folder, rootpath)
        # Workers never write: the controller owns the .ldd folder.
        registry = ldd_config.open_registry(store, read_only=not self.recording or self.is_worker)
        config_bounds: dict[str, tuple[Bound, ...]] = {}
        config_predictors: dict[str, str] = {}
        for name, metric_config in ldd_config.metrics.items():
            where = f"[tool.ldd.metrics.{name}]"
            bounds = parse_bounds(metric_config.bounds(), where=where)
            if bounds:
                config_bounds[name] = bounds
            if metric_config.predictor:
                config_predictors[name] = metric_config.predictor
        for name, options in ldd_config.gates.items():
            if name not in CORPUS_METRICS:
                msg = (
                    f"[tool.ldd.gates] {name}: corpus gates apply to the session aggregates "
                    f"{', '.join(CORPUS_METRICS)} (got {name!r}); gate other metrics with "
                    f"le/lt/ge/gt in [tool.ldd.metrics.{name}] or on the marker"
                )
                raise InvalidSpecError(msg)
            self.corpus_bounds[name] = parse_bounds(options, where=f"[tool.ldd.gates] {name}")
        config.hook.pytest_ldd_register_metrics(registry=registry)

        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and "ldd" in workerinput:
            from pytest_ldd.model.statistics import MetricState

            shared = workerinput["ldd"]
            session_id = shared["session_id"]
            start_states = {
                name: MetricState.from_json(data) for name, data in shared["states"].items()
            }
        else:
            session_id = new_session_id()
            start_states = registry.states()
        self.ctx = RunContext(
            registry=registry,
            calibrator=Calibrator(registry),
            config=ldd_config,
            session_id=session_id,
            recording=self.recording,
            start_states=start_states,
            config_bounds=config_bounds,
            config_predictors=config_predictors,
            base_dir=rootpath,
            ship_specs=self.is_worker,
        )
        if not self.is_worker:
            self.ledger = SessionLedger(self.ctx, started_at=self.started_at)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Hand the session id and start states to each xdist worker."""
        if self.ctx is None:
            return
        node.workerinput["ldd"] = {
            "session_id": self.ctx.session_id,
            "states": {name: s.to_json() for name, s in self.ctx.start_states.items()},
        }

    # -- collection ------------------------------------------------------------------

    def collected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """After collection: start if a test uses pytest-ldd; plan each marked test."""
        manager = config.pluginmanager
        if any(_is_unittest_generator(item) for item in items):
            config.stash[_YIELD_TESTS_KEY] = True
        hypothesis_tests = [item for item in items if _is_hypothesis_test(item)]
        if any(_is_hypothesis_yield_test(item) for item in hypothesis_tests):
            config.stash[_YIELD_TESTS_KEY] = True
        if hypothesis_tests and not manager.has_plugin(_HYPOTHESIS_PLUGIN):
            manager.register(_HypothesisExamples(), _HYPOTHESIS_PLUGIN)
        if config.stash.get(_YIELD_TESTS_KEY, False) and not manager.has_plugin(_YIELD_PLUGIN):
            manager.register(_YieldTests(), _YIELD_PLUGIN)
        if self.off:
            return
        try:
            marked = [(item, list(item.iter_markers("metric"))) for item in items]
            marked = [(item, markers) for item, markers in marked if markers]
            if self.ctx is None and (
                marked
                or config.stash.get(_YIELD_TESTS_KEY, False)
                or any(_FIXTURES & set(getattr(item, "fixturenames", ())) for item in items)
            ):
                self.ensure_started()
            if self.ctx is None:
                return
            gated = bool(self.ctx.config_bounds)
            # Every declaration (a marker with a kind) first, every reference after:
            # whichever order the tests come in (selected by node id, shuffled,
            # --lf), a reference sees the spec a collected test declares.
            for item, markers in marked:
                for mark in reversed(markers):
                    if mark.kwargs.get("kind") is not None:
                        self._declare_marker(item, mark)
            for item, markers in marked:
                plan = item.stash[_PLAN_KEY] = self._plan(item, markers)
                gated = gated or bool(plan.bounds)
        except pytest.UsageError as exc:
            if not self.is_worker:
                raise
            # A usage error raised inside an xdist worker crashes the worker; instead it
            # runs nothing and hands the message to the controller, which stops the
            # session with exit status 4 like a serial run.
            workeroutput: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            workeroutput["ldd_usage_error"] = str(exc)
            items.clear()
            return
        if gated and not manager.has_plugin(_GATES_PLUGIN):
            manager.register(_GateFailures(self), _GATES_PLUGIN)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Collect a usage error found by an xdist worker."""
        message = getattr(node, "workeroutput", {}).get("ldd_usage_error")
        if message and self.usage_error is None:
            self.usage_error = message

    def _plan(self, item: pytest.Item, markers: list[pytest.Mark]) -> _TestPlan:
        from pytest_ldd.model.gates import parse_bounds

        assert self.ctx is not None
        names: list[str] = []
        bounds: dict[str, tuple[Bound, ...]] = {}
        predictors: dict[str, str] = {}
        check = None
        # iter_markers yields the closest marker first; declare in source order.
        for mark in reversed(markers):
            name = self._declare_marker(item, mark)
            try:
                found = parse_bounds(mark.kwargs, where=f"metric {name!r}")
            except LddError as exc:
                raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
            if name not in names:
                names.append(name)
            if found:
                bounds[name] = bounds.get(name, ()) + found
            predictor = mark.kwargs.get("predictor")
            if predictor is not None:
                from pytest_ldd.config import PREDICTORS

                if predictor not in PREDICTORS:
                    raise pytest.UsageError(
                        f"{item.nodeid}: keyword 'predictor' of @pytest.mark.metric({name!r}) "
                        f"must be {' or '.join(map(repr, PREDICTORS))} (got {predictor!r})"
                    )
                predictors[name] = predictor
            if mark.kwargs.get("check") is not None and (check is None or name == "task_success"):
                check = mark.kwargs["check"]
        return _TestPlan(tuple(names), bounds, predictors, check)

    def _declare_marker(self, item: pytest.Item, mark: pytest.Mark) -> str:
        """Check one ``metric`` marker and declare what it declares; its metric name."""
        name = self._marker_name(item, mark)
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYWORDS))
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: unknown keyword {unknown[0]!r} in "
                f"@pytest.mark.metric({name!r}) (expected one of: "
                f"{', '.join(MARKER_KEYWORDS)})"
            )
        try:
            self._declare(item, name, mark.kwargs)
        except LddError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
        return name

    @staticmethod
    def _marker_name(item: pytest.Item, mark: pytest.Mark) -> str:
        args = list(mark.args)
        if "name" in mark.kwargs:
            args.insert(0, mark.kwargs["name"])
        if len(args) != 1 or not isinstance(args[0], str):
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.metric takes exactly one positional "
                f"argument, the metric name (got {mark.args!r})"
            )
        return args[0]

    def _declare(self, item: pytest.Item, name: str, kwargs: Mapping[str, Any]) -> None:
        """Register what a marker declares, or check it against what is registered."""
        key = (name, tuple(sorted((k, repr(kwargs[k])) for k in _SPEC_KEYWORDS if k in kwargs)))
        if key in self._declared:
            # The same marker on many tests (parametrize, a module-level pytestmark):
            # declared once, checked once.
            return
        self._declare_once(item, name, kwargs)
        self._declared.add(key)

    def _declare_once(self, item: pytest.Item, name: str, kwargs: Mapping[str, Any]) -> None:
        from pytest_ldd.errors import UnknownMetricError
        from pytest_ldd.model.corpus import CORPUS_METRICS

        assert self.ctx is not None
        registry = self.ctx.registry
        given = {k: kwargs[k] for k in _SPEC_KEYWORDS if kwargs.get(k) is not None}
        if "kind" in given:
            registry.register(_metric_from_marker(name, given))
            return
        try:
            spec = registry.spec(name)
        except UnknownMetricError:
            if name in CORPUS_METRICS:
                return  # declared on first graded episode
            raise pytest.UsageError(
                f"{item.nodeid}: metric {name!r} is not declared: no test collected in "
                f"this session declares it (with kind=...), and neither [tool.ldd.metrics] "
                f"nor the .ldd folder knows it; declare it in [tool.ldd.metrics.{name}] "
                f"of pyproject.toml, so that it is known whichever tests are selected"
            ) from None
        for key, value in given.items():
            if getattr(spec, key) != value:
                raise pytest.UsageError(
                    f"{item.nodeid}: keyword {key!r} of @pytest.mark.metric({name!r}) "
                    f"contradicts the registered spec ({value!r} != {getattr(spec, key)!r}); "
                    "give the full spec with a higher 'version' to change it"
                )

    # -- running -----------------------------------------------------------------------

    def recorder_for(self, item: pytest.Item) -> TestRecorder:
        """The recorder of ``item``, created on first use."""
        from pytest_ldd.plugin.recording import TestRecorder

        self.ensure_started()
        if self.ctx is None:
            raise pytest.UsageError("pytest-ldd is not active in this session")
        plan = item.stash.get(_PLAN_KEY, None) or _NO_PLAN
        group = getattr(item, "originalname", None) or item.name
        module = item.nodeid.split("::", 1)[0]
        recorder = TestRecorder(
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
        """Hand over what the test recorded, with its teardown report.

        One hook per report does it all: in a serial run the ledger takes the
        payload straight from the test's recorder; an xdist worker attaches it to
        the report before xdist sends it (hence tryfirst) and the controller's
        ledger takes it from there.

        An attempt that pytest-rerunfailures will run again (its report's outcome
        is ``"rerun"``) records nothing and is not counted: only the final attempt
        of a test counts, once.
        """
        nodeid = report.nodeid
        retried = report.outcome == "rerun"  # type: ignore[comparison-overlap]
        if retried:
            self._retried.add(nodeid)
        elif self._retried and nodeid in self._retried:
            # The rest of an attempt that is run again (its teardown report).
            retried = True
            if report.when == "teardown":
                self._retried.discard(nodeid)
        payload = None
        # Handed over once the test (or this attempt) is over: pytest-rerunfailures
        # runs all three phases of an attempt before it reports any of them, so only
        # the end of an attempt knows whether its values count.
        recorder = self.live.get(nodeid) if report.when == "teardown" or retried else None
        if recorder is not None:
            # Its recorder is garbage now, not something kept until the session ends.
            recorder.closed = True
            del self.live[nodeid]
            payload = recorder.take_payload()
            if retried:
                payload = None
            elif payload is not None and self.is_worker:
                # As one string: execnet's serializer is paid per object.
                from pytest_ldd.plugin.recording import payload_text

                try:
                    report.ldd = payload_text(payload)  # type: ignore[attr-defined]
                except (TypeError, ValueError):
                    # Not JSON: let xdist's own serializer carry it (and say why not).
                    report.ldd = payload  # type: ignore[attr-defined]
                return
        ledger = self.ledger
        if ledger is None:
            return
        if payload is None:
            # Popped: the terminal reporter keeps every report until the session
            # ends, and a payload it no longer needs is memory that grows with it.
            payload = report.__dict__.pop("ldd", None)
        if retried:
            return
        if payload is not None and self.error is None:
            try:
                with self._warnings_kept():
                    ledger.consume(payload)
            except LddError as exc:
                # Raising here would be an INTERNALERROR (and, under xdist, kill the
                # controller's loop); the session stops cleanly at the end instead.
                self.error = f"{nodeid}: {exc}"
        if report.when == "teardown":
            ledger.count_test()

    # -- warnings ------------------------------------------------------------------------

    @contextmanager
    def _warnings_kept(self) -> Iterator[None]:
        """Hold back the warnings of store work done inside a hook, then reissue them.

        A torn line is an ``LddWarning``.  Under warnings-as-errors (``-W error``,
        ``filterwarnings = ["error"]``) a warning raised inside a hook would abort
        the hook half-way: an INTERNALERROR, records lost.  Held back, the work
        completes; reissued through pytest's filters, a warning they turn into an
        error ends the session with a named usage error (exit 4) once everything
        recorded is written, and any other warning lands in the warnings summary.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                held = list(caught)
        for message in held:
            warning = message.message
            if not isinstance(warning, Warning):
                warning = message.category(str(warning))
            try:
                self.config.issue_config_time_warning(warning, stacklevel=2)
            except Warning as exc:
                self.warning_errors.append(
                    f"{type(exc).__name__}: {exc} (a warning, made an error by the "
                    "warning filters: -W / filterwarnings)"
                )

    # -- end -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            result = yield
        except BaseException:
            # -x, --sw, Ctrl-C, session.shouldstop: the test loop stops early, and
            # the session still ends: what was recorded is counted and reported, and
            # its session record says it was interrupted.
            self._end(session, interrupted=True)
            raise
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        self._end(session, interrupted=bool(session.shouldstop or session.shouldfail))
        if self.error is not None:
            raise pytest.UsageError(f"pytest-ldd: {self.error}")
        if self.warning_errors and not self.is_worker:
            # (A worker reads the store the controller reads, and warns alike.)
            raise pytest.UsageError("pytest-ldd: " + "; ".join(self.warning_errors))
        return result

    def _end(self, session: pytest.Session, *, interrupted: bool) -> None:
        """The end of a session: corpus pairs, states, the session record."""
        ledger, ctx = self.ledger, self.ctx
        if ledger is None or ctx is None or self.collect_only or self.usage_error is not None:
            return
        with self._warnings_kept():
            if self.error is None:
                try:
                    ledger.finish(self.corpus_bounds)
                except LddError as exc:
                    self.error = str(exc)
            if self.error is not None:
                return
            for name, before, after in ledger.state_changes:
                self.config.hook.pytest_ldd_state_changed(name=name, before=before, after=after)
            self.document = ledger.document(interrupted=interrupted)
            if self.recording or self.config.getoption("ldd_report") or self.config.getoption(
                "ldd_html"
            ):
                from pytest_ldd.plugin.vcs import describe_commit  # once per session: runs git

                folder = getattr(ctx.registry.store, "ldd_dir", None)
                self.document["commit"] = describe_commit(self.config.rootpath, ignore=folder)
            if self.recording:
                store = ctx.registry.store
                try:
                    store.append_sessions([self.document])
                    store.sync(["sessions"])  # the logs were synced by finish()
                except LddError as exc:
                    self.error = str(exc)
                finally:
                    store.close()
        if ledger.corpus_failures:
            session.testsfailed += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.error is not None and self.document is None and self.ledger is not None:
            # The test loop stopped early (-x, Ctrl-C) and the end of the session
            # failed: said here, since no usage error can replace the interruption.
            self.end_errors.append(f"pytest-ldd: {self.error}")
        if self.document is None or self.ctx is None:
            return
        json_path = self.config.getoption("ldd_report")
        html_path = self.config.getoption("ldd_html")
        if not (json_path or html_path):
            return
        from pytest_ldd.report import document as report

        with self._warnings_kept():
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
                    doc = report.build_report(
                        self.ctx.registry, session=self.document, budget=budget
                    )
                except LddError as exc:
                    self._fail_session(session, f"cannot build the report: {exc}")
                    return
                except Exception as exc:  # never an INTERNALERROR
                    self._fail_session(
                        session, f"cannot build the report: {type(exc).__name__}: {exc}"
                    )
                    return
                target = Path(self.config.invocation_params.dir, name)
                try:
                    write(target, doc)
                except (OSError, LddError) as exc:
                    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    self._fail_session(session, f"{option}: cannot write {target}: {reason}")
        for problem in self.warning_errors:
            self._fail_session(session, problem)
        self.warning_errors.clear()

    def _fail_session(self, session: pytest.Session, message: str) -> None:
        """A named error after the test loop: exit status 4, said in the summary."""
        self.end_errors.append(f"pytest-ldd: {message}")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        mode = self.config.getoption("ldd_summary")
        doc = self.document
        from pytest_ldd.report.terminal import printable

        if (
            doc is not None
            and mode != "none"
            and (mode == "full" or doc["metrics"] or doc["corpus"] or self.recording)
        ):
            from pytest_ldd.report.text import render_terminal

            terminalreporter.write_sep("=", "ldd")
            failures = set(self.ledger.corpus_failures if self.ledger is not None else ())
            verbose = self.config.get_verbosity() > 0
            for text in render_terminal(doc, verbose=verbose):
                line = printable(text)  # units and descriptions never steer the terminal
                if text in failures:
                    terminalreporter.write_line(line, red=True, bold=True)
                else:
                    terminalreporter.write_line(line)
        if self.end_errors:
            if doc is None or mode == "none":
                terminalreporter.write_sep("=", "ldd")
            for text in self.end_errors:
                terminalreporter.write_line(printable(text), red=True, bold=True)


def _metric_from_marker(name: str, given: dict[str, Any]) -> Any:
    from pytest_ldd.errors import InvalidSpecError
    from pytest_ldd.model.metric import bounded_rate, positive_count, signed_delta

    kind = given["kind"]
    factories: dict[str, Callable[..., Any]] = {
        "bounded": bounded_rate,
        "positive": positive_count,
        "signed": signed_delta,
    }
    if kind not in factories:
        msg = f"keyword 'kind' must be one of bounded, positive, signed (got {kind!r})"
        raise InvalidSpecError(msg)
    options: dict[str, Any] = {"description": given.get("description", "")}
    for key in ("unit", "version", "normalize_scale"):
        if key in given:
            options[key] = given[key]
    if kind == "bounded" and "normalize_scale" in options:
        msg = f"keyword 'normalize_scale' applies to positive and signed metrics, not {kind!r}"
        raise InvalidSpecError(msg)
    return factories[kind](name, **options)


def _configures_ldd(rootpath: Path) -> bool:
    """Whether the rootdir's pyproject.toml has a ``[tool.ldd...]`` table (no TOML parse)."""
    try:
        text = (rootpath / "pyproject.toml").read_bytes()
    except OSError:
        return False
    return b"[tool.ldd" in text or b"tool.ldd." in text


#: Options that take a value; pytest reads a value given as a separate argument as
#: a test path when it chooses the rootdir (before any plugin's options are known).
_VALUE_OPTIONS = (LDD_DIR_OPTION, REPORT_OPTION, HTML_OPTION, SUMMARY_OPTION)


def _check_value_spelling(config: pytest.Config) -> None:
    """Refuse ``--ldd-dir DIR`` (two arguments) where it moved pytest's rootdir.

    pytest chooses its rootdir and ini file from the command line before it loads
    plugins, so the value of ``--ldd-dir /abs/path`` is taken for a test path; when
    that path exists the rootdir (and with it ``[tool.ldd]``) can move.  The one
    argument spelling, ``--ldd-dir=/abs/path``, is always right.
    """
    args = [str(a) for a in config.invocation_params.args]
    separated = [
        (args[i], args[i + 1])
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
        chosen = setup(paths + [value for _, value in separated])
    except Exception:  # another pytest's private API: nothing to tell
        return
    if chosen == intended:
        return
    option, value = separated[0]
    raise pytest.UsageError(
        f"pytest-ldd: {option} {value}: pytest took {value!r} for a test path when it "
        f"chose its rootdir ({chosen[0]} instead of {intended[0]}), because it reads "
        f"the command line before plugins load; write {option}={value} (one argument)"
    )
