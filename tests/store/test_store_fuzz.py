"""Fuzzing the store: mutate a valid metrics.json and log byte by byte and field by
field; every outcome is a correct figure or a named error, never a wrong figure."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

from calibration_support import latency, log_errors, rate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import LddError
from pytest_ldd.model.records import normalized_pair
from pytest_ldd.model.statistics import Accumulator
from pytest_ldd.store.files import TraceStore

NAMES = ("pass_rate", "latency")


def _template() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as folder:
        store = TraceStore(folder)
        registry = MetricRegistry(store)
        registry.register_many([rate(), latency()])
        cal = Calibrator(registry)
        log_errors(cal, "pass_rate", [0.05, 0.1, 0.02, 0.3, 0.0, 0.12])
        for predicted, observed in [(400.0, 420.0), (100.0, 90.0), (float("inf"), 5000.0)]:
            cal.log("latency", predicted, observed)
        cal.update()
        log_errors(cal, "pass_rate", [0.07])  # a pair not counted yet
        return {
            "metrics.json": store.metrics_path.read_bytes(),
            "metric_calibrations.jsonl": store.calibrations_path.read_bytes(),
        }


TEMPLATE = _template()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _leaves(item, (*path, index))
    return found


@st.composite
def mutations(draw: st.DrawFn) -> dict[str, bytes]:
    files = dict(TEMPLATE)
    target = draw(st.sampled_from(sorted(files)))
    data = files[target]
    how = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "field", "drop"]))
    if how in ("field", "drop") and target == "metrics.json":
        doc = json.loads(data)
        paths = [p for p in _leaves(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if how == "drop":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
        files[target] = json.dumps(doc).encode()
        return files
    if how in ("field", "drop"):  # a log line's field
        lines = data.splitlines(keepends=True)
        index = draw(st.integers(0, len(lines) - 1))
        record = json.loads(lines[index])
        key = draw(st.sampled_from(sorted(record)))
        if how == "drop":
            del record[key]
        else:
            record[key] = draw(json_values)
        lines[index] = json.dumps(record).encode() + b"\n"
        files[target] = b"".join(lines)
        return files
    at = draw(st.integers(0, len(data)))
    if how == "flip":
        at = min(at, len(data) - 1)
        byte = draw(st.integers(0, 255))
        files[target] = data[:at] + bytes([byte]) + data[at + 1 :]
    elif how == "delete":
        files[target] = data[:at] + data[at + draw(st.integers(1, 40)) :]
    elif how == "insert":
        files[target] = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    else:
        files[target] = data[:at]
    return files


def _evaluated_figures(store: TraceStore, registry: MetricRegistry, name: str, n: int) -> Any:
    """The figures of the first ``n`` pairs of ``name``'s version, read from the log."""
    metric = registry.get(name)
    errors = []
    for record in store.read_jsonl(store.calibrations_path)[0]:
        if record["metric_name"] == name and record["metric_version"] == metric.spec.version:
            line = normalized_pair(record, metric.normalize)
            errors.append(abs(line["predicted"] - line["observed"]))
    origin = store.origin()
    acc = Accumulator(metric.spec.version, origin, origin, keep=registry.gate_for(name).window)
    acc.add_many(errors[:n])
    return acc.stats(registry.gate_for(name).window)


def _outcome(folder: Path) -> None:
    """Open the store and read every figure: a named error, or figures that are right."""
    store = TraceStore(folder)
    registry = MetricRegistry(store, read_only=True)
    cal = Calibrator(registry)
    problems = cal.verify()
    for name in registry.names():
        stats, full = cal.stats(name), cal.recompute(name)
        if problems:
            continue  # named: verify says which figure disagrees
        for key in FIGURES:
            a, b = getattr(stats, key), getattr(full, key)
            assert _same(a, b), (name, key, a, b)
        # What status, show and the report display: the state's own figures, those of
        # the pairs it was evaluated on, and the state the gate gives them.
        state = registry.state(name)
        assert state.n <= stats.n
        shown = _evaluated_figures(store, registry, name, state.n)
        for key in FIGURES:
            assert _same(getattr(state, key), getattr(shown, key)), (name, key, state)
        assert state.state == registry.gate_for(name).verdict(shown)
        assert state.is_load_bearing == (state.state == "load_bearing")


FIGURES = ("n", "mae", "p95_error", "worst_error", "window_mae")


def _same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(files=mutations())
def test_every_mutation_is_a_correct_figure_or_a_named_error(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as project:
        folder = Path(project, ".ldd")
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torn lines warn; that is a recovery
            try:
                _outcome(Path(project))
            except LddError as err:
                named = str(err)
            else:
                named = "figures correct"
        assert named.strip()
        for name, data in files.items():
            assert (folder / name).read_bytes() == data  # reading changed nothing


def test_the_template_itself_reads_cleanly() -> None:
    with tempfile.TemporaryDirectory() as project:
        folder = Path(project, ".ldd")
        folder.mkdir()
        for name, data in TEMPLATE.items():
            (folder / name).write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            registry = MetricRegistry(TraceStore(project), read_only=True)
            cal = Calibrator(registry)
            assert cal.verify() == []
            assert cal.stats("pass_rate").n == 7
            assert set(registry.names()) == set(NAMES)
