"""Bias invariance: registering, logging and promoting never change what is measured.

And statistics are a pure function of the raw log: after any interleaving of logs,
updates, promotions, version bumps and reopenings, the incremental figures equal a
recompute from the log written here independently of the package.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from strategies import RAW_BY_KIND, kinds, make_leaf, scales, unit_floats

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.model.compose import maximum, minimum, weighted_sum
from pytest_ldd.model.metric import Metric, bounded_rate
from pytest_ldd.model.records import CalibrationRecord, ObservationRecord
from pytest_ldd.model.statistics import CalibrationGate, CalibrationStats
from pytest_ldd.store.files import TraceStore

EXAMPLES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fresh_store() -> tuple[TraceStore, Path]:
    folder = Path(tempfile.mkdtemp(prefix="ldd-bias-"))
    return TraceStore(folder), folder


# --------------------------------------------------------------------------- independent oracle


def oracle(store: TraceStore, name: str, version: int, window: int) -> CalibrationStats:
    """The statistics of ``name`` v``version``, computed straight from the log text."""
    errors: list[float] = []
    if store.calibrations_path.exists():
        for line in store.calibrations_path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["metric_name"] == name and record["metric_version"] == version:
                errors.append(abs(record["predicted"] - record["observed"]))
    n = len(errors)
    if n == 0:
        return CalibrationStats()
    quantized = sorted(math.floor(e * 10_000 + 0.5) for e in errors)
    rank = math.ceil(95 * n / 100)
    tail = errors[-window:]
    return CalibrationStats(
        n=n,
        mae=sum(errors) / n,
        p95_error=quantized[rank - 1] / 10_000,
        worst_error=max(errors),
        window_mae=sum(tail) / len(tail),
    )


def assert_close(actual: CalibrationStats, expected: CalibrationStats) -> None:
    assert actual.n == expected.n
    for key in ("mae", "p95_error", "worst_error", "window_mae"):
        a, b = getattr(actual, key), getattr(expected, key)
        if b is None:
            assert a is None, key
        else:
            assert a is not None, key
            assert abs(a - b) <= 1e-9, (key, a, b)


# --------------------------------------------------------------------------- properties


@st.composite
def leaf_with_values(draw: st.DrawFn, name: str = "target") -> tuple[Metric, list[Any]]:
    kind = draw(kinds)
    metric = make_leaf(kind, name, draw(scales))
    values = draw(st.lists(RAW_BY_KIND[kind], min_size=1, max_size=8))
    return metric, values


@EXAMPLES
@given(
    target=leaf_with_values(),
    others=st.lists(st.tuples(kinds, scales), max_size=4),
    data=st.data(),
)
def test_registration_never_changes_another_metrics_observations(
    target: tuple[Metric, list[Any]], others: list[tuple[str, float]], data: st.DataObject
) -> None:
    metric, values = target
    thetas = [{"target": v} for v in values]
    before = [metric.observed(theta) for theta in thetas]
    store, folder = fresh_store()
    try:
        registry = MetricRegistry(store)
        registry.register(metric)
        cal = Calibrator(registry)
        cal.log_observations([cal.make_observation("target", v) for v in values])
        logged = store.observations_path.read_bytes()
        extra = [make_leaf(kind, f"other{i}", scale) for i, (kind, scale) in enumerate(others)]
        registry.register_many(extra)
        compose = data.draw(st.sampled_from([maximum, minimum]))
        registry.register(compose("combo", [metric, *extra], description="combined value"))
        assert registry.get("target") is metric
        assert [metric.observed(theta) for theta in thetas] == before
        # Rebuilt from disk (identity accessor): the same values from the raw values.
        rebuilt = MetricRegistry(store).get("target")
        assert [rebuilt.observed(v) for v in values] == before
        assert store.observations_path.read_bytes() == logged
    finally:
        shutil.rmtree(folder)


@EXAMPLES
@given(target=leaf_with_values(), data=st.data())
def test_logging_never_changes_logged_values(
    target: tuple[Metric, list[Any]], data: st.DataObject
) -> None:
    metric, values = target
    kind = metric.spec.kind
    predictions = data.draw(
        st.lists(RAW_BY_KIND[kind], min_size=len(values), max_size=len(values))
    )
    store, folder = fresh_store()
    try:
        registry = MetricRegistry(store)
        registry.register(metric)
        cal = Calibrator(registry)
        single = cal.log("target", predictions[0], values[0], nodeid="n0")
        batch = [
            cal.make_record("target", p, o, session_id="s")
            for p, o in zip(predictions[1:], values[1:], strict=True)
        ]
        cal.log_many(batch)
        observations = [cal.make_observation("target", v) for v in values]
        cal.log_observations(observations)
        written = [single, *batch]
        lines, _ = store.read_jsonl(store.calibrations_path)
        assert [CalibrationRecord.from_json(line) for line in lines] == written
        for record, p, o in zip(written, predictions, values, strict=True):
            assert record.predicted == metric.normalize(p)
            assert record.observed == metric.normalize(o)
        obs_lines, _ = store.read_jsonl(store.observations_path)
        assert [ObservationRecord.from_json(line) for line in obs_lines] == observations
        assert [o.normalized for o in observations] == [metric.normalize(v) for v in values]
        # Updating the statistics rewrites metrics.json, never the logs.
        before = (store.calibrations_path.read_bytes(), store.observations_path.read_bytes())
        cal.update()
        assert (
            store.calibrations_path.read_bytes(),
            store.observations_path.read_bytes(),
        ) == before
    finally:
        shutil.rmtree(folder)


@EXAMPLES
@given(
    target=leaf_with_values(),
    errors=st.lists(st.floats(min_value=0.0, max_value=0.15), min_size=5, max_size=12),
)
def test_promotion_never_changes_observed(
    target: tuple[Metric, list[Any]], errors: list[float]
) -> None:
    metric, values = target
    thetas = [{"target": v} for v in values]
    before = [metric.observed(theta) for theta in thetas]
    store, folder = fresh_store()
    try:
        registry = MetricRegistry(store)
        registry.register(metric)
        helper = bounded_rate("helper", description="helper pairs")
        registry.register(helper)
        cal = Calibrator(registry)
        rebuilt = MetricRegistry(store).get("target")
        rebuilt_before = [rebuilt.observed(v) for v in values]
        for error in errors:
            cal.log("target", metric.normalize(values[0]), metric.normalize(values[0]))
            cal.log("helper", 0.5 + error / 2, 0.5 - error / 2)
        assert cal.try_promote("target")
        assert cal.try_promote("helper")
        assert registry.is_load_bearing("target")
        assert [metric.observed(theta) for theta in thetas] == before
        reopened = MetricRegistry(store)
        assert [reopened.get("target").observed(v) for v in values] == rebuilt_before
        assert rebuilt_before == before
        assert registry.get("helper").observed(0.3) == helper.observed(0.3)
    finally:
        shutil.rmtree(folder)


# --------------------------------------------------------------------------- stateful


NAMES = ("a", "b")
GATE = CalibrationGate(min_n=3, max_mae=0.2, window=4)


class StoreMachine(RuleBasedStateMachine):
    """Random interleavings of everything that touches the statistics."""

    def __init__(self) -> None:
        super().__init__()
        self.store, self.folder = fresh_store()
        self.versions = dict.fromkeys(NAMES, 1)
        self.registry = MetricRegistry(self.store, gate=GATE)
        leaves = [bounded_rate(n, description=f"rate {n}") for n in NAMES]
        self.registry.register_many(
            [*leaves, weighted_sum("combo", [(m, 1.0) for m in leaves], description="mean rate")]
        )
        self.versions["combo"] = 1
        self.cal = Calibrator(self.registry)
        # A second process that never reloads: it keeps logging the versions it knew.
        self.stale = Calibrator(MetricRegistry(self.store, gate=GATE))

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(
        name=st.sampled_from([*NAMES, "combo"]),
        pairs=st.lists(st.tuples(unit_floats, unit_floats), max_size=6),
    )
    def log(self, name: str, pairs: list[tuple[float, float]]) -> None:
        self.cal.log_many([self.cal.make_record(name, p, o) for p, o in pairs])

    @rule(name=st.sampled_from(NAMES), error=st.floats(min_value=0.0, max_value=0.3))
    def log_close(self, name: str, error: float) -> None:
        for _ in range(3):
            self.cal.log(name, 0.5, 0.5 - error)

    @rule(name=st.sampled_from(NAMES), pair=st.tuples(unit_floats, unit_floats))
    def stale_log(self, name: str, pair: tuple[float, float]) -> None:
        self.stale.log(name, *pair)

    @rule()
    def update(self) -> None:
        self.cal.update()
        states = self.registry.states()
        if states["combo"].is_load_bearing:
            assert states["a"].is_load_bearing
            assert states["b"].is_load_bearing

    @rule(name=st.sampled_from([*NAMES, "combo"]))
    def try_promote(self, name: str) -> None:
        promoted = self.cal.try_promote(name)
        assert promoted == self.registry.is_load_bearing(name)

    @rule(name=st.sampled_from([*NAMES, "combo"]))
    def can_promote(self, name: str) -> None:
        before = self.registry.states()
        self.cal.can_promote(name)
        assert self.registry.states() == before

    @rule(name=st.sampled_from(NAMES))
    def bump(self, name: str) -> None:
        self.versions[name] += 1
        self.registry.register(
            bounded_rate(name, description=f"rate {name}", version=self.versions[name])
        )

    @rule()
    def reopen(self) -> None:
        self.registry = MetricRegistry(self.store, gate=GATE)
        self.cal = Calibrator(self.registry)

    @rule(name=st.sampled_from(NAMES), key=st.sampled_from(["t1", "t2"]), value=unit_floats)
    def history(self, name: str, key: str, value: float) -> None:
        self.cal.update([name], history={(name, key): [value]}, history_window=3)
        assert self.registry.history(name, key)[-1] == value
        assert len(self.registry.history(name, key)) <= 3

    @precondition(lambda self: self.store.calibrations_path.exists())
    @rule(window=st.integers(min_value=1, max_value=12))
    def other_window(self, window: int) -> None:
        other = Calibrator(self.registry, CalibrationGate(window=window))
        for name in NAMES:
            expected = oracle(self.store, name, self.versions[name], window)
            assert_close(other.stats(name), expected)

    @invariant()
    def incremental_equals_full_recompute(self) -> None:
        for name, version in self.versions.items():
            assert self.registry.spec(name).version == version
            expected = oracle(self.store, name, version, GATE.window)
            assert_close(self.cal.stats(name), expected)
            assert_close(self.cal.recompute(name), expected)
        assert self.cal.verify() == []


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(
    max_examples=200,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
