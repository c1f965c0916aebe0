"""``[tool.ldd]`` settings from ``pyproject.toml``.

Every key is checked: an unknown key or a value of the wrong type raises
:class:`InvalidSpecError` naming the dotted key and the file, so a typo such as
``max_mea`` never silently falls back to a default.  See ``docs/configuration.md``.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Literal, final

from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, LddError
from pytest_ldd.model.corpus import CORPUS_METRICS
from pytest_ldd.model.metric import Metric, MetricSpec, metric_from_spec
from pytest_ldd.model.statistics import CalibrationGate
from pytest_ldd.store import Store, check_project_key, masked

__all__ = [
    "BOUND_KEYS",
    "PREDICTORS",
    "AgentsConfig",
    "LddConfig",
    "MetricConfig",
    "declaring_project",
    "load_config",
    "load_config_file",
]

PYPROJECT: Final = "pyproject.toml"

#: Gate bounds on raw values, as in the ``metric`` marker.
BOUND_KEYS: Final[tuple[str, ...]] = ("le", "lt", "ge", "gt")

#: Predictor names a metric table may set.
PREDICTORS: Final[tuple[str, ...]] = ("history_mean",)

_TOP_KEYS: Final = ("dir", "calibration", "metrics", "gates", "agents", "store", "project")

#: The environment variable that names the store (a CI secret), below the command
#: line and above ``[tool.ldd] store``.
STORE_ENV: Final = "LDD_STORE"
_GATE_KEYS: Final = ("min_n", "max_mae", "max_p95", "max_worst", "window")
_SPEC_KEYS: Final = ("kind", "unit", "description", "version", "normalize_scale")
_METRIC_KEYS: Final = (*_SPEC_KEYS, *BOUND_KEYS, "predictor", "check", "calibration")
_AGENT_KEYS: Final = ("check", "prices", "model", "isolation")
_ISOLATIONS: Final = ("process", "inprocess")
_KINDS: Final = ("bounded", "positive", "signed")
_NAME_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@final
@dataclass(frozen=True, slots=True)
class MetricConfig:
    """One ``[tool.ldd.metrics.NAME]`` table.

    Spec keys left out are ``None`` (the marker or code may supply them);
    ``le``/``lt``/``ge``/``gt`` are gate limits on raw observed values (``None``
    when unset; :meth:`bounds` collects the set ones); ``calibration`` is the
    metric's own gate (the project gate with the table's overrides applied), or
    ``None`` when the table has no ``calibration`` sub-table.
    """

    name: str
    kind: Literal["bounded", "positive", "signed"] | None = None
    unit: str | None = None
    description: str | None = None
    version: int | None = None
    normalize_scale: float | None = None
    le: float | None = None
    lt: float | None = None
    ge: float | None = None
    gt: float | None = None
    predictor: Literal["history_mean"] | None = None
    check: str | None = None
    calibration: CalibrationGate | None = None

    @property
    def declares(self) -> bool:
        """Whether the table declares the metric itself (``kind`` and ``description``)."""
        return self.kind is not None and self.description is not None

    def bounds(self) -> dict[str, float]:
        """The gate limits that are set, as ``{"le": 500.0, ...}``."""
        values = {key: getattr(self, key) for key in BOUND_KEYS}
        return {key: value for key, value in values.items() if value is not None}

    def metric(self) -> Metric | None:
        """The metric the table declares, or ``None`` when it sets no ``kind``.

        A table with ``kind`` but no ``description`` is an error (see :meth:`to_spec`).
        """
        if self.kind is None:
            return None
        return metric_from_spec(self.to_spec())

    def spec_fields(self) -> dict[str, Any]:
        """The spec keys the table sets, as keyword arguments for :class:`MetricSpec`."""
        values = {key: getattr(self, key) for key in _SPEC_KEYS}
        return {key: value for key, value in values.items() if value is not None}

    def to_spec(self) -> MetricSpec:
        """The :class:`MetricSpec` the table declares (needs ``kind`` and ``description``)."""
        if self.kind is None or self.description is None:
            missing = [k for k in ("kind", "description") if getattr(self, k) is None]
            msg = (
                f"[tool.ldd.metrics.{self.name}] must set {' and '.join(map(repr, missing))} "
                f"to declare the metric (got {self.spec_fields()!r})"
            )
            raise InvalidSpecError(msg)
        extra = self.spec_fields()
        return MetricSpec(
            self.name,
            self.kind,
            extra.get("unit", ""),
            self.description,
            version=extra.get("version", 1),
            # The same default as the marker (and the factories): positive_count's 100.
            normalize_scale=extra.get(
                "normalize_scale", POSITIVE_SCALE if self.kind == "positive" else 1.0
            ),
        )


#: The default ``normalize_scale`` of a positive metric, as in ``positive_count``.
POSITIVE_SCALE = 100.0


@final
@dataclass(frozen=True, slots=True)
class AgentsConfig:
    """``[tool.ldd.agents]``: the default checker, price catalog and model.

    ``isolation`` is the hidden-test sandbox's isolation for ``hidden_tests:`` checkers
    (``"process"`` or ``"inprocess"``; None: the sandbox's default).
    """

    check: str | None = None
    prices: str | None = None
    model: str | None = None
    isolation: str | None = None


@final
@dataclass(frozen=True, slots=True, repr=False)
class LddConfig:
    """The whole ``[tool.ldd]`` table (defaults when there is none).

    ``project`` is the folder relative paths are taken from; ``source`` the file
    the settings came from (``None`` when no file or table was found).
    """

    dir: str | None = None
    calibration: CalibrationGate = field(default_factory=CalibrationGate)
    metrics: Mapping[str, MetricConfig] = field(default_factory=dict)
    gates: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    source: Path | None = None
    project: Path = field(default_factory=Path)
    #: ``[tool.ldd] store``: a store URL or folder (see :meth:`open_store`).
    store: str | None = None
    #: ``[tool.ldd] project``: the key of this project's rows in a shared store.
    key: str | None = None

    def __repr__(self) -> str:
        # The store URL may hold a password: shown masked, as in every message.
        shown = []
        for item in fields(self):
            value = getattr(self, item.name)
            text = repr(masked(value)) if item.name == "store" and value else repr(value)
            shown.append(f"{item.name}={text}")
        return f"LddConfig({', '.join(shown)})"

    @property
    def ldd_dir(self) -> Path | None:
        """``dir`` resolved against the project folder, or ``None`` when unset."""
        return None if self.dir is None else self.project / self.dir

    @property
    def prices_path(self) -> Path | None:
        """``agents.prices`` resolved against the project folder, or ``None``."""
        return None if self.agents.prices is None else self.project / self.agents.prices

    def store_location(
        self,
        *,
        option: str | None = None,
        ldd_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> str | Path | None:
        """Where the store is, by precedence (None: ``<project>/.ldd``).

        The command line first (``option``: ``--ldd-store``, or ``ldd_dir``:
        ``--ldd-dir``; not both), then the ``LDD_STORE`` environment variable, then
        ``[tool.ldd] store``, then ``[tool.ldd] dir``.
        """
        if option is not None and ldd_dir is not None:
            msg = (
                f"give the store once: --ldd-store {masked(option)!r} and --ldd-dir "
                f"{str(ldd_dir)!r} both name one"
            )
            raise InvalidSpecError(msg)
        if option is not None:
            return option
        if ldd_dir is not None:
            return ldd_dir
        env = (os.environ if environ is None else environ).get(STORE_ENV, "").strip()
        if env:
            return env
        if self.store is not None:
            return self.store
        return self.ldd_dir

    def open_store(
        self,
        *,
        option: str | None = None,
        ldd_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Store:
        """The project's store (see :meth:`store_location`), with its project key."""
        from pytest_ldd.store import open_store

        location = self.store_location(option=option, ldd_dir=ldd_dir, environ=environ)
        return open_store(self.project, location, key=self.key)

    def gate_for(self, name: str) -> CalibrationGate:
        """The calibration gate of metric ``name``."""
        metric = self.metrics.get(name)
        if metric is not None and metric.calibration is not None:
            return metric.calibration
        return self.calibration

    def metric_gates(self) -> dict[str, CalibrationGate]:
        """The per-metric gates, for ``MetricRegistry(gates=...)``."""
        return {n: m.calibration for n, m in self.metrics.items() if m.calibration is not None}

    def open_registry(self, store: Store, *, read_only: bool) -> MetricRegistry:
        """The project's registry with its gates and every metric its tables declare.

        What a pytest run and the ``ldd`` command both start from; with ``read_only``
        the declared metrics are kept in memory only.  A table that contradicts the
        stored spec raises an error naming the table and the file.
        """
        registry = MetricRegistry(
            store, gate=self.calibration, gates=self.metric_gates(), read_only=read_only
        )
        for name, table in self.metrics.items():
            try:
                metric = table.metric()
                if metric is not None:
                    registry.register(metric)
            except LddError as exc:
                msg = f"[tool.ldd.metrics.{name}] in {self.source}: {exc}"
                raise InvalidSpecError(msg) from exc
        return registry


# --------------------------------------------------------------------------- loading


def load_config(project: str | os.PathLike[str]) -> LddConfig:
    """Read ``[tool.ldd]`` from ``project/pyproject.toml`` (no file or table: defaults)."""
    folder = Path(project)
    path = folder / PYPROJECT
    if not path.is_file():
        return LddConfig(project=folder)
    return load_config_file(path)


def load_config_file(path: str | os.PathLike[str]) -> LddConfig:
    """Read ``[tool.ldd]`` from one ``pyproject.toml``-style file."""
    tomllib = _toml_parser()
    file = Path(path)
    try:
        with file.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as err:
        msg = f"cannot read {file}: {err.strerror or err}"
        raise InvalidSpecError(msg) from err
    except tomllib.TOMLDecodeError as err:
        msg = f"{file} is not valid TOML: {err}"
        raise InvalidSpecError(msg) from err
    tool = data.get("tool", {})
    reader = _Reader(file)
    if not isinstance(tool, dict):
        raise reader.wrong("tool", "a table", tool)
    table = tool.get("ldd")
    if table is None:
        return LddConfig(project=file.parent)
    return reader.config(table)


def declaring_project(name: str, test_path: Path, rootdir: Path) -> Path | None:
    """The ``pyproject.toml`` nearer ``test_path`` than ``rootdir`` that declares ``name``.

    A monorepo run from its top (``pytest --ldd a b``) reads the ``[tool.ldd]`` of one
    rootdir only, so a metric another project declares is unknown to the session.
    Walks up from the test's folder and stops at the rootdir or a folder holding it
    (their files are this session's, or no nearer).  Read only to explain an unknown
    metric: a file that cannot be read is passed over.
    """
    root = rootdir.resolve()
    stops = {root, *root.parents}
    folder = test_path.resolve().parent
    for candidate in (folder, *folder.parents):
        if candidate in stops:
            return None
        file = candidate / PYPROJECT
        if file.is_file() and _declares(file, name):
            return file
    return None


def _toml_parser() -> Any:
    """The TOML parser, imported on first use: a project without pyproject.toml never needs it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    return tomllib


def _declares(file: Path, name: str) -> bool:
    tomllib = _toml_parser()
    try:
        with file.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    table: Any = data
    for key in ("tool", "ldd", "metrics"):
        table = table.get(key) if isinstance(table, dict) else None
    return isinstance(table, dict) and name in table


class _Reader:
    """Checks one file's ``[tool.ldd]`` table, naming keys as ``tool.ldd.x.y``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def wrong(self, key: str, expected: str, got: object) -> InvalidSpecError:
        return InvalidSpecError(f"{key!r} in {self.path} must be {expected} (got {got!r})")

    def table(self, key: str, value: object, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.wrong(key, "a table", value)
        if allowed is not None:
            for name in value:
                if name not in allowed:
                    msg = (
                        f"unknown key '{key}.{name}' in {self.path} "
                        f"(expected one of: {', '.join(allowed)})"
                    )
                    raise InvalidSpecError(msg)
        return value

    def text(self, key: str, value: object) -> str:
        if not isinstance(value, str) or not value:
            raise self.wrong(key, "a non-empty string", value)
        return value

    def integer(self, key: str, value: object, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.wrong(key, f"an integer >= {minimum}", value)
        return value

    def number(self, key: str, value: object, *, positive: bool = False) -> float:
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
            or (positive and value == 0)
        ):
            raise self.wrong(
                key, "a finite number > 0" if positive else "a finite number >= 0", value
            )
        return float(value)

    def limit(self, key: str, value: object) -> float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            raise self.wrong(key, "a number", value)
        return float(value)

    def gate(self, key: str, value: object, base: CalibrationGate) -> CalibrationGate:
        table = self.table(key, value, _GATE_KEYS)
        overrides: dict[str, Any] = {}
        for name, item in table.items():
            dotted = f"{key}.{name}"
            if name in ("min_n", "window"):
                overrides[name] = self.integer(dotted, item, 1)
            else:
                overrides[name] = self.number(dotted, item)
        return replace(base, **overrides)

    def bounds(self, key: str, table: Mapping[str, Any]) -> dict[str, float]:
        from pytest_ldd.model.gates import check_bounds

        limits = {b: self.limit(f"{key}.{b}", table[b]) for b in BOUND_KEYS if b in table}
        check_bounds(limits, where=f"{key} in {self.path}")
        return limits

    def metric(self, key: str, name: str, value: object, base: CalibrationGate) -> MetricConfig:
        if not _NAME_RE.fullmatch(name):
            raise self.wrong(key, "a metric name of 1-64 chars of [A-Za-z0-9_.-]", name)
        table = self.table(key, value, _METRIC_KEYS)
        kind = table.get("kind")
        if kind is not None and kind not in _KINDS:
            raise self.wrong(f"{key}.kind", "one of 'bounded', 'positive', 'signed'", kind)
        predictor = table.get("predictor")
        if predictor is not None and predictor not in PREDICTORS:
            raise self.wrong(f"{key}.predictor", "'history_mean'", predictor)
        opt = table.get
        unit, description, check = opt("unit"), opt("description"), opt("check")
        version, scale, calibration = opt("version"), opt("normalize_scale"), opt("calibration")
        if kind == "bounded" and scale is not None:
            # As the marker says: a bounded metric is already on the [0, 1] scale.
            msg = (
                f"{key}.normalize_scale in {self.path}: normalize_scale applies to positive "
                f"and signed metrics, not 'bounded' (got {scale!r})"
            )
            raise InvalidSpecError(msg)
        return MetricConfig(
            name=name,
            kind=kind,
            unit=None if unit is None else self.text(f"{key}.unit", unit),
            description=None
            if description is None
            else self.text(f"{key}.description", description),
            version=None if version is None else self.integer(f"{key}.version", version, 1),
            normalize_scale=(
                None
                if scale is None
                else self.number(f"{key}.normalize_scale", scale, positive=True)
            ),
            **self.bounds(key, table),
            predictor=predictor,
            check=None if check is None else self.text(f"{key}.check", check),
            calibration=(
                None if calibration is None else self.gate(f"{key}.calibration", calibration, base)
            ),
        )

    def config(self, value: object) -> LddConfig:
        root = "tool.ldd"
        table = self.table(root, value, _TOP_KEYS)
        folder = table.get("dir")
        store = table.get("store")
        if store is not None:
            store = self.text(f"{root}.store", store)
            if folder is not None:
                msg = (
                    f"'{root}.store' and '{root}.dir' in {self.path} both name the store "
                    f"(got store = {masked(store)!r}, dir = {folder!r}): keep one"
                )
                raise InvalidSpecError(msg)
        key = table.get("project")
        if key is not None:
            key = check_project_key(key, where=f"'{root}.project' in {self.path}")
        gate = CalibrationGate()
        if "calibration" in table:
            gate = self.gate(f"{root}.calibration", table["calibration"], gate)
        metrics: dict[str, MetricConfig] = {}
        if "metrics" in table:
            for name, item in self.table(f"{root}.metrics", table["metrics"], None).items():
                metrics[name] = self.metric(f"{root}.metrics.{name}", name, item, gate)
        gates: dict[str, dict[str, float]] = {}
        if "gates" in table:
            for name, item in self.table(f"{root}.gates", table["gates"], None).items():
                dotted = f"{root}.gates.{name}"
                bounds = self.table(dotted, item, BOUND_KEYS)
                if not bounds:
                    raise self.wrong(dotted, "a table with one of le, lt, ge, gt", bounds)
                gates[name] = self.bounds(dotted, bounds)
                if name not in CORPUS_METRICS:
                    msg = (
                        f"[tool.ldd.gates] {name}: corpus gates apply to the session "
                        f"aggregates {', '.join(CORPUS_METRICS)} (got {name!r}); gate other "
                        f"metrics with le/lt/ge/gt in [tool.ldd.metrics.{name}] or on the "
                        f"marker ({self.path})"
                    )
                    raise InvalidSpecError(msg)
        agents = AgentsConfig()
        if "agents" in table:
            section = self.table(f"{root}.agents", table["agents"], _AGENT_KEYS)
            agents = AgentsConfig(
                **{k: self.text(f"{root}.agents.{k}", v) for k, v in section.items()}
            )
            if agents.isolation is not None and agents.isolation not in _ISOLATIONS:
                expected = " or ".join(repr(name) for name in _ISOLATIONS)
                raise self.wrong(f"{root}.agents.isolation", expected, agents.isolation)
        return LddConfig(
            dir=None if folder is None else self.text(f"{root}.dir", folder),
            calibration=gate,
            metrics=metrics,
            gates=gates,
            agents=agents,
            source=self.path,
            project=self.path.parent,
            store=store,
            key=key,
        )
