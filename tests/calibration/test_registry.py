"""MetricRegistry: registration, the stored document, history, several registries."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from calibration_support import (
    latency,
    log_errors,
    rate,
    snapshot,
)

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import (
    CompositionError,
    InvalidObservationError,
    LddError,
    LddWarning,
    StoreCorruptError,
    UnknownMetricError,
    VersionConflictError,
)
from pytest_ldd.model.compose import maximum, weighted_sum
from pytest_ldd.model.metric import MetricSpec, signed_delta
from pytest_ldd.model.statistics import MetricState
from pytest_ldd.store.files import TraceStore


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


@pytest.fixture
def registry(store: TraceStore) -> MetricRegistry:
    return MetricRegistry(store)


# --------------------------------------------------------------------------- registration


def test_register_new_metric_starts_advisory(registry: MetricRegistry) -> None:
    metric = rate()
    assert registry.register(metric) is metric
    state = registry.state("pass_rate")
    assert state == MetricState("pass_rate", 1)
    assert state.state == "insufficient_data"
    assert not state.is_load_bearing
    assert not registry.is_load_bearing("pass_rate")
    assert registry.names() == ["pass_rate"]
    assert registry.get("pass_rate") is metric
    assert registry.spec("pass_rate") == metric.spec
    assert "pass_rate" in registry
    assert len(registry) == 1
    doc = registry.store.read_metrics()
    assert doc is not None
    assert doc["specs"] == [metric.spec.to_json()]
    assert doc["promotions"][0]["state"] == "insufficient_data"
    assert doc["promotions"][0]["metric_name"] == "pass_rate"


def test_identical_reregistration_is_a_no_op(store: TraceStore) -> None:
    MetricRegistry(store).register(rate())
    before = snapshot(store)
    again = MetricRegistry(store)
    again.register(rate())
    again.register(rate().spec)
    assert snapshot(store) == before


def test_same_version_different_spec_conflicts(registry: MetricRegistry) -> None:
    registry.register(latency("ms"))
    message = (
        "metric 'latency' version 1 is already registered with a different 'unit' "
        "('ms' != 's'): bump 'version' to change it"
    )
    with pytest.raises(VersionConflictError) as info:
        registry.register(latency("s"))
    assert str(info.value) == message
    # A fresh registry reading the same store knows the spec and conflicts too.
    with pytest.raises(VersionConflictError, match="different 'unit'"):
        MetricRegistry(registry.store).register(latency("s"))


def test_lower_version_conflicts(registry: MetricRegistry) -> None:
    registry.register(latency(version=3))
    with pytest.raises(
        VersionConflictError, match="version 2 is lower than the registered version 3"
    ):
        registry.register(latency(version=2))


def test_higher_version_replaces_the_spec_and_resets_the_state(registry: MetricRegistry) -> None:
    cal = Calibrator(registry)
    registry.register(rate())
    log_errors(cal, "pass_rate", [0.0] * 5)
    assert cal.try_promote("pass_rate")
    registry.extend_history({("pass_rate", "t"): [0.5]})
    registry.register(rate(version=2))
    assert registry.spec("pass_rate").version == 2
    assert registry.state("pass_rate") == MetricState("pass_rate", 2)
    assert registry.history("pass_rate", "t") == []
    # Old pairs stay in the log and are ignored.
    assert cal.stats("pass_rate").n == 0
    assert len(registry.store.read_jsonl(registry.store.calibrations_path)[0]) == 5
    log_errors(cal, "pass_rate", [0.1])
    assert cal.stats("pass_rate").n == 1
    assert cal.recompute("pass_rate").n == 1


def test_register_a_spec(registry: MetricRegistry) -> None:
    spec = MetricSpec("ratio", "bounded", "rate", "share of retried requests")
    metric = registry.register(spec)
    assert metric.spec == spec
    assert metric.observed(0.25) == 0.25


def test_register_rejects_other_objects(registry: MetricRegistry) -> None:
    with pytest.raises(LddError, match="expects a Metric or a MetricSpec"):
        registry.register("pass_rate")  # type: ignore[arg-type]


def test_composite_needs_registered_components(registry: MetricRegistry) -> None:
    a, b = rate("a"), rate("b")
    combo = weighted_sum("combo", [(a, 1.0), (b, 2.0)], description="a and b")
    registry.register(a)
    with pytest.raises(
        CompositionError, match=r"needs its components registered first: missing \['b'\]"
    ):
        registry.register(combo)
    with pytest.raises(CompositionError, match="missing"):
        registry.register(combo.spec)
    registry.register(b)
    registry.register(combo)
    assert registry.spec("combo").components == (("a", 1.0), ("b", 2.0))


def test_composite_components_must_match_the_registered_specs(registry: MetricRegistry) -> None:
    registry.register(rate("a", version=2))
    combo = maximum("combo", [rate("a", version=1)], description="worst of a")
    with pytest.raises(
        CompositionError, match="component 'a' differs from the registered spec in 'version'"
    ):
        registry.register(combo)


def test_register_many_writes_once(registry: MetricRegistry) -> None:
    a, b = rate("a"), rate("b")
    combo = maximum("combo", [a, b], description="worst of a and b")
    registry.register_many([a, b, combo])
    assert registry.names() == ["a", "b", "combo"]
    with pytest.raises(VersionConflictError):
        registry.register_many([rate("c"), latency(), latency("s")])
    # The failed batch registered nothing.
    assert registry.names() == ["a", "b", "combo"]
    assert [s["name"] for s in registry.store.read_metrics()["specs"]] == ["a", "b", "combo"]  # type: ignore[index]


def test_reopened_registry_knows_every_spec(store: TraceStore) -> None:
    a, lat = rate("a"), latency()
    s = signed_delta("delta", description="change in loss", normalize_scale=2.0)
    combo = weighted_sum("combo", [(a, 1.0), (lat, 3.0)], description="a and latency")
    first = MetricRegistry(store)
    first.register_many([a, lat, s, combo])
    reopened = MetricRegistry(store)
    assert reopened.names() == ["a", "latency", "delta", "combo"]
    for name in reopened.names():
        assert reopened.spec(name) == first.spec(name)
    theta = 0.3
    rebuilt = reopened.get("combo")
    # Components read theta with the identity accessor; so do the originals here.
    assert rebuilt.observed(theta) == pytest.approx(combo.observed(theta))
    # Logging needs no re-registration.
    Calibrator(reopened).log("combo", 0.2, 0.25)
    assert Calibrator(MetricRegistry(store)).stats("combo").n == 1


def test_unknown_metric(registry: MetricRegistry) -> None:
    registry.register(rate())
    for call in (registry.get, registry.spec, registry.state, registry.is_load_bearing):
        with pytest.raises(UnknownMetricError, match="unknown metric 'nope'") as info:
            call("nope")
        assert isinstance(info.value, KeyError)
        assert info.value.name == "nope"
        assert "pass_rate" in str(info.value)
    with pytest.raises(UnknownMetricError):
        Calibrator(registry).log("nope", 0.1, 0.2)


def test_corrupt_spec_on_disk(store: TraceStore) -> None:
    store.write_metrics({"schema_version": 1, "specs": [{"name": "x"}], "promotions": []})
    before = store.metrics_path.read_bytes()
    with pytest.raises(StoreCorruptError, match="missing key"):
        MetricRegistry(store)
    assert store.metrics_path.read_bytes() == before


def test_corrupt_state_on_disk(registry: MetricRegistry) -> None:
    registry.register(rate())
    doc = registry.store.read_metrics()
    assert doc is not None
    doc["promotions"][0]["calibration"]["n"] = 7  # histogram no longer adds up
    registry.store.write_metrics(doc)
    with pytest.raises(StoreCorruptError, match="calibration state"):
        MetricRegistry(registry.store)


def test_state_without_incremental_data_is_recounted(registry: MetricRegistry) -> None:
    """metrics.json written by another tool has no calibration cursor: count from the start."""
    cal = Calibrator(registry)
    registry.register(rate())
    log_errors(cal, "pass_rate", [0.1, 0.2])
    doc = registry.store.read_metrics()
    assert doc is not None
    for item in doc["promotions"]:
        del item["calibration"]
        del item["history"]
    registry.store.write_metrics(doc)
    other = Calibrator(MetricRegistry(registry.store))
    assert other.stats("pass_rate").n == 2
    assert other.verify() == []


# --------------------------------------------------------------------------- read-only


def test_read_only_registry_never_writes(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    ro = MetricRegistry(store, read_only=True)
    ro.register(rate())
    ro.extend_history({("pass_rate", "t"): [0.5]})
    assert ro.history("pass_rate", "t") == [0.5]
    cal = Calibrator(ro)
    record = cal.make_record("pass_rate", 0.5, 0.4)
    assert record.observed == 0.4
    assert cal.stats("pass_rate").n == 0
    assert not cal.can_promote("pass_rate")
    with pytest.raises(LddError, match="read_only=True"):
        cal.log("pass_rate", 0.5, 0.4)
    with pytest.raises(LddError, match="read_only=True"):
        cal.log_observations([cal.make_observation("pass_rate", 0.4)])
    with pytest.raises(LddError, match="read_only=True"):
        cal.update()
    ro.reload()
    assert ro.names() == ["pass_rate"]
    assert list(tmp_path.iterdir()) == []


def test_read_only_registry_validates_against_disk(store: TraceStore) -> None:
    MetricRegistry(store).register(latency("ms"))
    before = snapshot(store)
    ro = MetricRegistry(store, read_only=True)
    with pytest.raises(VersionConflictError, match="'ms' != 's'"):
        ro.register(latency("s"))
    ro.register(latency("ms"))
    ro.register(rate())
    assert ro.names() == ["latency", "pass_rate"]
    assert snapshot(store) == before


# --------------------------------------------------------------------------- history


def test_history_is_bounded_and_persisted(registry: MetricRegistry) -> None:
    registry.register_many([rate("a"), rate("b")])
    registry.extend_history({("a", "t1"): [0.1, 0.2], ("b", "<session>"): [1.0]}, window=3)
    registry.extend_history({("a", "t1"): [0.3, 0.4]}, window=3)
    assert registry.history("a", "t1") == [0.2, 0.3, 0.4]
    assert registry.history("a", "t2") == []
    reopened = MetricRegistry(registry.store)
    assert reopened.history("a", "t1") == [0.2, 0.3, 0.4]
    assert reopened.history("b", "<session>") == [1.0]
    with pytest.raises(UnknownMetricError):
        registry.history("ghost", "t")
    with pytest.raises(InvalidObservationError, match=r"a number the metric accepts \(got nan\)"):
        registry.extend_history({("a", "t1"): [float("nan")]})
    # A bounded rate takes no infinity, so its history takes none either.
    with pytest.raises(InvalidObservationError, match=r"accepts \(got inf\)"):
        registry.extend_history({("a", "t1"): [float("inf")]})
    registry.register(latency())
    registry.extend_history({("latency", "t1"): [float("inf"), 3.0]})
    # Stored as 1e300 (JSON holds no infinity), read back as the infinity it was.
    assert MetricRegistry(registry.store).history("latency", "t1") == [float("inf"), 3.0]
    doc = json.loads(registry.store.read_registry_bytes() or b"{}")
    (state,) = [s for s in doc["promotions"] if s["metric_name"] == "latency"]
    assert state["history"] == {"t1": [1e300, 3.0]}
    with pytest.raises(LddError, match="'window' must be an int >= 1"):
        registry.extend_history({("a", "t1"): [0.1]}, window=0)


def test_update_writes_history_and_states_together(registry: MetricRegistry) -> None:
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    writes: list[Any] = []
    original = registry.store.replace_registry

    def counting(doc: Any) -> None:
        writes.append(doc)
        original(doc)

    registry.store.replace_registry = counting  # type: ignore[method-assign]
    cal.update(history={("a", "t"): [0.25]})
    assert len(writes) == 1
    reopened = MetricRegistry(registry.store)
    assert reopened.history("a", "t") == [0.25]
    assert reopened.is_load_bearing("a")


# --------------------------------------------------------------------------- several writers


def test_two_registries_on_one_store(store: TraceStore) -> None:
    one, two = MetricRegistry(store), MetricRegistry(store)
    one.register(rate())
    cal_one, cal_two = Calibrator(one), Calibrator(two)
    log_errors(cal_one, "pass_rate", [0.0] * 3)
    two.reload()
    log_errors(cal_two, "pass_rate", [0.0] * 2)
    cal_one.update()
    assert one.is_load_bearing("pass_rate")
    # two bumps the version; one learns it at its next update.
    two.register(rate(version=2))
    log_errors(cal_one, "pass_rate", [0.0])  # one still logs version 1
    cal_one.update()
    assert one.spec("pass_rate").version == 2
    assert one.state("pass_rate").state == "insufficient_data"
    assert cal_one.stats("pass_rate").n == 0
    assert cal_one.verify() == []


# -- accessor fingerprints -----------------------------------------------------------


def _latency(accessor: Any) -> Any:
    return signed_delta("drift", accessor, description="drift of the nightly latency")


def test_an_accessor_changed_without_a_version_bump_warns(store: TraceStore) -> None:
    MetricRegistry(store).register(_latency(lambda t: t["a"]))
    reopened = MetricRegistry(store)
    with pytest.warns(LddWarning, match=r"'drift' version 1: its accessor's code changed"):
        reopened.register(_latency(lambda t: t["b"]))
    # Not stored over the old one: the next registration still warns.
    with pytest.warns(LddWarning, match="bump 'version'"):
        MetricRegistry(store).register(_latency(lambda t: t["b"] * 2))


def test_the_same_accessor_code_does_not_warn(store: TraceStore, recwarn: Any) -> None:
    MetricRegistry(store).register(_latency(lambda t: t["a"]))
    # Another function object with the same code, elsewhere in the file: not a change.
    MetricRegistry(store).register(_latency(lambda theta: theta["a"]))
    assert not [w for w in recwarn if issubclass(w.category, LddWarning)]


def test_a_version_bump_takes_the_new_accessor_without_a_warning(
    store: TraceStore, recwarn: Any
) -> None:
    MetricRegistry(store).register(_latency(lambda t: t["a"]))
    bumped = signed_delta(
        "drift", lambda t: t["b"], description="drift of the nightly latency", version=2
    )
    MetricRegistry(store).register(bumped)
    assert not [w for w in recwarn if issubclass(w.category, LddWarning)]
    with pytest.warns(LddWarning):
        MetricRegistry(store).register(
            signed_delta(
                "drift", lambda t: -t["b"], description="drift of the nightly latency", version=2
            )
        )


def test_fingerprints_are_stored_per_interpreter_and_validated(store: TraceStore) -> None:
    MetricRegistry(store).register(_latency(lambda t: t["a"]))
    doc = json.loads(store.metrics_path.read_text())
    (state,) = doc["promotions"]
    (tag,) = state["accessor_fingerprints"]
    assert tag.startswith(sys.implementation.name)
    # Another interpreter's fingerprint is kept, never compared with this one's.
    state["accessor_fingerprints"]["otherpy-399"] = "0" * 16
    store.metrics_path.write_text(json.dumps(doc))
    MetricRegistry(store).register(_latency(lambda t: t["a"]))
    state["accessor_fingerprints"] = ["not", "an", "object"]
    store.metrics_path.write_text(json.dumps(doc))
    with pytest.raises(StoreCorruptError, match="accessor_fingerprints"):
        MetricRegistry(store)


def test_a_spec_without_accessor_has_no_fingerprint(store: TraceStore) -> None:
    MetricRegistry(store).register(_latency(None))
    (state,) = json.loads(store.metrics_path.read_text())["promotions"]
    assert "accessor_fingerprints" not in state


# -- the public API the calibrator moves states through --------------------------------


def _counting_writes(registry: MetricRegistry) -> list[Any]:
    writes: list[Any] = []
    original = registry.store.replace_registry

    def counting(doc: Any) -> bytes:
        writes.append(doc)
        return original(doc)

    registry.store.replace_registry = counting  # type: ignore[method-assign]
    return writes


def test_a_transaction_writes_once_and_only_when_something_changed(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b")])
    writes = _counting_writes(registry)
    with registry.transaction():
        pass
    assert writes == []
    with registry.transaction():
        with registry.transaction():  # nested: still one write, at the outermost end
            registry.set_state("a", MetricState("a", 1, demoted_at="2026-12-01T08:00:00Z"))
        registry.extend_history({("b", "t"): [1.0]})
        assert writes == []
    assert len(writes) == 1
    reopened = MetricRegistry(store)
    assert reopened.history("b", "t") == [1.0]


def test_a_transaction_that_raises_writes_nothing(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    before = store.metrics_path.read_bytes()

    def fail_half_way() -> None:
        with registry.transaction():
            registry.extend_history({("a", "t"): [1.0]})
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail_half_way()
    assert store.metrics_path.read_bytes() == before


def test_a_read_only_registry_has_no_transaction(store: TraceStore) -> None:
    registry = MetricRegistry(store, read_only=True)
    with pytest.raises(LddError, match="read_only=True"), registry.transaction():
        pass
    assert not store.exists()


def test_a_state_lagging_behind_its_pairs_is_refreshed_before_any_write(
    store: TraceStore,
) -> None:
    # Five pairs counted (by a calibrator's stats, in memory), never evaluated: the
    # next write of the document re-evaluates the state with the registry's gate,
    # whoever writes (here a registration, no calibrator involved).
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    log_errors(Calibrator(registry), "a", [0.0] * 5)
    stats = Calibrator(registry).stats("a")
    assert (stats.n, registry.state("a").n) == (5, 0)
    registry.register(rate("b"))
    assert registry.state("a").is_load_bearing
    assert MetricRegistry(store).state("a").n == 5


def test_a_state_must_be_of_the_registered_version(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register(rate("a", version=2))
    with pytest.raises(ValueError, match="must be of version 2"):
        registry.set_state("a", MetricState("a", 1))


def test_composites_are_evaluated_after_their_components(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b"), rate("c")])
    both = weighted_sum("both", [(rate("a"), 1.0), (rate("b"), 1.0)], description="a and b")
    registry.register(both)
    assert registry.evaluation_order(["a"]) == ["a", "both"]
    assert registry.evaluation_order(["c"]) == ["c"]
    assert registry.evaluation_order() == ["a", "b", "c", "both"]
    assert registry.components_load_bearing("c")
    assert not registry.components_load_bearing("both")
