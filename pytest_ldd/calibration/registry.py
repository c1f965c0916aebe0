"""The metric registry: every metric's spec, state, counted statistics and history.

A metric is registered *advisory* (state ``insufficient_data``).  The registry
keeps one document in its :class:`~pytest_ldd.store.Store` (``metrics.json`` in the
file store): the specs, and per metric its :class:`~pytest_ldd.model.statistics.MetricState`,
the :class:`~pytest_ldd.model.statistics.Accumulator` of its pairs and its prediction
history.  Reopened in a new process, it knows every spec from the store.  The
:class:`~pytest_ldd.calibration.calibrator.Calibrator` counts the pairs and moves the
states through the registry's public methods, inside a :meth:`~MetricRegistry.transaction`
(the store's lock held, the document reloaded first and written once at the end).
A stored state always follows the pairs stored with it: before each write the
registry re-evaluates, with its own gates, any state that lags behind its counted
pairs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.errors import (
    CompositionError,
    InvalidObservationError,
    InvalidSpecError,
    LddError,
    LddWarning,
    StoreCorruptError,
    UnknownMetricError,
    VersionConflictError,
)
from pytest_ldd.model.metric import Metric, MetricSpec, metric_from_spec
from pytest_ldd.model.records import is_number, utc_timestamp
from pytest_ldd.model.statistics import (
    TOLERANCE,
    Accumulator,
    CalibrationGate,
    MetricState,
    evaluate_state,
)
from pytest_ldd.store import SCHEMA_VERSION, StalePosition

if TYPE_CHECKING:
    from pytest_ldd.store import Cursor, Store

__all__ = ["MetricRegistry", "read_only_error"]


@dataclass(slots=True)
class _Entry:
    """What the registry knows of one metric name."""

    metric: Metric
    state: MetricState
    acc: Accumulator
    history: dict[str, list[float]] = field(default_factory=dict)
    # False for a spec known only in memory (a read-only registry's registrations).
    persisted: bool = True
    # Accessor fingerprints by interpreter tag (see Metric.accessor_fingerprint).
    accessors: dict[str, str] = field(default_factory=dict)
    #: Keys of the stored state object this registry does not know (another tool's),
    #: written back verbatim.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> MetricSpec:
        return self.metric.spec


#: The top-level keys of metrics.json this registry writes (others are kept verbatim).
_DOCUMENT_KEYS: Final = frozenset({"schema_version", "generated_at", "specs", "promotions"})

#: The keys of a state object this registry writes (others are kept verbatim).
_STATE_KEYS: Final = frozenset(
    {
        "metric_name",
        "version",
        "state",
        "is_load_bearing",
        "promoted_at",
        "demoted_at",
        "n_calibration_samples",
        "last_mae",
        "last_p95_error",
        "last_worst_error",
        "last_window_mae",
        "calibration",
        "history",
        "accessor_fingerprints",
    }
)


def read_only_error(store: Store) -> LddError:
    """The error of a write to a registry opened ``read_only=True``."""
    msg = (
        f"the registry of {store.location} was opened read_only=True: nothing may be "
        f"written to it (open it with read_only=False to record)"
    )
    return LddError(msg)


class MetricRegistry:
    """Every metric of a project: specs, states, calibration statistics, history.

    The registry reads its document from the store when it is created, so a metric registered
    in an earlier process needs no re-registration.  ``gate`` is the default
    :class:`CalibrationGate`, ``gates`` per-metric overrides.  With
    ``read_only=True`` nothing is ever written: registrations are still validated
    against the store but kept in memory.
    """

    def __init__(
        self,
        store: Store,
        *,
        gate: CalibrationGate | None = None,
        gates: Mapping[str, CalibrationGate] | None = None,
        read_only: bool = False,
    ) -> None:
        self.store = store
        self.read_only = read_only
        self.gate = gate if gate is not None else CalibrationGate()
        self._gates: dict[str, CalibrationGate] = dict(gates or {})
        self._entries: dict[str, _Entry] = {}
        # What metrics.json holds that this registry does not understand (another
        # tool's top-level keys, states without a spec): written back verbatim.
        self._unknown: dict[str, Any] = {}
        self._orphans: list[Mapping[str, Any]] = []
        # How deep in transactions this registry is, and whether one changed what the
        # states and counts do not show (a registration, an accessor, the history).
        self._depth = 0
        self._dirty = False
        # The bytes last read or written: reload() parses again only when they differ.
        self._seen = self.store.read_registry_bytes()
        doc = self._decode(self._seen)
        self._entries = self._parse(doc)
        self._keep_unknown(doc)

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"MetricRegistry({self.store!r}{mode})"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    # ------------------------------------------------------------------ lookups

    def _entry(self, name: str) -> _Entry:
        try:
            return self._entries[name]
        except TypeError:  # an unhashable name: a list, a dict
            msg = f"a metric name must be a str (got {name!r})"
            raise InvalidObservationError(msg) from None
        except KeyError:
            if not isinstance(name, str):
                msg = f"a metric name must be a str (got {name!r})"  # type: ignore[unreachable]
                raise InvalidObservationError(msg) from None
            known = ", ".join(self._entries) or "none"
            msg = f"unknown metric {name!r}: register it first (registered: {known})"
            raise UnknownMetricError(msg, name=name) from None

    def names(self) -> list[str]:
        """The registered metric names, in registration order."""
        return list(self._entries)

    def get(self, name: str) -> Metric:
        """The metric object (rebuilt with the identity accessor when read from disk)."""
        return self._entry(name).metric

    def spec(self, name: str) -> MetricSpec:
        """The registered spec."""
        return self._entry(name).spec

    def state(self, name: str) -> MetricState:
        """The state as last evaluated (and stored)."""
        return self._entry(name).state

    def states(self) -> dict[str, MetricState]:
        """Every metric's state, in registration order."""
        return {name: entry.state for name, entry in self._entries.items()}

    def is_load_bearing(self, name: str) -> bool:
        """Whether the metric's gates fail tests."""
        return self._entry(name).state.is_load_bearing

    def gate_for(self, name: str) -> CalibrationGate:
        """The calibration gate of ``name`` (its own, else the registry's default)."""
        return self._gates.get(name, self.gate)

    def own_gate(self, name: str) -> CalibrationGate | None:
        """``name``'s own calibration gate, or None where the default applies."""
        return self._gates.get(name)

    def set_gate(self, name: str, gate: CalibrationGate) -> None:
        """Give ``name`` its own calibration gate (in memory; gates come from config)."""
        self._gates[name] = gate

    def history(self, name: str, key: str) -> list[float]:
        """The last values recorded for ``(name, key)`` (oldest first; empty if none).

        An infinity was stored as :data:`HISTORY_BOUND` (JSON holds none): it is
        read back as the infinity, so a predictor reads one history alike whether it
        was recorded in this session or an earlier one.
        """
        return [_unbounded(v) for v in self._entry(name).history.get(key, ())]

    # ------------------------------------------------------------------ what the calibrator moves

    def counted(self, name: str) -> Accumulator:
        """The running statistics of ``name``'s current version, stored with its state.

        The calibrator counts the pairs appended since into it (in place), and
        replaces it to recount (:meth:`set_counted`).
        """
        return self._entry(name).acc

    def set_counted(self, name: str, acc: Accumulator) -> None:
        """Replace ``name``'s running statistics (a recount from ``acc.start``)."""
        self._entry(name).acc = acc

    def set_state(self, name: str, state: MetricState) -> None:
        """Set ``name``'s state (evaluated on its counted statistics)."""
        entry = self._entry(name)
        if (state.name, state.version) != (entry.spec.name, entry.spec.version):
            msg = (
                f"a state of metric {entry.spec.name!r} must be of version "
                f"{entry.spec.version} (got {state.name!r} version {state.version})"
            )
            raise ValueError(msg)
        entry.state = state

    def components_load_bearing(self, name: str) -> bool:
        """Whether every component of ``name`` is load-bearing (True for a plain metric)."""
        comps = self._entry(name).spec.components
        entries = self._entries
        return comps is None or all(
            n in entries and entries[n].state.is_load_bearing for n, _ in comps
        )

    def evaluation_order(self, names: Iterable[str] | None = None) -> list[str]:
        """``names`` (default: every metric) and the composites that depend on them,
        each after its components: the order states are evaluated in."""
        entries = self._entries
        wanted = set(entries) if names is None else {self._entry(n).spec.name for n in names}
        grew = True
        while grew:
            grew = False
            for name, entry in entries.items():
                comps = entry.spec.components
                if name not in wanted and comps and any(n in wanted for n, _ in comps):
                    wanted.add(name)
                    grew = True
        ordered: list[str] = []
        seen: set[str] = set()

        def visit(name: str) -> None:
            if name in seen or name not in entries:
                return
            seen.add(name)
            for component, _ in entries[name].spec.components or ():
                visit(component)
            if name in wanted:
                ordered.append(name)

        for name in entries:
            visit(name)
        return ordered

    def stored(self) -> dict[str, tuple[MetricSpec, MetricState, Accumulator]]:
        """Each metric's spec, state and counted statistics as the store holds them now.

        Read afresh, not what this registry holds in memory (``ldd metric verify``
        checks the stored states against them).
        """
        entries = self._parse(self._decode(self.store.read_registry_bytes()))
        return {name: (e.spec, e.state, e.acc) for name, e in entries.items()}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Change the registry under the store's lock, the document reloaded first.

        At the end of the outermost transaction the document is written, once, if
        anything changed (a state, a count, a registration, an accessor, the
        history) or a metric is known only in memory; a block that raises writes
        nothing.  Not for a read-only registry (an ``LddError``).
        """
        if self.read_only:
            raise read_only_error(self.store)
        with self.store.lock():
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.reload()
            before = self._fingerprint()
            self._depth, self._dirty = 1, False
            try:
                yield
            finally:
                self._depth = 0
            unsaved = any(not e.persisted for e in self._entries.values())
            if self._dirty or unsaved or self._fingerprint() != before:
                self._write_locked()

    def _fingerprint(self) -> list[tuple[str, object, int, MetricState]]:
        """What a write of the document would record, in a cheaply comparable form."""
        return [(name, e.acc.cursor, e.acc.n, e.state) for name, e in self._entries.items()]

    # ------------------------------------------------------------------ registration

    def _as_metric(self, metric: Metric | MetricSpec) -> Metric:
        if isinstance(metric, Metric):
            return metric
        if isinstance(metric, MetricSpec):
            if metric.components is None:
                return metric_from_spec(metric)
            components = {
                name: self._entries[name].metric
                for name, _ in metric.components
                if name in self._entries
            }
            return metric_from_spec(metric, components)
        msg = f"register() expects a Metric or a MetricSpec (got {metric!r})"  # type: ignore[unreachable]
        raise InvalidSpecError(msg)

    def register(self, metric: Metric | MetricSpec) -> Metric:
        """Register a metric (or a spec); return the registered metric object.

        A new name starts advisory (``insufficient_data``).  Re-registering an
        identical spec is a no-op; the same version with a different spec, or a
        lower version, is a :class:`VersionConflictError`; a higher version
        replaces the spec and starts its statistics afresh.  A composite needs its
        components registered first (:class:`CompositionError`).
        """
        return self.register_many([metric])[0]

    def register_many(self, metrics: Iterable[Metric | MetricSpec]) -> list[Metric]:
        """Register several metrics with one lock and at most one write."""
        batch = list(metrics)
        # Validate against what is already known before touching the disk, so an
        # invalid registration leaves the store exactly as it was.
        trial = {name: _copy_entry(e) for name, e in self._entries.items()}
        if all(self._is_known(m) for m in batch):
            return [self._register_into(self._entries, self._as_metric(m))[0] for m in batch]
        for m in batch:
            self._register_into(trial, self._as_metric(m))
        if self.read_only:
            for m in batch:
                self._register_into(self._entries, self._as_metric(m))
            return [self._entries[m.name].metric for m in batch]
        with self.transaction():
            for m in batch:
                self._dirty |= self._register_into(self._entries, self._as_metric(m))[1]
        return [self._entries[m.name].metric for m in batch]

    def _is_known(self, metric: Metric | MetricSpec) -> bool:
        spec = metric.spec if isinstance(metric, Metric) else metric
        entry = self._entries.get(spec.name) if isinstance(spec, MetricSpec) else None
        if entry is None or entry.spec != spec or not (self.read_only or entry.persisted):
            return False
        # An accessor not yet fingerprinted (on this interpreter) is news to store.
        fingerprint = metric.accessor_fingerprint if isinstance(metric, Metric) else None
        return fingerprint is None or fingerprint.partition(":")[0] in entry.accessors

    def _register_into(self, entries: dict[str, _Entry], metric: Metric) -> tuple[Metric, bool]:
        """Apply one registration to ``entries``; return the metric and whether it changed."""
        spec = metric.spec
        if spec.components is not None:
            self._check_components(entries, metric)
        existing = entries.get(spec.name)
        if existing is not None:
            old = existing.spec
            if spec.version == old.version:
                diff = old.difference(spec)
                if diff is None:
                    # Keep the caller's object: it carries the accessor.
                    existing.metric = metric
                    return metric, _check_accessor(existing, metric)
                msg = (
                    f"metric {spec.name!r} version {spec.version} is already registered with "
                    f"a different {diff!r} ({getattr(old, diff)!r} != {getattr(spec, diff)!r}): "
                    f"bump 'version' to change it"
                )
                raise VersionConflictError(msg)
            if spec.version < old.version:
                msg = (
                    f"metric {spec.name!r} version {spec.version} is lower than the registered "
                    f"version {old.version}: versions only go up (use version > {old.version} "
                    f"for a change)"
                )
                raise VersionConflictError(msg)
        start = _frontier(entries, self.store.origin())
        entries[spec.name] = _Entry(
            metric=metric,
            state=MetricState(spec.name, spec.version),
            acc=Accumulator(spec.version, start, start, keep=self.gate_for(spec.name).window),
            persisted=not self.read_only,
        )
        _check_accessor(entries[spec.name], metric)
        if existing is not None:
            self._rebuild_dependents(entries, spec.name)
        return metric, True

    def _check_components(self, entries: Mapping[str, _Entry], metric: Metric) -> None:
        spec = metric.spec
        assert spec.components is not None
        missing = [name for name, _ in spec.components if name not in entries]
        if missing:
            msg = (
                f"composite metric {spec.name!r} needs its components registered first: "
                f"missing {missing} (registered: {sorted(entries)})"
            )
            raise CompositionError(msg)
        for component, _ in getattr(metric, "components", ()):
            registered = entries[component.name].spec
            diff = registered.difference(component.spec)
            if diff is not None:
                msg = (
                    f"composite metric {spec.name!r} component {component.name!r} differs from "
                    f"the registered spec in {diff!r} ({getattr(registered, diff)!r} != "
                    f"{getattr(component.spec, diff)!r}): register the component first"
                )
                raise CompositionError(msg)

    def _rebuild_dependents(self, entries: dict[str, _Entry], changed: str) -> None:
        # A composite holds its component objects; after a component's version bump
        # it must compute from the new one.
        for entry in entries.values():
            comps = entry.spec.components
            if comps is not None and any(name == changed for name, _ in comps):
                entry.metric = metric_from_spec(
                    entry.spec, {name: entries[name].metric for name, _ in comps}
                )

    # ------------------------------------------------------------------ disk

    def reload(self) -> None:
        """Re-read the registry document (keeping memory-only specs and newer in-memory figures).

        A file whose bytes are those this registry last read or wrote is not parsed
        again (bytes, not timestamps: coarse file-system clocks cannot fool it).
        """
        raw = self.store.read_registry_bytes()
        if raw is not None and raw == self._seen:
            return
        doc = self._decode(raw)
        self._merge(self._parse(doc))
        self._keep_unknown(doc)
        self._seen = raw

    def _keep_unknown(self, doc: Mapping[str, Any] | None) -> None:
        if doc is None:
            return
        self._unknown = {k: v for k, v in doc.items() if k not in _DOCUMENT_KEYS}
        specs = {data["name"] for data in doc["specs"]}
        self._orphans = [data for data in doc["promotions"] if data["metric_name"] not in specs]

    def _decode(self, raw: bytes | None) -> dict[str, Any] | None:
        return None if raw is None else self.store.parse_registry(raw)

    def _merge(self, fresh: dict[str, _Entry]) -> None:
        for name, old in self._entries.items():
            new = fresh.get(name)
            if new is None:
                # Known here but not on disk: a read-only registration, or a
                # document that was removed; the next write stores it again.
                old.persisted = False
                fresh[name] = old
                continue
            if new.spec == old.spec:
                new.metric = old.metric
                if (
                    old.acc.version == new.acc.version
                    and old.acc.start == new.acc.start
                    and new.acc.cursor < old.acc.cursor
                ):
                    new.acc = old.acc
        # Composites must point at the component objects that were kept.
        for entry in fresh.values():
            comps = entry.spec.components
            current = getattr(entry.metric, "components", ())
            if comps is not None and any(m is not fresh[m.name].metric for m, _ in current):
                entry.metric = metric_from_spec(entry.spec, {n: fresh[n].metric for n, _ in comps})
        self._entries = fresh

    def _parse(self, doc: Mapping[str, Any] | None) -> dict[str, _Entry]:
        if doc is None:
            return {}
        source = self.store.registry_location

        def corrupt(msg: str) -> StoreCorruptError:
            return StoreCorruptError(f"{msg}; the file was left untouched", path=source)

        specs: list[MetricSpec] = []
        for data in doc["specs"]:
            try:
                specs.append(MetricSpec.from_json(data, source=source))
            except InvalidSpecError as err:
                raise corrupt(str(err)) from err
            if any(s.name == specs[-1].name for s in specs[:-1]):
                raise corrupt(f"{source}: 'specs' holds two specs named {specs[-1].name!r}")
        states: dict[str, Mapping[str, Any]] = {}
        for data in doc["promotions"]:
            name = data.get("metric_name")
            if not isinstance(name, str):
                raise corrupt(f"{source}: a state has no 'metric_name' (got {data!r})")
            if name in states:
                raise corrupt(f"{source}: 'promotions' holds two states of {name!r}")
            states[name] = data
        metrics: dict[str, Metric] = {}
        pending = list(specs)
        # Components come first in registration order, but tolerate any order.
        while pending:
            progress = [
                s
                for s in pending
                if s.components is None or all(n in metrics for n, _ in s.components)
            ]
            if not progress:
                names = [s.name for s in pending]
                raise corrupt(f"{source}: composites {names} name components that are not stored")
            for s in progress:
                metrics[s.name] = (
                    metric_from_spec(s)
                    if s.components is None
                    else metric_from_spec(s, {n: metrics[n] for n, _ in s.components})
                )
            pending = [s for s in pending if s.name not in metrics]
        entries: dict[str, _Entry] = {}
        for s in specs:
            entries[s.name] = self._parse_state(metrics[s.name], states.get(s.name), source)
        return entries

    def _parse_state(self, metric: Metric, data: Mapping[str, Any] | None, source: str) -> _Entry:
        spec = metric.spec
        origin = self.store.origin()
        fresh_acc = Accumulator(spec.version, origin, origin, self.gate_for(spec.name).window)
        if data is None:
            # A spec without a state (e.g. written by another tool): count from the start.
            return _Entry(metric, MetricState(spec.name, spec.version), fresh_acc)
        try:
            state = MetricState.from_json(data, source=source)
        except ValueError as err:
            raise StoreCorruptError(f"{err}; the file was left untouched", path=source) from err
        if state.version != spec.version:
            extra = {k: v for k, v in data.items() if k not in _STATE_KEYS}
            return _Entry(metric, MetricState(spec.name, spec.version), fresh_acc, extra=extra)
        raw_acc = data.get("calibration")
        try:
            acc = (
                fresh_acc
                if raw_acc is None
                else Accumulator.from_json(raw_acc, source, self.store.position_from_json)
            )
        except StoreCorruptError as err:
            # The accumulator does not know whose it is: name the metric.
            raise StoreCorruptError(f"metric {spec.name!r}: {err}", path=err.path) from err
        except StalePosition as err:
            # Counting on from there would count other pairs (or none): recount.
            msg = f"{err}; the statistics of {spec.name!r} are recounted from the start of the log"
            warnings.warn(msg, LddWarning, stacklevel=2)
            acc = fresh_acc
            raw_acc = None
        if acc.version != spec.version:
            acc = fresh_acc
        elif raw_acc is not None:
            problem = state_disagreement(state, acc)
            if problem is not None:
                msg = f"{source}: state of {spec.name!r}: {problem}; the file was left untouched"
                raise StoreCorruptError(msg, path=source)
        history: dict[str, list[float]] = {}
        raw_history = data.get("history", {})
        if not isinstance(raw_history, Mapping):
            msg = (
                f"{source}: state 'history' of {spec.name!r} must be an object "
                f"(got {raw_history!r})"
            )
            raise StoreCorruptError(msg, path=source)
        for key, values in raw_history.items():
            if not isinstance(values, list) or not all(
                is_number(v) and math.isfinite(v) for v in values
            ):
                msg = (
                    f"{source}: history {key!r} of {spec.name!r} must be a list of finite "
                    f"numbers (got {values!r})"
                )
                raise StoreCorruptError(msg, path=source)
            history[key] = [float(v) for v in values]
        accessors = data.get("accessor_fingerprints", {})
        if not isinstance(accessors, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in accessors.items()
        ):
            msg = (
                f"{source}: state 'accessor_fingerprints' of {spec.name!r} must be an object "
                f"of strings (got {accessors!r})"
            )
            raise StoreCorruptError(msg, path=source)
        extra = {k: v for k, v in data.items() if k not in _STATE_KEYS}
        return _Entry(metric, state, acc, history, extra=extra, accessors=dict(accessors))

    def _document(self) -> dict[str, Any]:
        promotions = []
        for entry in self._entries.values():
            item = entry.state.to_json()
            acc = entry.acc
            item["calibration"] = acc.to_json(self.store.position_json(acc.start, acc.cursor))
            item["history"] = entry.history
            if entry.accessors:
                item["accessor_fingerprints"] = dict(sorted(entry.accessors.items()))
            item.update((k, v) for k, v in entry.extra.items() if k not in item)
            promotions.append(item)
        promotions.extend(dict(o) for o in self._orphans if o["metric_name"] not in self._entries)
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_at": utc_timestamp(),
            "specs": [entry.spec.to_json() for entry in self._entries.values()],
            "promotions": promotions,
            **{k: v for k, v in self._unknown.items() if k not in _DOCUMENT_KEYS},
        }

    def _write_locked(self) -> None:
        self._refresh_lagging()
        self._seen = self.store.replace_registry(self._document())
        for entry in self._entries.values():
            entry.persisted = True
        self._dirty = False

    def _refresh_lagging(self) -> None:
        """Re-evaluate, with the registry's gates, every state whose pairs were counted
        since it was evaluated: a stored state always follows the pairs stored with it."""
        entries = self._entries
        lagging = [n for n, e in entries.items() if e.state.n != e.acc.n]
        if not lagging:
            return
        now = utc_timestamp()
        for name in self.evaluation_order(lagging):
            entry = entries[name]
            gate = self.gate_for(name)
            entry.state = evaluate_state(
                entry.state,
                entry.acc.stats(gate.window),
                gate,
                components_load_bearing=self.components_load_bearing(name),
                now=now,
            )

    # ------------------------------------------------------------------ history

    def _apply_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], window: int
    ) -> None:
        self._dirty = True
        for (name, key), values in items.items():
            entry = self._entry(name)
            kept = entry.history.get(key, []) + [_bounded(v) for v in values]
            entry.history[key] = kept[-window:]

    def check_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], window: int = 10
    ) -> None:
        """Refuse history values that :meth:`extend_history` would refuse (nothing changes)."""
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            msg = f"history 'window' must be an int >= 1 (got {window!r})"
            raise InvalidSpecError(msg)
        for (name, key), values in items.items():
            metric = self._entry(name).metric
            if not isinstance(key, str):
                msg = f"history key of {name!r} must be a str (got {key!r})"  # type: ignore[unreachable]
                raise InvalidObservationError(msg)
            for v in values:
                if is_number(v) and math.isfinite(v):
                    continue
                # What the metric accepts (an infinite latency), the history accepts.
                try:
                    if not is_number(v):
                        raise InvalidObservationError(repr(v))
                    metric.normalize(v, field="observed")
                except InvalidObservationError:
                    msg = (
                        f"history value of ({name!r}, {key!r}) must be a number the metric "
                        f"accepts (got {v!r})"
                    )
                    raise InvalidObservationError(msg) from None

    def extend_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], *, window: int = 10
    ) -> None:
        """Append values per ``(metric, key)``, keeping the last ``window`` of each.

        Stored in the registry document (one locked update); only in memory when the
        registry is read-only.  A version bump starts the history afresh.
        """
        self.check_history(items, window)
        if self.read_only:
            self._apply_history(items, window)
            return
        with self.transaction():
            self._apply_history(items, window)


def _check_accessor(entry: _Entry, metric: Metric) -> bool:
    """Note the accessor's fingerprint; warn when it changed without a version bump.

    Returns True when the entry learnt a fingerprint it did not have (a first
    registration with an accessor, or the first on another interpreter), so the
    registry document is worth rewriting.  A changed fingerprint is not stored over
    the old one: the warning repeats until the version is bumped.
    """
    fingerprint = metric.accessor_fingerprint
    if fingerprint is None:
        return False
    tag, _, digest = fingerprint.partition(":")
    known = entry.accessors.get(tag)
    if known is None:
        entry.accessors[tag] = digest
        return True
    if known != digest:
        msg = (
            f"metric {metric.name!r} version {metric.spec.version}: its accessor's code "
            f"changed since that version was registered (fingerprint {known} != {digest}) "
            f"but 'version' did not: bump 'version' when what it measures changes, or its "
            f"observations change meaning"
        )
        warnings.warn(LddWarning(msg), stacklevel=5)
    return False


def state_disagreement(state: MetricState, acc: Accumulator) -> str | None:
    """How a stored state contradicts the statistics stored with it (None: it does not).

    A state is evaluated on the statistics counted at the time, so it may lag behind
    them (fewer pairs), never lead; evaluated on as many pairs, its figures are the
    statistics' own.
    """
    if state.n > acc.n:
        return f"'n_calibration_samples' {state.n} exceeds the {acc.n} pairs counted"
    if state.n == 0 and state.state != "insufficient_data":
        return f"'state' must be 'insufficient_data' with 0 pairs (got {state.state!r})"
    if state.n < acc.n:
        return None
    counted = acc.stats(acc.keep)
    for key, stored_key in (
        ("mae", "last_mae"),
        ("p95_error", "last_p95_error"),
        ("worst_error", "last_worst_error"),
    ):
        stored, actual = getattr(state, key), getattr(counted, key)
        if not _same(stored, actual):
            return f"{stored_key!r} {stored!r} is not the counted pairs' {actual!r}"
    return None


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TOLERANCE


#: Infinite history values are kept as this bound (JSON holds no infinity): a mean
#: of them stays finite and normalizes as an infinity would, whatever the scale.
HISTORY_BOUND: Final = 1e300


def _bounded(value: float) -> float:
    return max(-HISTORY_BOUND, min(HISTORY_BOUND, float(value)))


def _unbounded(value: float) -> float:
    if abs(value) >= HISTORY_BOUND:
        return math.copysign(math.inf, value)
    return value


def _copy_entry(entry: _Entry) -> _Entry:
    return _Entry(
        entry.metric,
        entry.state,
        entry.acc,
        dict(entry.history),
        entry.persisted,
        accessors=dict(entry.accessors),
        extra=entry.extra,
    )


def _frontier(entries: Mapping[str, _Entry], origin: Cursor) -> Cursor:
    """How far the pair log has been counted (``origin`` if not at all)."""
    best = origin
    for entry in entries.values():
        if best < entry.acc.cursor:
            best = entry.acc.cursor
    return best
