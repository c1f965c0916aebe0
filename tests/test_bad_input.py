"""Bad input, table-driven: the specific error, a message naming field, expectation and
value, and a store left byte-for-byte as it was."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.config import load_config
from pytest_ldd.errors import (
    CompositionError,
    GamingGuardError,
    InvalidObservationError,
    InvalidSpecError,
    LddError,
    StoreCorruptError,
    UnknownMetricError,
    VersionConflictError,
)
from pytest_ldd.model.compose import maximum, minimum, weighted_sum
from pytest_ldd.model.metric import MetricSpec, bounded_rate, positive_count, signed_delta
from pytest_ldd.model.statistics import CalibrationGate
from pytest_ldd.store.files import TraceStore


@dataclass
class World:
    """A project with a populated store: three metrics, pairs, observations, a session."""

    project: Path
    store: TraceStore
    registry: MetricRegistry
    cal: Calibrator

    def pyproject(self, text: str) -> None:
        (self.project / "pyproject.toml").write_text(text, encoding="utf-8")

    def line(self, raw: bytes) -> None:
        """Append a raw line to the calibration log, after two good pairs."""
        self.cal.log("rate", 0.5, 0.5)
        with self.store.calibrations_path.open("ab") as handle:
            handle.write(raw + b"\n")
        self.cal.log("rate", 0.5, 0.5)


@pytest.fixture
def world(tmp_path: Path) -> World:
    store = TraceStore(tmp_path)
    registry = MetricRegistry(store)
    registry.register_many(
        [
            bounded_rate("rate", description="fraction of failing tests"),
            positive_count("latency", description="p99 latency", unit="ms", normalize_scale=1000),
            signed_delta("delta", description="change in loss between iterations"),
        ]
    )
    cal = Calibrator(registry)
    for _ in range(5):
        cal.log("rate", 0.2, 0.25)
        cal.log("latency", 120, 100)
    cal.log_observations([cal.make_observation("delta", -0.5)])
    store.append_sessions([{"id": "s1"}])
    cal.update()
    (tmp_path / "pyproject.toml").write_text("[tool.ldd]\n", encoding="utf-8")
    return World(tmp_path, store, registry, cal)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under the project (the lock file is not data: the lock library manages it)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def spec(**overrides: Any) -> MetricSpec:
    fields: dict[str, Any] = {
        "name": "fresh",
        "kind": "positive",
        "unit": "ms",
        "description": "time to first byte",
    }
    fields.update(overrides)
    return MetricSpec(**fields)


def rate(name: str = "a", description: str = "share of flaky runs") -> Any:
    return bounded_rate(name, description=description)


@dataclass(frozen=True)
class Case:
    """One bad input: ``action`` must raise exactly ``error`` with every needle."""

    id: str
    action: Callable[[World], object]
    error: type[LddError]
    needles: tuple[str, ...]
    prepare: Callable[[World], None] | None = None


def register(w: World, **overrides: Any) -> object:
    return w.registry.register(spec(**overrides))


# fmt: off
CASES = [
    # --- names, kinds, versions, scales
    Case("name-space", lambda w: register(w, name="bad name"), InvalidSpecError,
         ("'name'", "1-64 chars of [A-Za-z0-9_.-]", "'bad name'")),
    Case("name-empty", lambda w: register(w, name=""), InvalidSpecError, ("'name'", "1-64", "''")),
    Case("name-too-long", lambda w: register(w, name="x" * 65), InvalidSpecError,
         ("'name'", "1-64", "'" + "x" * 65 + "'")),
    Case("name-slash", lambda w: register(w, name="a/b"), InvalidSpecError, ("'name'", "'a/b'")),
    Case("kind", lambda w: register(w, kind="ratio"), InvalidSpecError,
         ("'kind'", "one of 'bounded', 'positive', 'signed'", "'ratio'")),
    Case("version-zero", lambda w: register(w, version=0), InvalidSpecError,
         ("'version'", "an int >= 1", "(got 0)")),
    Case("version-bool", lambda w: register(w, version=True), InvalidSpecError,
         ("'version'", "an int >= 1", "(got True)")),
    Case("version-str", lambda w: register(w, version="2"), InvalidSpecError,
         ("'version'", "an int >= 1", "(got '2')")),
    Case("scale-zero", lambda w: register(w, normalize_scale=0), InvalidSpecError,
         ("'normalize_scale'", "a finite number > 0", "(got 0)")),
    Case("scale-negative", lambda w: register(w, normalize_scale=-5.0), InvalidSpecError,
         ("'normalize_scale'", "> 0", "(got -5.0)")),
    Case("scale-nan", lambda w: register(w, normalize_scale=float("nan")), InvalidSpecError,
         ("'normalize_scale'", "finite", "(got nan)")),
    Case("advisory-false", lambda w: register(w, advisory_only=False), InvalidSpecError,
         ("'advisory_only'", "True at construction", "(got False)")),
    # --- observations and predictions
    Case("observed-nan", lambda w: w.cal.log("latency", 1, float("nan")), InvalidObservationError,
         ("observed", "'latency'", "a number >= 0", "(got nan)")),
    Case("observed-inf-bounded", lambda w: w.cal.log("rate", 0.5, float("inf")),
         InvalidObservationError, ("observed", "'rate'", "a number in [0, 1]", "(got inf)")),
    Case("observed-negative", lambda w: w.cal.log("latency", 1, -1), InvalidObservationError,
         ("observed", "a number >= 0", "(got -1.0)")),
    Case("observed-out-of-range", lambda w: w.cal.log("rate", 0.5, 1.5), InvalidObservationError,
         ("observed", "[0, 1]", "(got 1.5)")),
    Case("observed-bool", lambda w: w.cal.log("latency", 1, True), InvalidObservationError,
         ("observed", "a number >= 0", "(got True)")),
    Case("observed-string", lambda w: w.cal.log("delta", 0, "fast"), InvalidObservationError,
         ("observed", "'delta'", "a real number", "(got 'fast')")),
    Case("observed-none", lambda w: w.cal.log("rate", 0.5, None), InvalidObservationError,
         ("observed", "[0, 1]", "(got None)")),
    Case("predicted-nan", lambda w: w.cal.log("delta", float("nan"), 0.0), InvalidObservationError,
         ("predicted", "a real number", "(got nan)")),
    Case("predicted-negative", lambda w: w.cal.log("latency", -3, 1), InvalidObservationError,
         ("predicted", ">= 0", "(got -3.0)")),
    Case("rate-undefined", lambda w: w.cal.log("rate", 0.5, (1, 0)), InvalidObservationError,
         ("observed", "total > 0: rate undefined", "(1, 0)")),
    Case("rate-failing-above-total", lambda w: w.cal.log("rate", (5, 4), 0.5),
         InvalidObservationError, ("predicted", "0 <= failing <= total", "(5, 4)")),
    Case("observation-inf-bounded", lambda w: w.cal.make_observation("rate", float("-inf")),
         InvalidObservationError, ("observed", "[0, 1]", "(got -inf)")),
    # --- the gaming-guard, four languages
    Case("guard-en", lambda w: w.registry.register(rate(description="Rewards me if CI is green")),
         GamingGuardError, ("'rewards me'", "describe what is measured")),
    Case("guard-en-want", lambda w: register(w, description="latency I  want to see"),
         GamingGuardError, ("'i want'", "(got 'latency I  want to see')")),
    Case("guard-de", lambda w: register(w, description="Zeit, die meine Entscheidung belohnt"),
         GamingGuardError, ("'meine entscheidung'",)),
    Case("guard-fr", lambda w: register(w, description="score qui favorise mon code"),
         GamingGuardError, ("'favorise mon'",)),
    Case("guard-es", lambda w: register(w, description="mide mi enfoque actual"),
         GamingGuardError, ("'mi enfoque'",)),
    Case("guard-nfkc", lambda w: register(w, description="ｍｙ ａｐｐｒｏａｃｈ wins"),
         GamingGuardError, ("'my approach'",)),
    # --- composition
    Case("compose-empty", lambda w: weighted_sum("c", [], description="nothing"), CompositionError,
         ("'c'", "at least one component", "(got [])")),
    Case("compose-negative-weight",
         lambda w: weighted_sum("c", [(rate("a"), 1.0), (rate("b"), -1.0)], description="ab"),
         CompositionError, ("'weight' of 'b'", "a finite number >= 0", "(got -1.0)")),
    Case("compose-nan-weight",
         lambda w: weighted_sum("c", [(rate("a"), float("nan"))], description="a"),
         CompositionError, ("'weight' of 'a'", "finite", "(got nan)")),
    Case("compose-zero-weights",
         lambda w: weighted_sum("c", [(rate("a"), 0.0), (rate("b"), 0)], description="ab"),
         CompositionError, ("'weight' must be > 0", "(got [0.0, 0.0])")),
    Case("compose-duplicates", lambda w: maximum("c", [rate("a"), rate("a")], description="aa"),
         CompositionError, ("names must be unique", "(got 'a' twice)")),
    Case("compose-unregistered",
         lambda w: w.registry.register(minimum("c", [rate("a")], description="best of a")),
         CompositionError, ("'c'", "components registered first", "missing ['a']")),
    Case("compose-unregistered-spec",
         lambda w: register(w, name="c", kind="bounded", composition="max",
                            components=(("rate", 1.0), ("ghost", 1.0))),
         CompositionError, ("'c'", "missing ['ghost']")),
    # --- version conflicts
    Case("conflict-unit",
         lambda w: w.registry.register(positive_count("latency", description="p99 latency",
                                                      unit="s", normalize_scale=1000)),
         VersionConflictError,
         ("metric 'latency' version 1", "different 'unit'", "('ms' != 's')", "bump 'version'")),
    Case("conflict-scale",
         lambda w: w.registry.register(positive_count("latency", description="p99 latency",
                                                      unit="ms", normalize_scale=500)),
         VersionConflictError, ("'normalize_scale'", "(1000.0 != 500.0)")),
    Case("conflict-kind",
         lambda w: w.registry.register(MetricSpec("rate", "positive", "rate",
                                                  "fraction of failing tests")),
         VersionConflictError, ("'kind'", "('bounded' != 'positive')")),
    Case("conflict-lower",
         lambda w: w.registry.register(bounded_rate("rate", description="x", version=2)),
         VersionConflictError, ("version 2 is lower than the registered version 3",),
         prepare=lambda w: w.registry.register(bounded_rate("rate", description="x", version=3))),
    # --- unknown metrics
    Case("unknown-log", lambda w: w.cal.log("ghost", 0.1, 0.2), UnknownMetricError,
         ("unknown metric 'ghost'", "registered: rate, latency, delta")),
    Case("unknown-state", lambda w: w.registry.state("ghost"), UnknownMetricError,
         ("unknown metric 'ghost'",)),
    Case("unknown-observation", lambda w: w.cal.make_observation("ghost", 1), UnknownMetricError,
         ("'ghost'",)),
    Case("unknown-update", lambda w: w.cal.update(["ghost"]), UnknownMetricError, ("'ghost'",)),
    Case("unknown-history", lambda w: w.registry.extend_history({("ghost", "t"): [1.0]}),
         UnknownMetricError, ("'ghost'",)),
    # --- malformed JSONL lines
    Case("jsonl-invalid", lambda w: w.cal.stats("rate"), StoreCorruptError,
         ("metric_calibrations.jsonl:12", "not valid JSON"),
         prepare=lambda w: w.line(b'{"metric_name":"rate"}}')),
    Case("jsonl-not-object", lambda w: w.cal.update(), StoreCorruptError,
         ("metric_calibrations.jsonl:12", "expected a JSON object", "list"),
         prepare=lambda w: w.line(b"[0.5, 0.5]")),
    Case("jsonl-missing-key", lambda w: w.cal.try_promote("rate"), StoreCorruptError,
         ("metric_calibrations.jsonl:12", "missing required key(s) ['observed']"),
         prepare=lambda w: w.line(b'{"metric_name":"rate","metric_version":1,"predicted":0.5}')),
    Case("jsonl-out-of-range", lambda w: w.cal.stats("rate"), StoreCorruptError,
         (":12", "'predicted' must be a normalized number in [0, 1]", "(got 2)"),
         prepare=lambda w: w.line(
             b'{"metric_name":"rate","metric_version":1,"predicted":2,"observed":0}')),
    Case("jsonl-version-type", lambda w: w.cal.verify(), StoreCorruptError,
         (":12", "'metric_version' must be an int >= 1", "(got '1')"),
         prepare=lambda w: w.line(
             b'{"metric_name":"rate","metric_version":"1","predicted":0,"observed":0}')),
    Case("jsonl-nan", lambda w: w.cal.stats("rate"), StoreCorruptError,
         (":12", "not valid JSON"),
         prepare=lambda w: w.line(
             b'{"metric_name":"rate","metric_version":1,"predicted":NaN,"observed":0}')),
    Case("metrics-json-corrupt", lambda w: MetricRegistry(w.store), StoreCorruptError,
         ("metrics.json", "not valid JSON", "left untouched"),
         prepare=lambda w: w.store.metrics_path.write_bytes(b'{"schema_version": 1, "specs": [')),
    # --- configuration
    Case("config-unknown-key", lambda w: load_config(w.project), InvalidSpecError,
         ("unknown key 'tool.ldd.calibration.max_mea'", "pyproject.toml",
          "(expected one of: min_n, max_mae, max_p95, max_worst, window)"),
         prepare=lambda w: w.pyproject("[tool.ldd.calibration]\nmax_mea = 0.2\n")),
    Case("config-unknown-metric-key", lambda w: load_config(w.project), InvalidSpecError,
         ("unknown key 'tool.ldd.metrics.latency.kidn'", "pyproject.toml"),
         prepare=lambda w: w.pyproject("[tool.ldd.metrics.latency]\nkidn = 'positive'\n")),
    Case("config-unknown-top-key", lambda w: load_config(w.project), InvalidSpecError,
         ("unknown key 'tool.ldd.threshold'",),
         prepare=lambda w: w.pyproject("[tool.ldd]\nthreshold = 0.1\n")),
    Case("config-wrong-type", lambda w: load_config(w.project), InvalidSpecError,
         ("'tool.ldd.calibration.min_n'", "must be an integer >= 1", "(got '5')"),
         prepare=lambda w: w.pyproject("[tool.ldd.calibration]\nmin_n = '5'\n")),
    # --- gates, history, read-only
    Case("gate-min-n", lambda w: CalibrationGate(min_n=0), InvalidSpecError,
         ("'min_n'", "an int >= 1", "(got 0)")),
    Case("gate-max-mae", lambda w: w.registry.set_gate("rate", CalibrationGate(max_mae=-0.1)),
         InvalidSpecError, ("'max_mae'", "a finite number >= 0", "(got -0.1)")),
    Case("history-nan", lambda w: w.registry.extend_history({("rate", "t"): [float("nan")]}),
         InvalidObservationError, ("('rate', 't')", "a number the metric accepts", "(got nan)")),
    Case("read-only-log",
         lambda w: Calibrator(MetricRegistry(w.store, read_only=True)).log("rate", 0.5, 0.5),
         LddError, ("read_only=True", "nothing may be written")),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_raises_the_specific_error_and_changes_nothing(world: World, case: Case) -> None:
    if case.prepare is not None:
        case.prepare(world)
    before = snapshot(world.project)
    with pytest.raises(LddError) as info:
        case.action(world)
    assert type(info.value) is case.error, f"{type(info.value).__name__}: {info.value}"
    message = str(info.value)
    for needle in case.needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    assert snapshot(world.project) == before


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "description",
    [
        "the api wants a token",
        "time until the preferred replica answers",
        "count of rewarded requests",
        "mycurrent-style counters are excluded",
        "le monde actuel des tests",
        "tiempo de mi actualización diaria",
        "Dauer meiner aktuellen Messung",
        "favorites per user",
    ],
)
def test_whole_word_non_matches_are_accepted(world: World, description: str) -> None:
    metric = world.registry.register(spec(description=description))
    assert world.registry.spec("fresh").description == metric.spec.description
