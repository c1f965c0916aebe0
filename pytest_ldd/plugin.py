"""The pytest plugin: hooks only, translating between pytest and the pure modules.

Loaded through the ``pytest11`` entry point ``ldd``; ``-p no:ldd`` turns it off.
Heavy imports happen inside hooks, so loading the plugin costs next to nothing.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ldd.errors import LddAdvisoryWarning, LddError
from pytest_ldd.observation import Observation

if TYPE_CHECKING:
    from pytest_ldd.gates import Bound
    from pytest_ldd.recording import Breach, RunContext, SessionLedger, TestRecorder
    from pytest_ldd.statistics import MetricState

__all__ = [
    "HTML_OPTION",
    "LDD_DIR_OPTION",
    "RECORD_OPTION",
    "REPORT_OPTION",
    "LddFixture",
]

#: Option names, importable by tests and other plugins.
RECORD_OPTION = "--ldd"
LDD_DIR_OPTION = "--ldd-dir"
LDD_STORE_OPTION = "--ldd-store"
REPORT_OPTION = "--ldd-report"
HTML_OPTION = "--ldd-html"
SUMMARY_OPTION = "--ldd-summary"

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


@dataclass(frozen=True)
class _TestPlan:
    """What a test's ``metric`` markers declare."""

    names: tuple[str, ...] = ()
    bounds: dict[str, tuple[Bound, ...]] = field(default_factory=dict)
    predictors: dict[str, str] = field(default_factory=dict)
    check: Any = None


_NO_PLAN = _TestPlan()


_SESSION_KEY = pytest.StashKey["LddSession"]()
_YIELD_TESTS_KEY = pytest.StashKey[bool]()
_YIELD_PLUGIN = "ldd-yield"
_GATES_PLUGIN = "ldd-gates"
_PLAN_KEY = pytest.StashKey[_TestPlan]()


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
            "The 'ldd' terminal section: 'auto' shows it when a metric was touched or "
            "the session records, 'full' always, 'none' never."
        ),
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_ldd import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_LINE)
    session = LddSession(config)
    config.stash[_SESSION_KEY] = session
    config.pluginmanager.register(session, "ldd-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        del config.stash[_SESSION_KEY]
    for name in (_YIELD_PLUGIN, _GATES_PLUGIN):
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
        generator = testfunction(**testargs)
        fixture = LddFixture(pyfuncitem)
        try:
            for value in generator:
                fixture._take_yielded(value)
        finally:
            generator.close()
        return True


class _GateFailures:
    """Fails a test whose load-bearing gates it breached (registered as ``ldd-gates``).

    Registered only when some gate bound can apply (``[tool.ldd.metrics]`` bounds
    or a marker's ``le``/``lt``/``ge``/``gt``): only then can a test collect failures.
    """

    def __init__(self, session: LddSession) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        result = yield
        recorder = self.session.live.get(pyfuncitem.nodeid)
        if recorder is not None and recorder.failures:
            failures, recorder.failures = recorder.failures, []
            pytest.fail("\n".join(failures), pytrace=False)
        return result


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
        hook = self._observation_hook
        if hook is not None:
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
        if self._observation_hook is not None:
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
            from pytest_ldd.recording import unknown_metric_message

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
            from pytest_ldd.recording import unknown_metric_message

            pytest.fail(unknown_metric_message(name), pytrace=False)
        return ctx.registry.state(name)

    def is_load_bearing(self, name: str) -> bool:
        """Whether ``name`` was load-bearing at session start."""
        return self.state(name).is_load_bearing

    def _take_yielded(self, value: Any) -> None:
        __tracebackhide__ = True
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


@pytest.fixture
def ldd(request: pytest.FixtureRequest) -> LddFixture:
    """Record metric observations and agent episodes from inside a test."""
    return LddFixture(request.node)


def _recorder_for(item: pytest.Item) -> TestRecorder:
    session = item.config.stash[_SESSION_KEY]
    recorder = session.live.get(item.nodeid)
    if recorder is None:
        recorder = session.recorder_for(item)
    return recorder


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
        self.recording: bool = bool(config.getoption("ldd_record"))
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

    # -- start ---------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        try:
            self._start()
        except LddError as exc:
            raise pytest.UsageError(f"pytest-ldd: {exc}") from None

    def _start(self) -> None:
        from pytest_ldd.calibrator import Calibrator
        from pytest_ldd.config import load_config
        from pytest_ldd.errors import InvalidSpecError
        from pytest_ldd.gates import parse_bounds
        from pytest_ldd.recording import CORPUS_METRICS, RunContext, SessionLedger, new_session_id

        config = self.config
        rootpath = Path(config.rootpath)
        ldd_config = load_config(rootpath)
        option_dir = config.getoption("ldd_dir")
        option_store = config.getoption("ldd_store")
        ldd_dir = Path(config.invocation_params.dir, option_dir) if option_dir else None
        store = ldd_config.open_store(option=option_store or None, ldd_dir=ldd_dir)
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
            from pytest_ldd.statistics import MetricState

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
            self.ledger = SessionLedger(self.ctx)

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

    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.ctx is None:
            return
        gated = bool(self.ctx.config_bounds)
        try:
            for item in items:
                markers = list(item.iter_markers("metric"))
                if markers:
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
        manager = config.pluginmanager
        if config.stash.get(_YIELD_TESTS_KEY, False) and not manager.has_plugin(_YIELD_PLUGIN):
            manager.register(_YieldTests(), _YIELD_PLUGIN)
        if gated and not manager.has_plugin(_GATES_PLUGIN):
            manager.register(_GateFailures(self), _GATES_PLUGIN)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Collect a usage error found by an xdist worker."""
        message = getattr(node, "workeroutput", {}).get("ldd_usage_error")
        if message and self.usage_error is None:
            self.usage_error = message

    def _plan(self, item: pytest.Item, markers: list[pytest.Mark]) -> _TestPlan:
        from pytest_ldd.gates import parse_bounds

        assert self.ctx is not None
        names: list[str] = []
        bounds: dict[str, tuple[Bound, ...]] = {}
        predictors: dict[str, str] = {}
        check = None
        # iter_markers yields the closest marker first; declare in source order.
        for mark in reversed(markers):
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
        from pytest_ldd.recording import CORPUS_METRICS

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
                f"{item.nodeid}: metric {name!r} is not declared: give "
                f"@pytest.mark.metric({name!r}, kind=..., description=...) or declare it "
                f"in [tool.ldd.metrics.{name}]"
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
        from pytest_ldd.recording import TestRecorder

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
        """Hand over what the test recorded since its last report.

        One hook per report does it all: in a serial run the ledger takes the
        payload straight from the test's recorder; an xdist worker attaches it to
        the report before xdist sends it (hence tryfirst) and the controller's
        ledger takes it from there.
        """
        payload = None
        recorder = self.live.get(report.nodeid)
        if recorder is not None:
            if report.when == "teardown":
                # The test is over: its recorder is garbage, not something kept
                # until the session ends.
                del self.live[report.nodeid]
            payload = recorder.take_payload()
            if payload is not None and self.is_worker:
                # As one string: execnet's serializer is paid per object.
                from pytest_ldd.recording import payload_text

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
        if payload is not None and self.error is None:
            try:
                ledger.consume(payload)
            except LddError as exc:
                # Raising here would be an INTERNALERROR (and, under xdist, kill the
                # controller's loop); the session stops cleanly at the end instead.
                self.error = f"{report.nodeid}: {exc}"
        if report.when == "teardown":
            ledger.count_test()

    # -- end -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        result = yield
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        if self.ledger is not None and self.ctx is not None:
            ledger = self.ledger
            if self.error is None:
                try:
                    ledger.finish(self.corpus_bounds)
                except LddError as exc:
                    self.error = str(exc)
            if self.error is not None:
                raise pytest.UsageError(f"pytest-ldd: {self.error}")
            for name, before, after in ledger.state_changes:
                self.config.hook.pytest_ldd_state_changed(name=name, before=before, after=after)
            self.document = ledger.document()
            if self.recording:
                store = self.ctx.registry.store
                try:
                    store.append_sessions([self.document])
                    store.sync(["sessions"])  # the logs were synced by finish()
                except LddError as exc:
                    raise pytest.UsageError(f"pytest-ldd: {exc}") from None
                finally:
                    store.close()
            if ledger.corpus_failures:
                session.testsfailed += 1
        return result

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.document is None or self.ctx is None:
            return
        from pytest_ldd import report

        json_path = self.config.getoption("ldd_report")
        html_path = self.config.getoption("ldd_html")
        if json_path or html_path:
            doc = report.build_report(
                self.ctx.registry, self.ctx.calibrator, session=self.document
            )
            if json_path:
                report.write_json(Path(self.config.invocation_params.dir, json_path), doc)
            if html_path:
                report.write_html(Path(self.config.invocation_params.dir, html_path), doc)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        mode = self.config.getoption("ldd_summary")
        doc = self.document
        if doc is None or mode == "none":
            return
        if mode == "auto" and not (doc["metrics"] or doc["corpus"] or self.recording):
            return
        from pytest_ldd import report

        terminalreporter.write_sep("=", "ldd")
        failures = set(self.ledger.corpus_failures if self.ledger is not None else ())
        verbose = self.config.get_verbosity() > 0
        for line in report.render_terminal(doc, verbose=verbose):
            if line in failures:
                terminalreporter.write_line(line, red=True, bold=True)
            else:
                terminalreporter.write_line(line)


def _metric_from_marker(name: str, given: dict[str, Any]) -> Any:
    from pytest_ldd.errors import InvalidSpecError
    from pytest_ldd.metric import bounded_rate, positive_count, signed_delta

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
