"""The ``metric`` marker: what a test declares, checked, and the plan each test runs with.

A marker with a ``kind`` declares (registers) a metric; one without names a metric
declared elsewhere (another test's marker, ``[tool.ldd.metrics]``, the store) and
must not contradict it.  ``le``/``lt``/``ge``/``gt`` add gate bounds on the test's
values, ``predictor`` predicts from the test's history, ``check`` grades its
episodes.  A mistake fails collection with a message naming the test and the
keyword.  What a test's markers declare becomes its :class:`TestPlan`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_ldd.errors import LddError

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.model.gates import Bound
    from pytest_ldd.model.metric import Metric

__all__ = ["MARKER_KEYWORDS", "NO_PLAN", "Declarations", "TestPlan"]

#: The keywords the ``metric`` marker takes.
MARKER_KEYWORDS: Final = (
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
_SPEC_KEYWORDS: Final = ("kind", "unit", "description", "version", "normalize_scale")


class TestPlan:
    """What a test's ``metric`` markers declare: names, gate bounds, predictors, checker.

    A plain slotted class: building a dataclass costs import time, which a session
    pays once it starts (docs/performance.md).
    """

    __test__ = False  # not a test class, whatever pytest's name pattern says
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


#: The plan of a test without markers.
NO_PLAN: Final = TestPlan()


class Declarations:
    """The ``metric`` markers of one session, declared into ``registry`` and checked.

    The same marker on many tests (parametrize, a module-level ``pytestmark``) is
    declared once and checked once.
    """

    __slots__ = ("_declared", "registry")

    def __init__(self, registry: MetricRegistry) -> None:
        self.registry = registry
        self._declared: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    def declare_all(self, marked: list[tuple[pytest.Item, list[pytest.Mark]]]) -> None:
        """Every declaration (a marker with a kind) of the collected tests.

        Declared before any reference is checked: whichever order the tests come in
        (selected by node id, shuffled, ``--lf``), a reference sees the spec a
        collected test declares.
        """
        for item, markers in marked:
            for mark in reversed(markers):
                if mark.kwargs.get("kind") is not None:
                    self.declare_marker(item, mark)

    def plan(self, item: pytest.Item, markers: list[pytest.Mark]) -> TestPlan:
        """The plan of a test from its ``metric`` markers (closest first, as pytest
        gives them); a mistake is a usage error naming the test."""
        from pytest_ldd.config import PREDICTORS
        from pytest_ldd.model.gates import parse_bounds

        names: list[str] = []
        bounds: dict[str, tuple[Bound, ...]] = {}
        predictors: dict[str, str] = {}
        check = None
        # iter_markers yields the closest marker first; declare in source order.
        for mark in reversed(markers):
            name = self.declare_marker(item, mark)
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
                if predictor not in PREDICTORS:
                    raise pytest.UsageError(
                        f"{item.nodeid}: keyword 'predictor' of @pytest.mark.metric({name!r}) "
                        f"must be {' or '.join(map(repr, PREDICTORS))} (got {predictor!r})"
                    )
                predictors[name] = predictor
            if mark.kwargs.get("check") is not None and (check is None or name == "task_success"):
                check = mark.kwargs["check"]
        return TestPlan(tuple(names), bounds, predictors, check)

    def declare_marker(self, item: pytest.Item, mark: pytest.Mark) -> str:
        """Check one ``metric`` marker and declare what it declares; its metric name."""
        name = _marker_name(item, mark)
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYWORDS))
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: unknown keyword {unknown[0]!r} in "
                f"@pytest.mark.metric({name!r}) (expected one of: "
                f"{', '.join(MARKER_KEYWORDS)})"
            )
        given = sorted((k, repr(mark.kwargs[k])) for k in _SPEC_KEYWORDS if k in mark.kwargs)
        key = (name, tuple(given))
        if key in self._declared:
            return name
        try:
            self._declare(item, name, mark.kwargs)
        except LddError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
        self._declared.add(key)
        return name

    def _declare(self, item: pytest.Item, name: str, kwargs: Mapping[str, Any]) -> None:
        """Register what a marker declares, or check it against what is registered."""
        from pytest_ldd.errors import UnknownMetricError
        from pytest_ldd.model.corpus import CORPUS_METRICS

        registry = self.registry
        given = {k: kwargs[k] for k in _SPEC_KEYWORDS if kwargs.get(k) is not None}
        if "kind" in given:
            registry.register(metric_from_marker(name, given))
            return
        try:
            spec = registry.spec(name)
        except UnknownMetricError:
            if name in CORPUS_METRICS:
                return  # declared on first graded episode
            from pytest_ldd.plugin.recorder import nearer_declaration

            config = item.config
            raise pytest.UsageError(
                f"{item.nodeid}: metric {name!r} is not declared: no test collected in "
                f"this session declares it (with kind=...), and neither [tool.ldd.metrics] "
                f"nor the .ldd folder knows it; declare it in [tool.ldd.metrics.{name}] "
                f"of pyproject.toml, so that it is known whichever tests are selected"
                + nearer_declaration(
                    name, Path(item.path), config.rootpath, config.invocation_params.dir
                )
            ) from None
        for key, value in given.items():
            if getattr(spec, key) != value:
                raise pytest.UsageError(
                    f"{item.nodeid}: keyword {key!r} of @pytest.mark.metric({name!r}) "
                    f"contradicts the registered spec ({value!r} != {getattr(spec, key)!r}); "
                    "give the full spec with a higher 'version' to change it"
                )


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


def metric_from_marker(name: str, given: Mapping[str, Any]) -> Metric:
    """The metric a marker's spec keywords (``kind`` among them) declare."""
    from pytest_ldd.errors import InvalidSpecError
    from pytest_ldd.model.metric import bounded_rate, positive_count, signed_delta

    kind = given["kind"]
    factories: dict[str, Callable[..., Metric]] = {
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
